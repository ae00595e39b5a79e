""" "Why is my job pending?": the scheduler's reasons plus checks anyone could do by hand.

Sources, in order: the PodGroup's status conditions written by the scheduler (Unschedulable with
its reason and message), the newest SchedulingRun's reasons when the runtime records them, warning
events, then our own checks against the queue (state, capability, deserved share) and the cluster
(total capacity), and the job's position among pending jobs of its queue. The lines themselves, and the
scheduler's reasons as people read them, are :mod:`volcanoweb.dashboard.reasons`.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from volcanoweb.dashboard import cluster
from volcanoweb.dashboard.reasons import (
    Reason,
    human_message,
    resource_label,
    resource_unit,
    scheduler_reason,
    vector_text,
)
from volcanoweb.dashboard.resources import fmt, parse_map
from volcanoweb.jobs.models import Event, EventType, Job, JobPhase, PodGroup, PodGroupPhase
from volcanoweb.queues.models import Queue, QueueState
from volcanoweb.scheduling.cycles import active_config
from volcanoweb.scheduling.messages import readable

WAITING_PHASES = (JobPhase.PENDING, JobPhase.RESTARTING)


def _stored_reason(podgroup: PodGroup | None) -> Reason | None:
    """The reason the last cycle wrote on the PodGroup; else the newest run's entry for it. The cycle cited is the
    one the job's current wait began in (a deciding cycle, kept for the retention); the condition's transition
    moves with the message's numbers, to cycles not kept."""
    if podgroup is None:
        return None
    status = podgroup.status or {}
    data = status.get("unschedulableReason")
    cycle = ""
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Unschedulable":
            cycle = str(cond.get("transitionID") or "")
    if not isinstance(data, dict):
        from volcanoweb.dashboard.queries import run_reason

        found = run_reason(podgroup.key)
        if found is None:
            return None
        cycle, data = found
    return scheduler_reason(data, _wait_began(podgroup.key) or cycle)


def _wait_began(key: str) -> str:
    """The cycle the PodGroup's open wait interval began in (insights' timeline), or "" (none recorded)."""
    from volcanoweb.insights.models import EntryKind, TimelineEntry

    waits = TimelineEntry.objects.filter(podgroup_key=key, kind=EntryKind.WAIT, ended_at__isnull=True)
    began = waits.order_by("-started_at", "-id").values_list("started_run", flat=True).first()
    return str(began) if began else ""


def _said_for_kubectl(podgroup: PodGroup | None) -> set[str]:
    """The stored reason as its condition and events say it (in Kubernetes quantities): the same line."""
    data = (podgroup.status or {}).get("unschedulableReason") if podgroup is not None else None
    message = data.get("message") if isinstance(data, dict) else None
    return {readable(message)} if isinstance(message, str) and message else set()


def _said(message: str, known: set[str]) -> bool:
    """Whether a line already shown says ``message`` (it, or it with an explanation after it)."""
    return any(k == message or k.startswith(message + " \u2014 ") for k in known)


def _scheduler_conditions(podgroup: PodGroup | None, known: set[str]) -> list[Reason]:
    if podgroup is None:
        return []
    out = []
    for cond in (podgroup.status or {}).get("conditions") or []:
        if cond.get("status", "True") != "True" or cond.get("type") in ("Scheduled",):
            continue
        if cond.get("message") and _said(human_message(str(cond.get("message"))), known):
            continue  # the structured reason above says the same, with its numbers
        out.append(
            Reason(
                "scheduler",
                f"{cond.get('type', 'Condition')}: {cond.get('reason', '')}".strip(": "),
                human_message(str(cond.get("message") or "")),
                "block",
            )
        )
    return out


def _queue_checks(
    job: Job, podgroup: PodGroup | None, queue: Queue | None, figures: tuple[dict[str, float], dict[str, float]]
) -> list[Reason]:
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
                    f"Needs more {resource_label(name)} than the queue may ever use",
                    f"The gang needs {fmt(name, amount)} but {queue.name}'s capability is "
                    f"{fmt(name, capability[name])}.",
                    "block",
                )
            )
    capacity, allocated = figures
    for name, amount in need.items():
        if capacity and amount > capacity.get(name, 0):
            out.append(
                Reason(
                    "cluster",
                    f"Needs more {resource_label(name)} than the whole cluster has",
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
                    f"Not enough free {resource_label(name)} right now",
                    f"The gang needs {fmt(name, amount)}; {fmt(name, free)} is free. "
                    "It starts when running work finishes or is reclaimed.",
                    "warn",
                )
            )
    return out


def _reserved_by_others(queue: Queue, readable: list[int] | None) -> dict[str, dict[str, int]]:
    """Per resource, what each other queue's guarantee reserves, by queue name; the queues the viewer may not see
    (``readable``: the tenants whose objects they read; None: all) are summed as one "queues of other tenants"."""
    visible: set[str] | None = None
    if readable is not None:
        public = Q(tenant__isnull=True, allowed_tenants__isnull=True)
        seen = Q(tenant_id__in=readable) | Q(allowed_tenants__in=readable) | public
        visible = set(Queue.objects.filter(seen).values_list("name", flat=True))
    reserved: dict[str, dict[str, int]] = {}
    for name, guarantee in Queue.objects.exclude(pk=queue.pk).exclude(guarantee={}).values_list("name", "guarantee"):
        shown = name if visible is None or name in visible else "queues of other tenants"
        for resource, amount in parse_map(guarantee).items():
            if amount > 0:
                held = reserved.setdefault(resource, {})
                held[shown] = held.get(shown, 0) + amount
    return reserved


def queue_never_admits(
    queue: Queue, need: dict[str, int], capacity: dict[str, float], readable: list[int] | None = None
) -> list[Reason]:
    """Under proportion, a queue can never get what the other queues' guarantees reserve: its real capability
    is the cluster's total less every other queue's guarantee (Volcano's ``realCapability``). A gang above it
    can never be admitted, though it is below the cluster's total and the queue's own capability. Each line
    carries the comparison (``16 GPU needed > 12 GPU the queue can ever get (...)``) as its first fact; queues
    the viewer may not see (``readable``) are not named."""
    if not capacity or "proportion" not in active_config()[0].plugin_names():
        return []
    capability = parse_map(queue.capability)
    reserved = _reserved_by_others(queue, readable)
    out = []
    for name, amount in need.items():
        total = capacity.get(name, 0)
        others = reserved.get(name, {})
        real = total - sum(others.values())
        if not others or amount > total or amount <= real or (name in capability and amount > capability[name]):
            continue  # nothing reserved, or another line already says it
        held = ", ".join(f"{q} {fmt(name, v)}" for q, v in sorted(others.items()))
        unit = resource_unit(name)
        comparison = (
            f"{fmt(name, amount)} {unit} needed > {fmt(name, max(real, 0))} {unit} the queue can ever get "
            f"({fmt(name, total)} in the cluster \u2212 {fmt(name, sum(others.values()))} that other queues' "
            f"guarantees reserve: {held})"
        )
        out.append(
            Reason(
                "queue",
                f"Needs more {resource_label(name)} than queue {queue.name} can ever get",
                f"The gang needs {fmt(name, amount)}; {queue.name} can get at most {fmt(name, max(real, 0))}: the "
                f"cluster's {fmt(name, total)} less what other queues' guarantees reserve ({held}). It is never "
                "admitted here: ask a platform admin to move the guarantee to this queue, or submit it smaller.",
                "block",
                facts=[("Never admitted here", comparison)],
            )
        )
    return out


def _never_fits(status: Any) -> bool:
    reason = (status or {}).get("unschedulableReason") if isinstance(status, dict) else None
    return isinstance(reason, dict) and reason.get("kind") == "never-fits"


def _position(job: Job, readable: list[int] | None) -> Reason | None:
    """The job's place in its queue, naming the older pending jobs ahead of it (those the viewer may read). A job
    the enqueue gate refused (it can never run) holds no admission room: it is named apart, not as ahead."""
    older = (
        Job.objects.filter(queue_name=job.queue_name, phase=JobPhase.PENDING)
        .filter(Q(created_at__lt=job.created_at) | Q(created_at=job.created_at, pk__lt=job.pk))
        .order_by("created_at", "pk")
    )
    first = list(older.values_list("namespace", "name", "tenant_id", "podgroup__status")[:50])
    never = [(ns, name, tenant) for ns, name, tenant, status in first if _never_fits(status)]
    ahead = (len(first) if len(first) < 50 else older.count()) - len(never)
    aside = ""
    if never:
        shown_never = [f"{ns}/{name}" for ns, name, tenant in never if readable is None or tenant in readable]
        hidden = len(never) - len(shown_never)
        listed = ", ".join(shown_never) + (
            f"{' and ' if shown_never else ''}{hidden} of other tenants" if hidden else ""
        )
        aside = f" Not counted: {listed} (can never run, holds no admission room)."
    if not ahead:
        return Reason(
            "queue",
            f"First in line in queue {job.queue_name}",
            "No older pending job waits in this queue." + aside,
            "info",
        )
    never_keys = {(ns, name) for ns, name, _ in never}
    rows = [(ns, name, tenant) for ns, name, tenant, _ in first if (ns, name) not in never_keys]
    visible_rows = rows if readable is None else [r for r in rows if r[2] in readable]
    if readable is None:
        visible = ahead
    elif len(first) < 50:
        visible = len(visible_rows)
    else:
        visible = older.filter(tenant_id__in=readable).count() - sum(1 for r in never if r[2] in readable)
    names = [f"{ns}/{name}" for ns, name, _ in visible_rows[:5]]
    parts = [", ".join(names) + (f" and {visible - len(names)} more" if visible > len(names) else "")] if names else []
    if ahead > visible:
        parts.append(f"{ahead - visible} job{'s' if ahead - visible != 1 else ''} of other tenants")
    return Reason(
        "queue",
        f"{ahead} older pending job{'s' if ahead != 1 else ''} in queue {job.queue_name}",
        f"Ahead: {'; '.join(parts)}. Within a queue, jobs are ordered by priority, then by creation time." + aside,
        "info",
    )


def _holders(job: Job, queue: Queue | None, short: list[str], readable: list[int] | None) -> Reason | None:
    """Name the running jobs holding the most of the resource the job lacks most: in its queue when jobs of
    the queue hold it, else across the cluster. Jobs the viewer may not read are only counted. Nothing is
    read when nothing is short (one grouped query over the bound pods otherwise)."""
    from volcanoweb.dashboard.aggregates import request_sums

    if not short:
        return None
    pods = cluster.bound_pods().filter(job__isnull=False).exclude(job=job)
    sums = request_sums(pods, "job__queue_name", "job_id")
    resource = short[0]
    everywhere = [(row.requests.get(resource, 0), job_id) for (_q, job_id), row in sums.items()]
    in_queue = [
        (row.requests.get(resource, 0), job_id)
        for (queue_name, job_id), row in sums.items()
        if queue is not None and queue_name == queue.name
    ]
    where, ranked = (f"queue {queue.name}", in_queue) if queue is not None and in_queue else ("the cluster", everywhere)
    ranked = sorted(((amount, job_id) for amount, job_id in ranked if amount), reverse=True)
    if not ranked:
        return None
    jobs = {j.pk: j for j in Job.objects.filter(pk__in=[job_id for _, job_id in ranked[:20]])}
    parts: list[str] = []
    others = 0
    for amount, job_id in ranked:
        holder = jobs.get(job_id)
        if holder is None or (readable is not None and holder.tenant_id not in readable):
            others += 1
            continue
        if len(parts) < 5:
            parts.append(f"{holder.namespace}/{holder.name} ({fmt(resource, amount)} {resource_unit(resource)})")
    if others:
        parts.append(f"{others} job{'s' if others != 1 else ''} of other tenants")
    return Reason("holders", f"{resource_label(resource)} in {where} is held by", ", ".join(parts) + ".", "info")


def _short_resources(
    podgroup: PodGroup | None, reasons: list[Reason], figures: tuple[dict[str, float], dict[str, float]]
) -> list[tuple[str, float]]:
    """The resources the gang lacks now, most lacking first: what the queue has left below its deserved
    share or capability when the scheduler blames the queue, else what the cluster has free."""
    need = parse_map((podgroup.min_resources if podgroup else None) or {})
    if not need or any(r.severity == "block" and r.source == "cluster" for r in reasons):
        return []
    capacity, allocated = figures
    out = []
    for name, amount in need.items():
        if name == "pods":
            continue
        free = capacity.get(name, 0) - allocated.get(name, 0)
        queue_blamed = any(r.kind in ("queue-overused", "capability-exceeded", "enqueue-rejected") for r in reasons)
        if amount > free or queue_blamed:
            out.append((name, amount - free))
    return sorted(out, key=lambda kv: -kv[1])


def never_fitting_tasks(job: Job, inventory: list[Any]) -> list[tuple[str, str]]:
    """(task name, what it asks that no node has) for each task of ``job`` whose pods no single schedulable node
    can ever hold (an 8-GPU pod on 4-GPU nodes), however much the cluster has in total."""
    from volcanoweb.manifests.pods import pod_requests

    nodes = [n for n in inventory if n.ready and not n.unschedulable]
    if not nodes:
        return []
    out = []
    for task in (job.spec or {}).get("tasks") or []:
        need = {k: v for k, v in pod_requests((task.get("template") or {}).get("spec") or {}).items() if k != "pods"}
        if not need or any(all(n.allocatable.get(k, 0) >= v for k, v in need.items()) for n in nodes):
            continue
        short = []
        for k, v in need.items():
            largest = max(n.allocatable.get(k, 0) for n in nodes)
            if largest < v:
                short.append(f"{fmt(k, v)} {resource_unit(k)} (the largest node has {fmt(k, largest)})")
        detail = (
            "asks " + "; ".join(short)
            if short
            else "no node has all of its requests at once, though each resource exists on some node"
        )
        out.append((str(task.get("name", "?")), detail))
    return out


def _node_fit(job: Job, inventory: list[Any]) -> list[Reason]:
    """Say when no single schedulable node can ever run a pod of a task: the scheduler places whole pods on one
    node."""
    return [
        Reason(
            "cluster",
            f"No single node can ever run a pod of task {name}",
            f"Each pod {detail}. A pod runs on one node, so the job cannot start until such a node exists "
            "or the pod asks less.",
            "block",
        )
        for name, detail in never_fitting_tasks(job, inventory)
    ]


def room_blockers(
    job: Job | None, queue_name: str, cluster_wide: bool, inventory: list[Any], readable: list[int] | None
) -> list[Reason]:
    """The admitted (Inqueue) jobs that hold admission room and can never run: no pod of theirs is on a node and
    a task of theirs fits no node. Those of ``queue_name``, or of every queue when ``cluster_wide`` (overcommit
    refuses on the cluster's sum). Each is *the* blocker of a job the enqueue action refused (``job``, left out;
    None for a job not stored yet, the Submit page's dry run)."""
    groups = (
        PodGroup.objects.filter(phase=PodGroupPhase.INQUEUE, job__isnull=False)
        .select_related("job")
        .order_by("created_at", "pk")
    )
    if job is not None and job.pk is not None:
        groups = groups.exclude(job=job)
    if not cluster_wide:
        groups = groups.filter(queue_name=queue_name)
    placed = set(
        cluster.bound_pods().filter(podgroup__in=[g.pk for g in groups[:50]]).values_list("podgroup_id", flat=True)
    )
    out = []
    for group in groups[:50]:
        holder = group.job
        if holder is None or group.pk in placed:
            continue
        tasks = never_fitting_tasks(holder, inventory)
        if not tasks:
            continue
        holds = vector_text(parse_map(group.min_resources or {}))
        if readable is not None and holder.tenant_id not in readable:
            out.append(
                Reason(
                    "blocker",
                    "Blocked by a job of another tenant that holds admission room and can never run",
                    f"It was admitted and reserves {holds} until it runs or is deleted; a platform admin can see it.",
                    "block",
                )
            )
            continue
        name, detail = tasks[0]
        out.append(
            Reason(
                "blocker",
                f"Blocked by {holder.namespace}/{holder.name}: it holds {holds} of admission room and can never run",
                f"{holder.namespace}/{holder.name} was admitted (Inqueue) and reserves {holds} of the "
                f"{'cluster' if cluster_wide else f'queue {queue_name}'}'s admission room until it runs or is "
                f"deleted, but each pod of its task {name} {detail}. Fix its requests or delete it: this job is "
                "then admitted.",
                "block",
            )
        )
    return out


def why_pending(job: Job, readable: list[int] | None = None) -> list[Reason]:
    """Return the reasons a job waits (empty when it is not waiting). ``readable``: the tenants whose jobs
    the viewer may see (None: all), for naming the jobs ahead and the jobs holding the resources."""
    podgroup = getattr(job, "podgroup", None) if hasattr(job, "podgroup") else None
    waiting = job.phase in WAITING_PHASES or (
        podgroup is not None
        and podgroup.phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE)
        and job.phase == JobPhase.PENDING
    )
    if not waiting:
        return []
    stored = _stored_reason(podgroup)
    reasons = [stored] if stored is not None else []
    known = {r.detail for r in reasons if r.detail} | _said_for_kubectl(podgroup)
    reasons += _scheduler_conditions(podgroup, known)
    known |= {r.detail for r in reasons if r.detail}
    about = Q(involved_kind="Job", involved_name=job.name)  # kind first: the events index is used
    if podgroup is not None:
        about |= Q(involved_kind="PodGroup", involved_name=podgroup.name)
    warnings = Event.objects.filter(about, involved_namespace=job.namespace, type=EventType.WARNING)[:5]
    for e in warnings:
        message = human_message(e.message)
        if not _said(message, known):  # the scheduler's Unschedulable event repeats its reason
            known.add(message)
            reasons.append(Reason("event", e.reason, message, "warn"))
    queue = Queue.objects.filter(name=job.queue_name).first()
    inventory = cluster.inventory()
    figures = (cluster.capacity(inventory), cluster.allocated_total())
    checks = _queue_checks(job, podgroup, queue, figures)
    if stored is not None and stored.kind == "never-fits":
        checks = [r for r in checks if r.severity != "warn"]  # free resources now do not matter: it can never run
    reasons += checks
    reasons += _node_fit(job, inventory)
    if stored is not None and stored.kind == "enqueue-rejected":
        # the blocker first: a job that holds admission room and can never run, not this job's size
        reasons[:0] = room_blockers(job, job.queue_name, stored.plugin == "overcommit", inventory, readable)
        if queue is not None and podgroup is not None:
            need = parse_map(podgroup.min_resources or {})
            reasons += queue_never_admits(queue, need, figures[0], readable)
    short = [name for name, _ in _short_resources(podgroup, reasons, figures)]
    holders = _holders(job, queue, short, readable)
    if holders is not None:
        reasons.append(holders)
    position = _position(job, readable)
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
