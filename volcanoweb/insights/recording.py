"""Recording a cycle's insights: its replayable input, the jobs' wait intervals and the queues' samples.

The scheduling cycle calls :func:`record_cycle` once, after its decisions are committed. Recording
only observes: it never changes a row the scheduler reads, and a failure here is logged and leaves
the cycle's outcome untouched.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections import Counter, defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scheduler import CycleResult, Resource, SchedulerConfig, Snapshot
from scheduler.config import dump_config
from scheduler.model import JobPhase, TaskStatus
from scheduler.replay import SnapshotEncoder, cycle_input_text
from scheduler.result import ReasonKind, cycle_json
from volcanoweb.insights.models import CycleInput, EntryKind, QueueSample, Resolution, TimelineEntry
from volcanoweb.jobs.models import PodGroup
from volcanoweb.scheduling.models import SchedulingRun
from volcanoweb.scheduling.snapshots import SnapshotInfo

log = logging.getLogger(__name__)

#: Reasons about a queue's quota: the timeline names the jobs holding the queue's resources.
QUEUE_REASONS = (ReasonKind.ENQUEUE_REJECTED, ReasonKind.QUEUE_OVERUSED, ReasonKind.CAPABILITY_EXCEEDED)
MAX_HOLDERS = 5
_PLACED = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.PIPELINED)

_lock = threading.Lock()
_encoder = SnapshotEncoder()
_compressor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="insights-zlib")
_config_text: dict[int, tuple[SchedulerConfig, str]] = {}


def _yaml(config: SchedulerConfig) -> str:
    hit = _config_text.get(id(config))
    if hit is None or hit[0] is not config:
        _config_text.clear()
        hit = (config, dump_config(config))
        _config_text[id(config)] = hit
    return hit[1]


def record_cycle(run: SchedulingRun, info: SnapshotInfo, result: CycleResult, config: SchedulerConfig) -> float:
    """Record what this committed cycle saw and decided; return the milliseconds it took (never raises)."""
    if not settings.INSIGHTS_RECORD:
        return 0.0
    started = time.perf_counter()
    try:
        now = timezone.now()
        pending = _compress_input(run, info.snapshot, result, config, now)
        with transaction.atomic():
            record_timeline(run.pk, info, result, now)
            record_queue_samples(run.pk, info.snapshot, result, now)
            if pending is not None:
                raw_size, future = pending
                store_input(run, future.result(), raw_size, started)
    except Exception:  # observation must never break scheduling
        log.exception("recording insights of cycle %s failed", run.pk)
    return (time.perf_counter() - started) * 1000


# --------------------------------------------------------------------------- cycle inputs


def _compress_input(
    run: SchedulingRun, snapshot: Snapshot, result: CycleResult, config: SchedulerConfig, now: datetime
) -> tuple[int, Future[bytes]] | None:
    """Encode this cycle's input file and start compressing it (zlib releases the GIL: the compression
    overlaps the timeline and sample writes); None when no input is kept."""
    if int(settings.INSIGHTS_KEEP_CYCLE_INPUTS) <= 0:
        return None
    with _lock:
        snapshot_text = _encoder.encode(snapshot)
    text = cycle_input_text(
        snapshot_text,
        _yaml(config),
        cycle=run.pk,
        recorded=cycle_json(result),
        metadata={"at": now.isoformat(), "configVersion": run.config_version},
    )
    raw = text.encode()
    return len(raw), _compressor.submit(zlib.compress, raw, 1)


def store_input(run: SchedulingRun, data: bytes, size: int, started: float | None = None) -> CycleInput:
    """Store a compressed cycle input file for ``run``; keep the last ``INSIGHTS_KEEP_CYCLE_INPUTS``."""
    keep = int(settings.INSIGHTS_KEEP_CYCLE_INPUTS)
    ms = (time.perf_counter() - started) * 1000 if started is not None else 0.0
    row = CycleInput.objects.create(
        # ``at``: when the cycle started, before its snapshot was read (a change after it is not in this input)
        run_id=run.pk,
        at=run.started_at,
        config_version=run.config_version,
        data=data,
        size=size,
        record_ms=ms,
    )
    if run.pk % 10 == 0:
        cutoff = CycleInput.objects.order_by("-run_id").values_list("run_id", flat=True)[keep - 1 : keep].first()
        if cutoff is not None:
            CycleInput.objects.filter(run_id__lt=cutoff).delete()
    return row


def record_input(
    run: SchedulingRun, snapshot: Snapshot, result: CycleResult, config: SchedulerConfig, now: datetime
) -> CycleInput | None:
    """Store this cycle's replayable input (snapshot, configuration, decisions) at once."""
    pending = _compress_input(run, snapshot, result, config, now)
    if pending is None:
        return None
    return store_input(run, pending[1].result(), pending[0])


def input_text(row: CycleInput) -> str:
    """Return the cycle input file stored in ``row``."""
    return zlib.decompress(bytes(row.data)).decode()


# --------------------------------------------------------------------------- timelines


def _holders(snapshot: Snapshot, queues: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Return, per queue, the PodGroups holding its resources (largest first) with their requests."""
    job_queue = {j.key: j.queue for j in snapshot.jobs if j.queue in queues}
    held: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for t in snapshot.tasks:
        queue = job_queue.get(t.job)
        if queue is None or t.status not in _PLACED:
            continue
        held[queue][t.job].update(t.requests.to_dict())
    out: dict[str, list[dict[str, Any]]] = {}
    for queue, jobs in held.items():
        ranked = sorted(jobs.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        out[queue] = [{"podgroup": key, "requests": dict(req)} for key, req in ranked[:MAX_HOLDERS]]
    return out


def record_timeline(run_id: int, info: SnapshotInfo, result: CycleResult, now: datetime) -> None:
    """Close, open or keep each PodGroup's wait interval; add this cycle's milestones."""
    snapshot = info.snapshot
    open_rows = {
        r["podgroup_key"]: r
        for r in TimelineEntry.objects.filter(kind=EntryKind.WAIT, ended_at__isnull=True).values(
            "id", "podgroup_key", "reason", "message"
        )
    }
    close: list[int] = []
    opening: dict[str, Any] = {}
    for key, reason in result.unschedulable.items():
        row = open_rows.get(key)
        if row is not None and row["reason"] == str(reason.kind) and row["message"] == reason.message:
            continue
        if row is not None:
            close.append(row["id"])
        opening[key] = reason
    close += [row["id"] for key, row in open_rows.items() if key not in result.unschedulable]
    if close:
        TimelineEntry.objects.filter(pk__in=close).update(ended_at=now, ended_run=run_id)
    first_binds: set[str] = set()
    if result.binds:
        bound = set(result.binds)
        groups = {t.job for t in snapshot.tasks if t.key in bound and t.job}
        phases = {j.key: j.phase for j in snapshot.jobs if j.key in groups}
        first_binds = {g for g in groups if phases.get(g) != JobPhase.RUNNING}
    milestones = {k: v for k, v in result.podgroups.items() if v in (JobPhase.INQUEUE, JobPhase.RUNNING)}
    keys = set(opening) | first_binds | set(milestones)
    if not keys:
        return
    ids = [info.podgroup_ids[k] for k in keys if k in info.podgroup_ids]
    groups_by_key = {
        f"{g['namespace']}/{g['name']}": g
        for g in PodGroup.objects.filter(pk__in=ids).values("namespace", "name", "job_id", "tenant_id", "queue_name")
    }
    quota_queues = {
        groups_by_key[k]["queue_name"] for k, r in opening.items() if r.kind in QUEUE_REASONS and k in groups_by_key
    }
    holders = _holders(snapshot, quota_queues) if quota_queues else {}
    if holders:
        named = {
            (h["podgroup"].split("/", 1)[0], h["podgroup"].split("/", 1)[1]) for hs in holders.values() for h in hs
        }
        job_names = {
            f"{ns}/{name}": job or name
            for ns, name, job in PodGroup.objects.filter(name__in=[n for _, n in named]).values_list(
                "namespace", "name", "job__name"
            )
        }
        for hs in holders.values():
            for h in hs:
                h["job"] = job_names.get(h["podgroup"], h["podgroup"].split("/", 1)[1])
    rows: list[TimelineEntry] = []

    def entry(key: str, kind: str, reason: str, **extra: Any) -> None:
        g = groups_by_key.get(key)
        if g is None:
            return
        rows.append(
            TimelineEntry(
                podgroup_key=key,
                namespace=g["namespace"],
                job_id=g["job_id"],
                tenant_id=g["tenant_id"],
                queue=g["queue_name"],
                kind=kind,
                reason=reason,
                started_at=now,
                started_run=run_id,
                **extra,
            )
        )

    for key, reason in sorted(opening.items()):
        numbers: dict[str, Any] = dict(reason.numbers)
        queue = groups_by_key[key]["queue_name"] if key in groups_by_key else None
        if reason.kind in QUEUE_REASONS and queue in holders:
            numbers["holders"] = [h for h in holders[queue] if h["podgroup"] != key]
        if reason.fit_errors:
            numbers["fitErrors"] = dict(reason.fit_errors)
        entry(key, EntryKind.WAIT, str(reason.kind), plugin=reason.plugin, message=reason.message, numbers=numbers)
    for key, phase in sorted(milestones.items()):
        done = {"ended_at": now, "ended_run": run_id}
        label = "Enqueued" if phase == JobPhase.INQUEUE else "Running"
        entry(key, EntryKind.MILESTONE, str(phase), message=f"{label} (PodGroup phase {phase})", **done)
    for key in sorted(first_binds):
        count = sum(1 for t in snapshot.tasks if t.job == key and t.key in result.binds)
        entry(
            key,
            EntryKind.MILESTONE,
            "Bound",
            message=f"{count} pod(s) bound",
            numbers={"pods": count},
            ended_at=now,
            ended_run=run_id,
        )
    TimelineEntry.objects.bulk_create(rows, batch_size=500)


# --------------------------------------------------------------------------- queue history


def queue_states(snapshot: Snapshot, result: CycleResult) -> dict[str, dict[str, Any]]:
    """Return each queue's figures after this cycle (the fields of a per-cycle :class:`QueueSample`)."""
    job_queue = {j.key: j.queue for j in snapshot.jobs}
    pending_status, binds = TaskStatus.PENDING, result.binds
    demand: dict[str, Resource] = {}
    with_pods: set[str] = set()
    empty = Resource()
    for t in snapshot.tasks:
        job = t.job
        with_pods.add(job)
        if t.status is not pending_status or t.node_name or (binds and t.key in binds):
            continue
        queue = job_queue.get(job)
        if queue is not None:
            demand[queue] = demand.get(queue, empty) + t.requests
    phases: dict[str, Counter[str]] = defaultdict(Counter)
    changed = result.podgroups
    for j in snapshot.jobs:
        key = j.key
        # a gang not admitted yet has no pods: its minResources is its demand
        if key not in with_pods and j.phase is JobPhase.PENDING and j.min_resources is not None:
            demand[j.queue] = demand.get(j.queue, empty) + j.min_resources
        phases[j.queue][str(changed.get(key) or j.phase)] += 1
    out: dict[str, dict[str, Any]] = {}
    for q in snapshot.queues:
        out[q.name] = {
            "allocated": {k: v for k, v in sorted((result.queue_allocated.get(q.name) or {}).items()) if v},
            "deserved": {k: v for k, v in sorted((result.queue_deserved.get(q.name) or {}).items()) if v},
            "guarantee": q.guarantee.to_dict() if q.guarantee is not None else {},
            "capability": q.capability.to_dict() if q.capability is not None else {},
            "demand": demand[q.name].to_dict() if q.name in demand else {},
            "jobs": dict(sorted(phases[q.name].items())),
        }
    return out


def record_queue_samples(run_id: int, snapshot: Snapshot, result: CycleResult, now: datetime) -> None:
    """Write one per-cycle sample per queue (the periodic task rolls them up per minute and hour)."""
    states = queue_states(snapshot, result)
    if states:
        QueueSample.objects.bulk_create(
            [
                QueueSample(resolution=Resolution.CYCLE, queue=q, bucket=now, run_id=run_id, **s)
                for q, s in states.items()
            ]
        )
