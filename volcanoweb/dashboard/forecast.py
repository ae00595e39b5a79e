"""The Submit page's dry run: what would happen to a job spec if it were stored now.

:func:`forecast_job` checks the spec by hand against its queue (state, capability) and the cluster (total
and free capacity); :func:`simulated_verdict` reads the verdict of one simulated cycle of the core on the
live snapshot; when that cycle's enqueue refused the gang, :func:`enqueue_refusal` says what stands in the way as
the job's page would (a queue that can never get that much, an admitted job that can never run holding the room).
All answer in the why-pending page's :class:`~volcanoweb.dashboard.reasons.Reason` lines.
"""

from __future__ import annotations

from typing import Any

from volcanoweb.dashboard import cluster, diagnosis
from volcanoweb.dashboard.reasons import Reason, human_message, resource_label, scheduler_reason
from volcanoweb.dashboard.resources import fmt, parse_map
from volcanoweb.jobs.models import Job
from volcanoweb.queues.models import Queue, QueueState


def _queue_forecast(queue_name: str, need: dict[str, int]) -> list[Reason]:
    """What the spec's queue says: it is missing, closed, or its capability is below the gang's minimum."""
    queue = Queue.objects.filter(name=queue_name).first()
    if queue is None:
        return [Reason("queue", f"Queue {queue_name} does not exist", "", "block")]
    reasons: list[Reason] = []
    if queue.state != QueueState.OPEN:
        reasons.append(
            Reason(
                "queue",
                f"Queue {queue.name} is {queue.state}",
                "The job would be refused or never enqueued until it opens.",
                "block",
            )
        )
    capability = parse_map(queue.capability)
    for name, amount in need.items():
        if name in capability and amount > capability[name]:
            reasons.append(
                Reason(
                    "queue",
                    f"Needs {fmt(name, amount)} {resource_label(name)}, "
                    f"queue capability is {fmt(name, capability[name])}",
                    "",
                    "block",
                )
            )
    return reasons


def _cluster_forecast(need: dict[str, int]) -> list[Reason]:
    """What the cluster says: the gang's minimum is above its total capacity, or above what is free now."""
    reasons: list[Reason] = []
    capacity, allocated = cluster.capacity_and_allocated()
    for name, amount in need.items():
        if name in ("pods",):
            continue
        if capacity and amount > capacity.get(name, 0):
            reasons.append(
                Reason(
                    "cluster",
                    f"Needs {fmt(name, amount)} {resource_label(name)}; "
                    f"the cluster has {fmt(name, capacity.get(name, 0))}",
                    "",
                    "block",
                )
            )
        elif capacity and amount > capacity.get(name, 0) - allocated.get(name, 0):
            free = max(capacity.get(name, 0) - allocated.get(name, 0), 0)
            reasons.append(
                Reason(
                    "cluster",
                    f"Only {fmt(name, free)} {resource_label(name)} free of the {fmt(name, amount)} the gang needs",
                    "It would wait in the queue until resources free up.",
                    "warn",
                )
            )
    if not capacity:
        reasons.append(
            Reason(
                "cluster",
                "No node inventory yet",
                "Cannot tell whether the gang fits until the cluster reports its nodes.",
                "warn",
            )
        )
    return reasons


def forecast_job(spec: dict[str, Any]) -> tuple[str, str, list[Reason]]:
    """For a validated Job spec, say what would happen now: (level, headline, reasons).

    level is "ok" (fits now), "wait" (admitted, would wait) or "never" (cannot run as things are).
    """
    from volcanoweb.manifests.jobs import task_min_resources

    queue_name = spec.get("queue") or "default"
    need = {k: int(v) for k, v in task_min_resources(spec).items()}
    reasons = _queue_forecast(queue_name, need) + _cluster_forecast(need)
    units = {"cpu": "CPU", "memory": "GiB memory", "nvidia.com/gpu": "GPU"}
    summary = ", ".join(f"{fmt(n, a)} {units.get(n, n)}" for n, a in need.items() if n != "pods") or "no resources"
    reasons.insert(
        0,
        Reason(
            "gang",
            f"Gang of {spec.get('minAvailable', 0)} pod(s) in queue {queue_name}",
            f"Minimum to start: {summary}.",
            "info",
        ),
    )
    if any(r.severity == "block" for r in reasons):
        return "never", "Would be stored but cannot start as things are", reasons
    if any(r.severity == "warn" for r in reasons):
        return "wait", "Would be admitted and wait for resources", reasons
    return "ok", "Would be admitted and fits the cluster now", reasons


def simulated_verdict(job: dict[str, Any], forecast_level: str) -> tuple[str, str, Reason]:
    """The Submit dry run's verdict from one simulated cycle (``api.simulate``) of the core on the live snapshot.

    Returns (level, headline, the scheduler's reason line). The cycle runs enqueue and allocate with the
    active configuration, so a queue at its capability or a gang that does not fit says so here, as it
    would in the scheduler.
    """
    pods, placed = int(job["pods"]), int(job["placed"])
    reason = job.get("reason") or {}
    why = str(reason.get("message") or "")
    fit = reason.get("fitErrors") or {}
    detail = why
    if fit:
        nodes_text = "; ".join(f"{n} node(s): {msg}" for msg, n in sorted(fit.items()))
        detail += (" " if detail else "") + "Nodes: " + nodes_text
    if job["scheduled"]:
        nodes = sorted({p["node"] for p in job["placements"] if p["how"] == "bind"})
        shown = ", ".join(nodes[:6]) + (f" and {len(nodes) - 6} more" if len(nodes) > 6 else "")
        line = Reason("scheduler", f"Placed {placed} of {pods} pods in the simulated cycle", f"On {shown}.", "info")
        return "ok", f"Would be admitted and placed now: {placed} of {pods} pods", line
    if job["admitted"]:
        line = Reason("scheduler", f"Admitted; {placed} of {pods} pods placed in the simulated cycle", detail, "warn")
        return "wait", f"Would be admitted but wait: {why or 'the gang does not fit yet'}", line
    if reason.get("kind") == "never-fits":
        line = Reason("scheduler", "Refused by the enqueue gate in the simulated cycle", human_message(why), "block")
        return "never", f"Can never run: {human_message(why.split('can never run: ', 1)[-1])}", line
    level = "never" if forecast_level == "never" else "wait"
    said = scheduler_reason({**reason, "message": why})  # the comparison that decided, from the cycle's numbers
    text = said.detail + detail[len(why) :]  # and the nodes' fit errors, if any
    line = Reason(
        "scheduler", "Not admitted by the enqueue action in the simulated cycle", text, "block", facts=said.facts
    )
    return level, f"Would be stored but stay Pending: {why or 'the queue cannot admit it now'}", line


def enqueue_refusal(
    spec: dict[str, Any], verdict: dict[str, Any], existing: Job | None, readable: list[int] | None
) -> tuple[str, str, list[Reason]] | None:
    """When the simulated cycle's enqueue refused the gang, what stands in the way, as the job's page would say it:
    its queue can never get that much under proportion (the other queues' guarantees reserve it): "never"; or an
    admitted job that can never run holds the admission room: "wait", naming it. None otherwise. ``existing``: the
    stored job this manifest would update, if any; ``readable``: the tenants whose jobs the caller may see."""
    from volcanoweb.manifests.jobs import task_min_resources

    reason = verdict.get("reason") or {}
    if verdict["admitted"] or reason.get("kind") != "enqueue-rejected":
        return None
    queue_name = str(spec.get("queue") or "default")
    queue = Queue.objects.filter(name=queue_name).first()
    inventory = cluster.inventory()
    if queue is not None:
        need = {k: int(v) for k, v in task_min_resources(spec).items() if k != "pods"}
        never = diagnosis.queue_never_admits(queue, need, cluster.capacity(inventory), readable)
        if never:
            return "never", f"Can never run in queue {queue_name}: {never[0].facts[0][1]}", never
    cluster_wide = reason.get("plugin") == "overcommit"
    blockers = diagnosis.room_blockers(existing, queue_name, cluster_wide, inventory, readable)
    if blockers:
        title = blockers[0].title
        return "wait", f"Would wait: {title[:1].lower()}{title[1:]}", blockers
    return None
