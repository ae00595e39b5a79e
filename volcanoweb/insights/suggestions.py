"""What would get a pending job running: candidate changes, each verified by a simulated cycle.

For a pending job this takes the live snapshot (``scheduling.snapshots.build_snapshot``) and the active
configuration, changes one thing in a copy of the snapshot and runs one cycle of the core
(``scheduler.run_cycle``, the what-if simulator of ``POST /api/v1/simulate``). A suggestion is shown only
when that simulated cycle binds at least the job's gang (``minMember`` pods); each says what was changed
and how the amount was found. Nothing is written.

Candidates, smallest change first within each kind:

* **the blocker**: an admitted (Inqueue) job with no pod on a node that can never run (the enqueuegate
  plugin's check: no node, even empty, holds its pods) holds admission room; fix or delete it, verified by a
  cycle without it. When one is found the job's own size is not offered for change: it is not the problem;
* **queue capability / guarantee**: raise the job's queue's ``capability`` (or ``guarantee``) to its
  allocation plus the job's gang request, on the dimensions that fall short;
* **minAvailable / replicas**: the largest lower ``minAvailable`` (keeping the replicas), then the largest
  lower replica count (``minAvailable`` lowered with it), found by bisection and verified;
* **another queue**: each open leaf queue the caller may submit to where the job would start now;
* **running jobs finishing**: the fewest running jobs (soonest to finish first) whose completion frees
  enough, with an estimate of when: from the pods' ``sim.volcanoweb.io/duration`` on the sim cluster,
  else from the median run time of the queue's finished pods; an estimate, labelled as one.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from scheduler import CycleResult, Resource, SchedulerConfig, Snapshot, parse_config, run_cycle
from scheduler.decode import GROUP_ANNOTATION, ManifestError, snapshot_from_manifests
from scheduler.model import JobPhase, Queue, TaskStatus
from scheduler.quantity import format_quantity, parse_duration
from scheduler.result import ReasonKind
from volcanoweb.api.simulate import job_documents
from volcanoweb.clusters.backends.base import SIM_DURATION_ANNOTATION
from volcanoweb.insights.services import OTHER_TENANT, readable_namespaces
from volcanoweb.jobs.models import Job, Pod, PodGroup, PodGroupPhase
from volcanoweb.queues.models import Queue as QueueRow
from volcanoweb.scheduling.cycles import active_config
from volcanoweb.scheduling.snapshots import build_snapshot
from volcanoweb.tenancy.access import Access, visible_queue_filter

PLACED = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING)
MAX_QUEUES = 12
MAX_FINISHING = 24
#: The enqueue action with the enqueuegate plugin alone: which admitted jobs could never start.
GATE_ONLY = parse_config('actions: "enqueue"\ntiers:\n- plugins: [{name: enqueuegate}]\n')
MAX_BLOCKERS = 3
HOW_CYCLE = "verified by one simulated scheduling cycle on the current cluster snapshot with the active configuration"


def _starts(result: CycleResult, snapshot: Snapshot, key: str, min_member: int) -> bool:
    tasks = [t for t in snapshot.tasks if t.job == key]
    placed = sum(1 for t in tasks if t.status in PLACED or t.key in result.binds)
    return placed >= max(min_member, 1) and any(t.key in result.binds for t in tasks)


def with_job_pods(snapshot: Snapshot, job: Job, group: PodGroup) -> tuple[Snapshot, bool]:
    """Return the snapshot with the pods the job controller creates once the gang is admitted (if it has none).

    Volcano creates a job's pods only after its PodGroup is Inqueue, so a gang still Pending has no pods
    to place: they are built from the job's tasks as ``POST /api/v1/simulate`` does (newest pods).
    """
    key = f"{group.namespace}/{group.name}"
    if any(t.job == key for t in snapshot.tasks):
        return snapshot, False
    manifest = {
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": job.labels,
            "annotations": job.annotations,
        },
        "spec": job.spec,
    }
    podgroup_doc, pods = job_documents(manifest)
    podgroup_doc["metadata"]["name"] = group.name
    for pod in pods:
        pod["metadata"]["annotations"][GROUP_ANNOTATION] = group.name
    try:
        extra = snapshot_from_manifests(list(enumerate([podgroup_doc, *pods], 1)))
    except ManifestError:
        return snapshot, False
    newest = max((t.creation for t in snapshot.tasks), default=0) + 1
    tasks = [replace(t, creation=newest + t.creation) for t in extra.tasks if t.job == key]
    return replace(snapshot, tasks=(*snapshot.tasks, *tasks)), bool(tasks)


class Simulator:
    """One job's what-if trials against one snapshot and configuration (counts the cycles run)."""

    def __init__(self, snapshot: Snapshot, config: SchedulerConfig, key: str) -> None:
        self.snapshot, self.config, self.key = snapshot, config, key
        self.cycles = 0
        self.job = next(j for j in snapshot.jobs if j.key == key)

    def run(self, snapshot: Snapshot, min_member: int | None = None) -> bool:
        self.cycles += 1
        result = run_cycle(snapshot, self.config)
        return _starts(result, snapshot, self.key, min_member if min_member is not None else self.job.min_member)

    def with_job(self, **changes: Any) -> Snapshot:
        return replace(
            self.snapshot, jobs=tuple(replace(j, **changes) if j.key == self.key else j for j in self.snapshot.jobs)
        )

    def with_queue(self, name: str, **changes: Any) -> Snapshot:
        return replace(
            self.snapshot, queues=tuple(replace(q, **changes) if q.name == name else q for q in self.snapshot.queues)
        )


def _gang_request(sim: Simulator) -> Resource:
    """The resources the job needs to start: minResources, else its first minMember pending pods' requests."""
    if sim.job.min_resources is not None:
        return sim.job.min_resources
    pending = sorted(
        (t for t in sim.snapshot.tasks if t.job == sim.key and t.status == TaskStatus.PENDING), key=lambda t: t.creation
    )
    total = Resource()
    for t in pending[: max(sim.job.min_member, 1)]:
        total = total + t.requests
    return total


def _allocated(snapshot: Snapshot, queue: str) -> Resource:
    jobs = {j.key for j in snapshot.jobs if j.queue == queue}
    total = Resource()
    for t in snapshot.tasks:
        if t.job in jobs and t.status in PLACED:
            total = total + t.requests
    return total


def _raise_to(current: Resource | None, needed: Resource) -> tuple[Resource, dict[str, tuple[int, int]]] | None:
    """Return ``current`` raised to ``needed`` where it falls short, and the changed dimensions."""
    base = current.to_dict() if current is not None else {}
    changes: dict[str, tuple[int, int]] = {}
    out = dict(base)
    for k, v in needed.to_dict().items():
        if k == "pods":
            continue
        if base.get(k, 0) < v:
            changes[k] = (base.get(k, 0), v)
            out[k] = v
    if not changes:
        return None
    return Resource.from_dict(out), changes


def _queue_quota(sim: Simulator, field: str, queue: Queue) -> dict[str, Any] | None:
    need = _gang_request(sim)
    target = _allocated(sim.snapshot, queue.name) + need
    current = getattr(queue, field)
    if field == "capability" and current is None:
        return None  # unlimited already
    raised = _raise_to(current, target)
    if raised is None:
        return None
    value, changes = raised
    if not sim.run(sim.with_queue(queue.name, **{field: value})):
        return None
    label = "capability" if field == "capability" else "guarantee"
    return {
        "kind": f"queue-{label}",
        "title": f"Raise queue {queue.name}'s {label}",
        "queue": queue.name,
        "change": {
            k: {"from": format_quantity(k, a) if a else "unset", "to": format_quantity(k, b)}
            for k, (a, b) in sorted(changes.items())
        },
        "how": f"{label} set to the queue's current allocation plus this job's gang request "
        f"(minResources, else its first minMember pods' requests); {HOW_CYCLE}",
    }


def _largest(low: int, high: int, works: Callable[[int], bool]) -> int | None:
    """Return the largest n in [low, high] for which ``works(n)`` (bisection, assuming monotony; verified)."""
    best = None
    while low <= high:
        mid = (low + high) // 2
        if works(mid):
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def _scaled(resources: Resource | None, num: int, den: int) -> Resource | None:
    if resources is None:
        return None
    return Resource.from_dict({k: math.ceil(v * num / den) for k, v in resources.to_dict().items()})


def _gang_changes(sim: Simulator) -> list[dict[str, Any]]:
    job = sim.job
    out: list[dict[str, Any]] = []
    if job.min_member > 1:

        def lower_min(m: int) -> bool:
            snap = sim.with_job(
                min_member=m, min_task_member={}, min_resources=_scaled(job.min_resources, m, job.min_member)
            )
            return sim.run(snap, m)

        best = _largest(1, job.min_member - 1, lower_min)
        if best is not None:
            out.append(
                {
                    "kind": "min-available",
                    "title": f"Lower minAvailable from {job.min_member} to {best}",
                    "change": {"minAvailable": {"from": job.min_member, "to": best}},
                    "how": "the largest minAvailable below the current one (bisection) for which the gang starts, "
                    f"per-task minimums and minResources scaled to it; {HOW_CYCLE}",
                }
            )
    tasks = sorted(
        (t for t in sim.snapshot.tasks if t.job == sim.key), key=lambda t: (t.status not in PLACED, -t.creation)
    )
    replicas = len(tasks)
    if replicas > 1:

        def fewer(n: int) -> bool:
            keep = {t.key for t in tasks[:n]}
            kept = tuple(t for t in sim.snapshot.tasks if t.job != sim.key or t.key in keep)
            m = min(job.min_member, n)
            snap = replace(
                sim.with_job(
                    min_member=m, min_task_member={}, min_resources=_scaled(job.min_resources, m, job.min_member)
                ),
                tasks=kept,
            )
            return sim.run(snap, m)

        best = _largest(1, replicas - 1, fewer)
        if best is not None:
            out.append(
                {
                    "kind": "replicas",
                    "title": f"Run {best} replicas instead of {replicas}",
                    "change": {
                        "replicas": {"from": replicas, "to": best},
                        "minAvailable": {"to": min(job.min_member, best)},
                    },
                    "how": "the largest replica count below the current one (bisection; the newest pending pods "
                    f"dropped, minAvailable capped at the replicas) for which the gang starts; {HOW_CYCLE}",
                }
            )
    return out


def _resource_text(r: Resource | None) -> str:
    values = r.to_dict() if r is not None else {}
    return (
        ", ".join(f"{format_quantity(k, v)} {k}" for k, v in sorted(values.items()) if v and k != "pods") or "nothing"
    )


def _blockers(sim: Simulator, visible: set[str] | None) -> list[dict[str, Any]]:
    """Admitted jobs that hold admission room and can never run, each verified: without it the job starts."""
    placed = {t.job for t in sim.snapshot.tasks if t.status in PLACED}
    held = [j for j in sim.snapshot.jobs if j.phase == JobPhase.INQUEUE and j.key != sim.key and j.key not in placed]
    if not held:
        return []
    keys = {j.key for j in held}
    probe = replace(
        sim.snapshot, jobs=tuple(replace(j, phase=JobPhase.PENDING) if j.key in keys else j for j in sim.snapshot.jobs)
    )
    verdicts = run_cycle(probe, GATE_ONLY).unschedulable
    never = [j for j in held if (r := verdicts.get(j.key)) is not None and r.kind == ReasonKind.NEVER_FITS]
    groups = {
        f"{g.namespace}/{g.name}": g
        for g in PodGroup.objects.filter(phase=PodGroupPhase.INQUEUE).select_related("job")
        if f"{g.namespace}/{g.name}" in {j.key for j in never}
    }
    out: list[dict[str, Any]] = []
    for job in never[:MAX_BLOCKERS]:
        kept = replace(
            sim.snapshot,
            jobs=tuple(j for j in sim.snapshot.jobs if j.key != job.key),
            tasks=tuple(t for t in sim.snapshot.tasks if t.job != job.key),
        )
        if not sim.run(kept):
            continue
        group = groups.get(job.key)
        name = _job_name(group) if group is not None else job.key
        if visible is not None and job.namespace not in visible:
            name = OTHER_TENANT
        out.append(
            {
                "kind": "remove-blocker",
                "title": f"Fix or delete {name}: it was admitted, holds {_resource_text(job.min_resources)} of "
                "the admission room and can never run",
                "jobs": [name],
                "why": human_reason(verdicts[job.key].message),
                "how": "an admitted job with no pod on a node that no node, even empty, can hold (the enqueuegate "
                f"plugin's check); {HOW_CYCLE} without it",
            }
        )
    return out


def human_reason(message: str) -> str:
    """The core's message in the units people read."""
    from volcanoweb.dashboard.reasons import human_message

    return human_message(message)


def _other_queues(sim: Simulator, access: Access, tenant_id: int | None) -> list[dict[str, Any]]:
    usable = (
        Q(tenant_id=tenant_id) | Q(allowed_tenants=tenant_id) | Q(tenant__isnull=True, allowed_tenants__isnull=True)
    )
    rows = (
        QueueRow.objects.filter(visible_queue_filter(access), usable, state="Open", children__isnull=True)
        .exclude(name=sim.job.queue)
        .exclude(name="root")
        .distinct()
        .order_by("name")
    )
    names = {q.name for q in sim.snapshot.queues}
    out = []
    for row in rows[:MAX_QUEUES]:
        if row.name not in names:
            continue
        if sim.run(sim.with_job(queue=row.name)):
            out.append(
                {
                    "kind": "other-queue",
                    "title": f"Submit to queue {row.name}",
                    "queue": row.name,
                    "change": {"queue": {"from": sim.job.queue, "to": row.name}},
                    "how": f"the job moved to {row.name}, a queue its tenant may use; {HOW_CYCLE}",
                }
            )
    return out


def _remaining(pods: list[Pod], now: datetime, fallback: float | None) -> tuple[float | None, str]:
    """Return the estimated seconds until all of a job's running pods end, and how it was estimated."""
    sim_backend = settings.CLUSTER_BACKEND == "sim"
    ends: list[float] = []
    how = "sim"
    for pod in pods:
        elapsed = (now - pod.started_at).total_seconds() if pod.started_at else 0.0
        annotation = (pod.annotations or {}).get(SIM_DURATION_ANNOTATION)
        if sim_backend:
            try:
                duration = (
                    parse_duration(annotation, plain_seconds=True)
                    if annotation is not None
                    else float(settings.SIM_DEFAULT_DURATION)
                )
            except ValueError:
                duration = float(settings.SIM_DEFAULT_DURATION)
            ends.append(max(0.0, duration / float(settings.SIM_CLOCK_SPEED) - elapsed))
        elif fallback is not None:
            how = "stats"
            ends.append(max(0.0, fallback - elapsed))
        else:
            return None, "none"
    return (max(ends) if ends else None), how


def _median_runtime(queue: str) -> float | None:
    rows = (
        Pod.objects.filter(job__queue_name=queue, started_at__isnull=False, finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("started_at", "finished_at")[:200]
    )
    values = [(b - a).total_seconds() for a, b in rows if a is not None and b is not None]  # filtered above
    return statistics.median(values) if values else None


def _finishing(sim: Simulator, visible: set[str] | None, now: datetime) -> dict[str, Any] | None:
    running_keys = {t.job for t in sim.snapshot.tasks if t.status in PLACED and t.job and t.job != sim.key}
    if not running_keys:
        return None
    groups = {
        f"{g.namespace}/{g.name}": g
        for g in PodGroup.objects.filter(phase=PodGroupPhase.RUNNING).select_related("job")
        if f"{g.namespace}/{g.name}" in running_keys
    }
    placed = {t.key for t in sim.snapshot.tasks if t.status in PLACED}
    pods_by_group: dict[str, list[Pod]] = defaultdict(list)
    for pod in Pod.objects.filter(podgroup_id__in=[g.pk for g in groups.values()]).only(
        "namespace", "name", "annotations", "started_at", "podgroup_id", "job_id"
    ):
        if f"{pod.namespace}/{pod.name}" in placed:
            pods_by_group[str(pod.podgroup_id)].append(pod)
    medians: dict[str, float | None] = {}
    estimates: list[tuple[float, str, str]] = []
    for key, group in groups.items():
        if group.queue_name not in medians:
            medians[group.queue_name] = _median_runtime(group.queue_name)
        seconds, how = _remaining(pods_by_group.get(str(group.pk), []), now, medians[group.queue_name])
        if seconds is not None:
            estimates.append((seconds, key, how))
    estimates.sort()
    estimates = estimates[:MAX_FINISHING]
    if not estimates:
        return None

    def freed(n: int) -> bool:
        gone = {key for _, key, _ in estimates[:n]}
        tasks = tuple(t for t in sim.snapshot.tasks if t.job not in gone)
        jobs = tuple(replace(j, phase=JobPhase.COMPLETED) if j.key in gone else j for j in sim.snapshot.jobs)
        return sim.run(replace(sim.snapshot, tasks=tasks, jobs=jobs))

    n = _smallest(1, len(estimates), freed)
    if n is None:
        return None
    chosen = estimates[:n]
    seconds = max(s for s, _, _ in chosen)
    hows = {h for _, _, h in chosen}
    basis = (
        "the pods' sim.volcanoweb.io/duration (or the sim default) at the sim clock speed, minus their elapsed time"
        if hows == {"sim"}
        else "the median run time of the queue's recently finished pods, minus the elapsed time"
    )
    return {
        "kind": "running-jobs-finish",
        "title": f"Wait for {n} running job(s) to finish (estimate: about {round(seconds)} s)",
        "jobs": [
            _job_name(groups[key]) if visible is None or key.split("/", 1)[0] in visible else OTHER_TENANT
            for _, key, _ in chosen
        ],
        "estimatedSeconds": round(seconds, 1),
        "estimatedAt": (now + timedelta(seconds=seconds)).isoformat(),
        "how": f"the fewest running jobs, soonest-ending first, whose completion lets the job start ({HOW_CYCLE} "
        f"without their pods); when: an estimate from {basis}",
    }


def _job_name(group: PodGroup) -> str:
    return f"{group.namespace}/{group.job.name}" if group.job is not None else f"{group.namespace}/{group.name}"


def _smallest(low: int, high: int, works: Callable[[int], bool]) -> int | None:
    """Return the smallest n in [low, high] for which ``works(n)`` (bisection, assuming monotony)."""
    best = None
    while low <= high:
        mid = (low + high) // 2
        if works(mid):
            best, high = mid, mid - 1
        else:
            low = mid + 1
    return best


def suggest(access: Access, job: Job) -> dict[str, Any]:
    """Return the verified changes that would let ``job`` start now (none when it is not pending)."""
    group = PodGroup.objects.filter(job=job).first()
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "JobSuggestions",
        "namespace": job.namespace,
        "name": job.name,
        "pending": False,
        "suggestions": [],
    }
    if group is None or group.phase not in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE):
        body["message"] = "The job is not waiting for the scheduler."
        return body
    info = build_snapshot()
    config, version = active_config()
    key = f"{group.namespace}/{group.name}"
    if not any(j.key == key for j in info.snapshot.jobs):
        body["message"] = "The job's PodGroup is not in the scheduler's snapshot yet."
        return body
    snapshot, synthesized = with_job_pods(info.snapshot, job, group)
    sim = Simulator(snapshot, config, key)
    body["pending"] = True
    body["schedulerConfigVersion"] = version
    if synthesized:
        body["note"] = (
            "The gang is not admitted yet, so it has no pods: the simulated cycles include the pods its "
            "job controller creates on admission."
        )
    if sim.run(snapshot):
        body["message"] = "The next cycle would start it as things are (nothing needs to change)."
        body["cycles"] = sim.cycles
        return body
    queue = next((q for q in snapshot.queues if q.name == sim.job.queue), None)
    suggestions: list[dict[str, Any]] = _blockers(sim, readable_namespaces(access))
    blocked = bool(suggestions)
    if queue is not None:
        for field in ("capability", "guarantee"):
            item = _queue_quota(sim, field, queue)
            if item is not None:
                suggestions.append(item)
    if not blocked:  # with a blocker found, the job's own size is not the problem
        suggestions += _gang_changes(sim)
    suggestions += _other_queues(sim, access, job.tenant_id)
    finishing = _finishing(sim, readable_namespaces(access), timezone.now())
    if finishing is not None:
        suggestions.append(finishing)
    for item in suggestions:
        item["verified"] = True
    body["suggestions"] = suggestions
    body["cycles"] = sim.cycles
    if not suggestions:
        body["message"] = "No single change tried here lets the job start in a simulated cycle."
    return body
