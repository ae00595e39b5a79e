""" "Why is my job pending?": the scheduler's reasons plus checks anyone could do by hand.

Sources, in order: the PodGroup's status conditions written by the scheduler (Unschedulable with
its reason and message), the newest SchedulingRun's reasons when the runtime records them, warning
events, then our own checks against the queue (state, capability, deserved share) and the cluster
(total capacity), and the job's position among pending jobs of its queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from volcanoweb.dashboard import cluster
from volcanoweb.dashboard.resources import MAIN_RESOURCES, fmt, parse_map
from volcanoweb.jobs.models import Event, EventType, Job, JobPhase, PodGroup, PodGroupPhase
from volcanoweb.queues.models import Queue, QueueState

WAITING_PHASES = (JobPhase.PENDING, JobPhase.RESTARTING)


@dataclass
class Reason:
    """One explanation line: where it comes from, a short title and details."""

    source: str
    title: str
    detail: str = ""
    severity: str = "warn"  # info | warn | block


def _label(name: str) -> str:
    return next((label for key, label, _ in MAIN_RESOURCES if key == name), name)


def _scheduler_conditions(podgroup: PodGroup | None) -> list[Reason]:
    if podgroup is None:
        return []
    out = []
    for cond in (podgroup.status or {}).get("conditions") or []:
        if cond.get("status", "True") != "True" or cond.get("type") in ("Scheduled",):
            continue
        out.append(
            Reason(
                "scheduler",
                f"{cond.get('type', 'Condition')}: {cond.get('reason', '')}".strip(": "),
                cond.get("message", ""),
                "block",
            )
        )
    return out


def _run_reasons(job: Job) -> list[Reason]:
    from volcanoweb.dashboard.queries import last_scheduling_run

    run = last_scheduling_run()
    reasons = getattr(run, "reasons", None) if run is not None else None
    if not isinstance(reasons, dict | list):
        return []
    items = (
        reasons.get(job.key) or reasons.get(str(job.uid)) or []
        if isinstance(reasons, dict)
        else [r for r in reasons if isinstance(r, dict) and r.get("job") in (job.key, str(job.uid))]
    )
    if isinstance(items, dict | str):
        items = [items]
    out = []
    for item in items:
        if isinstance(item, dict):
            out.append(
                Reason(
                    "last cycle",
                    str(item.get("kind") or item.get("reason") or "reason"),
                    str(item.get("message", "")),
                    "block",
                )
            )
        else:
            out.append(Reason("last cycle", str(item), "", "block"))
    return out


def _queue_checks(job: Job, podgroup: PodGroup | None, queue: Queue | None) -> list[Reason]:
    if queue is None:
        return [
            Reason(
                "queue",
                f"Queue {job.queue_name} does not exist",
                "The job can never be scheduled until the queue is created.",
                "block",
            )
        ]
    out = []
    if queue.state != QueueState.OPEN:
        out.append(
            Reason(
                "queue",
                f"Queue {queue.name} is {queue.state}",
                "Closed queues admit no new jobs; a queue admin can open it.",
                "block",
            )
        )
    need = parse_map((podgroup.min_resources if podgroup else None) or {})
    capability = parse_map(queue.capability)
    for name, amount in need.items():
        if name in capability and amount > capability[name]:
            out.append(
                Reason(
                    "queue",
                    f"Needs more {_label(name)} than the queue may ever use",
                    f"The gang needs {fmt(name, amount)} but {queue.name}'s capability is "
                    f"{fmt(name, capability[name])}.",
                    "block",
                )
            )
    nodes = cluster.list_nodes()
    capacity, allocated = cluster.totals(nodes)
    for name, amount in need.items():
        if capacity and amount > capacity.get(name, 0):
            out.append(
                Reason(
                    "cluster",
                    f"Needs more {_label(name)} than the whole cluster has",
                    f"The gang needs {fmt(name, amount)}; schedulable nodes offer "
                    f"{fmt(name, capacity.get(name, 0))} in total.",
                    "block",
                )
            )
        elif capacity and amount > capacity.get(name, 0) - allocated.get(name, 0):
            free = max(capacity.get(name, 0) - allocated.get(name, 0), 0)
            out.append(
                Reason(
                    "cluster",
                    f"Not enough free {_label(name)} right now",
                    f"The gang needs {fmt(name, amount)}; {fmt(name, free)} is free. "
                    "It starts when running work finishes or is reclaimed.",
                    "warn",
                )
            )
    return out


def _position(job: Job) -> Reason | None:
    ahead = (
        Job.objects.filter(queue_name=job.queue_name, phase=JobPhase.PENDING)
        .filter(Q(created_at__lt=job.created_at) | Q(created_at=job.created_at, pk__lt=job.pk))
        .count()
    )
    if not ahead:
        return Reason(
            "queue", f"First in line in queue {job.queue_name}", "No older pending job waits in this queue.", "info"
        )
    return Reason(
        "queue",
        f"{ahead} older pending job{'s' if ahead != 1 else ''} in queue {job.queue_name}",
        "Within a queue, jobs are ordered by priority, then by creation time.",
        "info",
    )


def why_pending(job: Job) -> list[Reason]:
    """Return the reasons a job waits (empty when it is not waiting)."""
    podgroup = getattr(job, "podgroup", None) if hasattr(job, "podgroup") else None
    waiting = job.phase in WAITING_PHASES or (
        podgroup is not None
        and podgroup.phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE)
        and job.phase == JobPhase.PENDING
    )
    if not waiting:
        return []
    reasons = _scheduler_conditions(podgroup) + _run_reasons(job)
    names = [job.name] + ([podgroup.name] if podgroup else [])
    warnings = Event.objects.filter(involved_namespace=job.namespace, involved_name__in=names, type=EventType.WARNING)[
        :5
    ]
    reasons += [Reason("event", e.reason, e.message, "warn") for e in warnings]
    queue = Queue.objects.filter(name=job.queue_name).first()
    reasons += _queue_checks(job, podgroup, queue)
    position = _position(job)
    if position is not None:
        reasons.append(position)
    if not any(r.severity in ("block", "warn") for r in reasons):
        reasons.insert(
            0,
            Reason(
                "scheduler",
                "Waiting for the next scheduling cycle",
                "No blocking reason is known; the scheduler has not placed the gang yet.",
                "info",
            ),
        )
    return reasons


def podgroup_of(job: Job) -> Any:
    """Return the job's PodGroup or None."""
    return PodGroup.objects.filter(job=job).first()


def forecast_job(spec: dict[str, Any]) -> tuple[str, str, list[Reason]]:
    """For a validated Job spec, say what would happen now: (level, headline, reasons).

    level is "ok" (fits now), "wait" (admitted, would wait) or "never" (cannot run as things are).
    """
    from volcanoweb.manifests.jobs import task_min_resources

    queue_name = spec.get("queue") or "default"
    need = {k: int(v) for k, v in task_min_resources(spec).items()}
    queue = Queue.objects.filter(name=queue_name).first()
    reasons: list[Reason] = []
    if queue is None:
        reasons.append(Reason("queue", f"Queue {queue_name} does not exist", "", "block"))
    else:
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
                        f"Needs {fmt(name, amount)} {_label(name)}, queue capability is {fmt(name, capability[name])}",
                        "",
                        "block",
                    )
                )
    capacity, allocated = cluster.totals(cluster.list_nodes())
    for name, amount in need.items():
        if name in ("pods",):
            continue
        if capacity and amount > capacity.get(name, 0):
            reasons.append(
                Reason(
                    "cluster",
                    f"Needs {fmt(name, amount)} {_label(name)}; the cluster has {fmt(name, capacity.get(name, 0))}",
                    "",
                    "block",
                )
            )
        elif capacity and amount > capacity.get(name, 0) - allocated.get(name, 0):
            free = max(capacity.get(name, 0) - allocated.get(name, 0), 0)
            reasons.append(
                Reason(
                    "cluster",
                    f"Only {fmt(name, free)} {_label(name)} free of the {fmt(name, amount)} the gang needs",
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
