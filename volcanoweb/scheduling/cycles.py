"""The scheduling cycle service: claim, snapshot, decide, apply atomically, then talk to the cluster.

One cycle (:func:`run_cycle`):

1. **Claim** the :class:`SchedulerLease` row with one conditional UPDATE (expired → held by me until
   ``now + lease``); continue only if exactly one row changed. The claim's ``token`` is re-checked
   under a row lock when applying (fencing), so a worker whose lease ran out cannot apply.
2. **Finish earlier cycles' cluster calls**: :class:`PodIntent` rows left by a worker that died
   after its commit are retried (idempotently: "already bound to that node" counts as done).
3. **Snapshot** the database (:func:`volcanoweb.scheduling.snapshots.build_snapshot`) and run the
   pure core (``scheduler.run_cycle``) with the active :class:`SchedulerProfile`.
4. **Apply** the result in ONE transaction (:func:`apply_result`): pods get ``node_name`` and a bind
   intent (whole gangs at once, only pods still unbound: applying twice binds nothing twice),
   evictions get a deletion timestamp and an evict intent, PodGroup phases / conditions / events,
   queue status, and the :class:`SchedulingRun` row.
5. **Call the cluster** for this cycle's intents; each acknowledged intent is deleted. A crash
   between 4 and 5 leaves intents that step 2 of the next cycle completes.
6. **Hand the cycle to the insights recorder** (:mod:`volcanoweb.insights.recorder`), which records
   it beside the loop (or, with ``INSIGHTS_RECORD_ASYNC`` off, in line between 4 and 5).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, F
from django.utils import timezone

import scheduler
from scheduler import CycleResult, SchedulerConfig, SessionCache, parse_config
from scheduler.config import PRODUCT_CONFIG_YAML
from scheduler.quantity import format_quantity
from scheduler.result import ReasonKind
from volcanoweb.clusters.backend import get_backend
from volcanoweb.clusters.backends.base import BackendError, ClusterBackend, EvictionBlocked
from volcanoweb.clusters.backends.base import Conflict as BackendConflict
from volcanoweb.clusters.backends.base import NotFound as BackendNotFound
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.core import metrics
from volcanoweb.core.idlist import one_of
from volcanoweb.insights import recorder
from volcanoweb.jobs.models import Event, EventType, Pod, PodGroup, PodGroupPhase
from volcanoweb.live.broadcast import discard_pending, publish
from volcanoweb.queues.models import Queue
from volcanoweb.runtime.dispatch import request_sync
from volcanoweb.scheduling import messages
from volcanoweb.scheduling.extender import PRODUCT_REGISTRY
from volcanoweb.scheduling.memo import Memo
from volcanoweb.scheduling.models import (
    IntentKind,
    PodIntent,
    RunStatus,
    SchedulerLease,
    SchedulerProfile,
    SchedulingRun,
)
from volcanoweb.scheduling.snapshots import SnapshotInfo, build_snapshot

log = logging.getLogger(__name__)

LEASE_NAME = "volcano"
KEEP_RUNS = 5000
MAX_DECISIONS = 500
UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"
_config_cache: dict[str, SchedulerConfig] = {}


class LeaseLost(Exception):
    """The cycle claim expired and was taken by another worker before this one applied."""


@dataclass
class ApplyStats:
    """What :func:`apply_result` changed."""

    binds: list[tuple[str, str]] = field(default_factory=list)
    evictions: list[str] = field(default_factory=list)
    skipped_binds: int = 0
    podgroups: int = 0
    events: int = 0
    queues: int = 0
    admitted: list[int] = field(default_factory=list)  # jobs whose PodGroup became Inqueue
    job_ids: list[int] = field(default_factory=list)  # jobs whose PodGroup phase changed otherwise


# --------------------------------------------------------------------------- claim


def default_holder() -> str:
    """Return this worker's identity: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def lease_seconds() -> float:
    """Return how long a claim lasts: long enough for a slow cycle, short enough to recover."""
    return max(30.0, 10 * float(settings.SCHEDULE_PERIOD))


def claim_cycle(holder: str, seconds: float | None = None) -> int | None:
    """Take the cycle lease if it is free or expired; return the fencing token, or None."""
    now = timezone.now()
    if not SchedulerLease.objects.filter(name=LEASE_NAME).exists():
        try:
            with transaction.atomic():
                SchedulerLease.objects.create(name=LEASE_NAME, expires_at=now - timedelta(seconds=1))
        except IntegrityError:
            pass
    expires = now + timedelta(seconds=seconds if seconds is not None else lease_seconds())
    changed = SchedulerLease.objects.filter(name=LEASE_NAME, expires_at__lte=now).update(
        holder=holder, token=F("token") + 1, expires_at=expires, updated_at=now
    )
    if changed != 1:
        return None
    token = SchedulerLease.objects.filter(name=LEASE_NAME, holder=holder).values_list("token", flat=True).first()
    return int(token) if token is not None else None


def release_cycle(holder: str, token: int) -> None:
    """Give the lease back (only if still ours)."""
    SchedulerLease.objects.filter(name=LEASE_NAME, holder=holder, token=token).update(expires_at=timezone.now())


# --------------------------------------------------------------------------- config


def active_config() -> tuple[SchedulerConfig, int]:
    """Return the active configuration (parsed once per distinct YAML) and its version (0: built-in)."""
    row = SchedulerProfile.objects.filter(active=True).values_list("yaml", "version").first()
    text, version = (row[0], row[1]) if row else (PRODUCT_CONFIG_YAML, 0)
    config = _config_cache.get(text)
    if config is None:
        config = parse_config(text)
        _config_cache.clear()
        _config_cache[text] = config
    return config, version


# --------------------------------------------------------------------------- apply


def _condition(kind: str, status: str, reason: str, message: str, transition: int) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "transitionID": str(transition),
        "lastTransitionTime": timezone.now().isoformat(),
    }


def _set_condition(status: dict[str, Any], condition: dict[str, Any]) -> bool:
    """Put ``condition`` in ``status["conditions"]`` (replacing its type); False if nothing changed."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    for existing in conditions:
        if existing.get("type") == condition["type"]:
            same = all(existing.get(k) == condition[k] for k in ("status", "reason", "message"))
            if same:
                return False
    status["conditions"] = [c for c in conditions if c.get("type") != condition["type"]] + [condition]
    return True


#: The Pod columns :func:`_bind_pods` reads or writes (not the large spec, labels and annotations).
BIND_FIELDS = (
    "id",
    "namespace",
    "name",
    "tenant_id",
    "phase",
    "node_name",
    "deletion_timestamp",
    "status",
    "annotations",
)
#: The annotations plugins write with a bind (``CycleResult.bind_annotations``): deviceshare's cards.
BIND_ANNOTATIONS = ("volcano.sh/gpu-index", "volcano.sh/predicate-time")


def _bind_pods(info: SnapshotInfo, result: CycleResult, run_id: int, stats: ApplyStats) -> None:
    wanted = {info.pod_ids[key]: (key, node) for key, node in result.binds.items() if key in info.pod_ids}
    if not wanted:
        return
    rows = Pod.objects.select_for_update().filter(one_of("pk", wanted)).only(*BIND_FIELDS)
    pods = list(rows.order_by("pk"))
    intents: list[PodIntent] = []
    bound: list[Pod] = []
    annotated: list[Pod] = []
    for pod in pods:
        key, node = wanted[pod.pk]
        if pod.node_name or pod.deletion_timestamp is not None or (pod.status or {}).get("deleted"):
            stats.skipped_binds += 1  # bound already (this result applied before) or gone
            continue
        notes = result.bind_annotations.get(key)
        if notes:
            pod.annotations = {**(pod.annotations or {}), **notes}
            annotated.append(pod)
        pod.node_name = node
        status = dict(pod.status or {})
        status.pop("nominatedNodeName", None)
        status["scheduledBy"] = run_id
        pod.status = status
        bound.append(pod)
        intents.append(
            PodIntent(kind=IntentKind.BIND, namespace=pod.namespace, name=pod.name, node=node, run_id=run_id)
        )
        stats.binds.append((key, node))
    bulk_update_rows(Pod, bound, ["node_name", "status"])
    if annotated:
        bulk_update_rows(Pod, annotated, ["annotations"])
    PodIntent.objects.bulk_create(intents, ignore_conflicts=True, batch_size=500)


def _evict_pods(info: SnapshotInfo, result: CycleResult, run_id: int, stats: ApplyStats) -> None:
    by_id = {info.pod_ids[e.task]: e for e in result.evictions if e.task in info.pod_ids}
    if not by_id:
        return
    now = timezone.now()
    for pod in Pod.objects.select_for_update().filter(one_of("pk", by_id)).order_by("pk"):
        eviction = by_id[pod.pk]
        if pod.deletion_timestamp is not None:
            continue
        pod.deletion_timestamp = now
        pod.status = {**(pod.status or {}), "evictedBy": eviction.to_json()}
        pod.save(update_fields=["deletion_timestamp", "status"])
        PodIntent.objects.get_or_create(
            kind=IntentKind.EVICT,
            namespace=pod.namespace,
            name=pod.name,
            defaults={"node": pod.node_name, "run_id": run_id},
        )
        stats.evictions.append(pod.key)


def _nominate(info: SnapshotInfo, result: CycleResult) -> None:
    ids = {info.pod_ids[key]: node for key, node in result.pipelined.items() if key in info.pod_ids}
    changed = []
    for pod in Pod.objects.filter(one_of("pk", ids)).only("id", "status"):
        if (pod.status or {}).get("nominatedNodeName") != ids[pod.pk]:
            pod.status = {**(pod.status or {}), "nominatedNodeName": ids[pod.pk]}
            changed.append(pod)
    bulk_update_rows(Pod, changed, ["status"])


def _update_podgroups(info: SnapshotInfo, result: CycleResult, run_id: int, stats: ApplyStats) -> None:
    keys = set(result.podgroups) | set(result.unschedulable)
    ids = [info.podgroup_ids[k] for k in keys if k in info.podgroup_ids]
    if not ids:
        return
    now = timezone.now()
    events: list[Event] = []
    changed_groups: list[PodGroup] = []

    def event(obj: Any, kind: str, type_: str, reason_text: str, message: str) -> None:
        events.append(
            Event(
                namespace=obj.namespace,
                tenant_id=obj.tenant_id,
                involved_kind=kind,
                involved_namespace=obj.namespace,
                involved_name=obj.name,
                involved_uid=obj.uid,
                type=type_,
                reason=reason_text,
                message=message,
                source="volcano",
                first_timestamp=now,
                last_timestamp=now,
            )
        )

    for group in (
        PodGroup.objects.select_for_update(of=("self",)).filter(one_of("pk", ids)).select_related("job").order_by("pk")
    ):
        key = group.key
        status = dict(group.status or {})
        changed: set[str] = set()
        new_phase = result.podgroups.get(key)
        if new_phase and new_phase != group.phase:
            if group.job_id is not None:
                (stats.admitted if new_phase == PodGroupPhase.INQUEUE else stats.job_ids).append(group.job_id)
            group.phase = new_phase
            status["phase"] = new_phase
            changed.update(("phase", "status"))
            ready = _condition(SCHEDULED, "True", "tasks in gang are ready to be scheduled", "", run_id)
            if new_phase in (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED):
                _set_condition(status, ready)
            if new_phase == PodGroupPhase.RUNNING:
                event(group, "PodGroup", EventType.NORMAL, SCHEDULED, "pod group is ready")
        reason = result.unschedulable.get(key)
        if reason is not None:
            why = "NeverFits" if reason.kind == ReasonKind.NEVER_FITS else "NotEnoughResources"
            said = messages.readable(reason.message)  # as kubectl describe shows it
            condition = _condition(UNSCHEDULABLE, "True", why, said, run_id)
            if _set_condition(status, condition):
                changed.add("status")
                event(group, "PodGroup", EventType.WARNING, UNSCHEDULABLE, said)
                if group.job is not None:
                    event(group.job, "Job", EventType.WARNING, UNSCHEDULABLE, said)
            if status.get("unschedulableReason") != reason.to_json():
                status["unschedulableReason"] = reason.to_json()
                changed.add("status")
        elif (
            any(c.get("type") == UNSCHEDULABLE for c in status.get("conditions") or [])
            and key not in result.unschedulable
        ):
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != UNSCHEDULABLE]
            status.pop("unschedulableReason", None)
            changed.add("status")
        if changed:
            group.status = status
            changed_groups.append(group)
    bulk_update_rows(PodGroup, changed_groups, ["phase", "status"])
    Event.objects.bulk_create(events, batch_size=500)
    stats.podgroups, stats.events = len(changed_groups), len(events)


def _clear_scheduled_reasons(info: SnapshotInfo, result: CycleResult) -> None:
    """Drop the Unschedulable condition of groups no longer reported unschedulable."""
    stale = {
        pk for key, pk in info.podgroup_ids.items() if key not in result.unschedulable and key not in result.podgroups
    }
    if not stale:
        return
    # The few groups that carry a reason, filtered here: naming every PodGroup of the snapshot in the query
    # (12,000 at 50,000 pods) cost more in the driver's parameter binding than the query itself.
    for group in PodGroup.objects.filter(status__has_key="unschedulableReason"):
        if group.pk not in stale:
            continue
        status = dict(group.status)
        status.pop("unschedulableReason", None)
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != UNSCHEDULABLE]
        group.status = status
        group.save(update_fields=["status"])


def update_queue_status(allocated: dict[str, dict[str, int]] | None = None) -> int:
    """Write queue status: allocated (from the cycle) and PodGroup counts per phase; return rows changed."""
    counts: dict[str, Counter[str]] = {}
    for row in PodGroup.objects.values("queue_name", "phase").annotate(n=Count("id")):
        counts.setdefault(row["queue_name"], Counter())[row["phase"]] = row["n"]
    changed = 0
    for queue in Queue.objects.select_for_update().order_by("pk"):
        c = counts.get(queue.name, Counter())
        fields: dict[str, Any] = {
            "pending": c[PodGroupPhase.PENDING],
            "running": c[PodGroupPhase.RUNNING],
            "inqueue": c[PodGroupPhase.INQUEUE],
            "completed": c[PodGroupPhase.COMPLETED],
            "unknown": c[PodGroupPhase.UNKNOWN],
        }
        if allocated is not None:
            vector = allocated.get(queue.name, {})
            fields["allocated"] = {k: format_quantity(k, v) for k, v in sorted(vector.items()) if v}
        diff = [k for k, v in fields.items() if getattr(queue, k) != v]
        if not diff:
            continue
        for key in diff:
            setattr(queue, key, fields[key])
        queue.save(update_fields=diff)
        changed += 1
    return changed


def apply_result(info: SnapshotInfo, result: CycleResult, run: SchedulingRun, token: int | None = None) -> ApplyStats:
    """Persist a cycle's decisions atomically and idempotently (see the module docstring, step 4).

    With ``token``, first checks under a row lock that the lease is still ours (else
    :class:`LeaseLost` and nothing is written).
    """
    stats = ApplyStats()
    with transaction.atomic():
        if token is not None:
            lease = SchedulerLease.objects.select_for_update().filter(name=LEASE_NAME).first()
            if lease is None or lease.token != token:
                raise LeaseLost(f"lease token {token} is no longer current")
        _bind_pods(info, result, run.pk, stats)
        _evict_pods(info, result, run.pk, stats)
        _nominate(info, result)
        _update_podgroups(info, result, run.pk, stats)
        _clear_scheduled_reasons(info, result)
        allocated = {k: dict(v) for k, v in result.queue_allocated.items()}
        stats.queues = update_queue_status(allocated)
        run.binds = len(stats.binds)
        run.evictions = len(stats.evictions)
        run.pipelined = len(result.pipelined)
        run.unschedulable = {k: v.to_json() for k, v in sorted(result.unschedulable.items())}
        run.decisions = {
            "binds": dict(sorted(stats.binds)[:MAX_DECISIONS]),
            "evictions": [e.to_json() for e in result.evictions[:MAX_DECISIONS]],
            "pipelined": dict(sorted(result.pipelined.items())[:MAX_DECISIONS]),
            "podgroups": dict(sorted(result.podgroups.items())[:MAX_DECISIONS]),
            "skippedBinds": stats.skipped_binds,
            "queueDeserved": {k: dict(v) for k, v in sorted(result.queue_deserved.items())},
        }
        run.save(update_fields=["binds", "evictions", "pipelined", "unschedulable", "decisions"])
        if stats.admitted or stats.job_ids:
            # Volcano's job controller watches PodGroups: an admitted (Inqueue) gang gets its pods now,
            # not at the next periodic resync.
            admitted, changed = sorted(stats.admitted), sorted(stats.job_ids)

            # robust: the decisions are committed; a notification lost here is found by the drift resync
            def notify() -> None:
                request_sync(admitted, urgent=True)
                request_sync(changed)

            transaction.on_commit(notify, robust=True)
    return stats


# --------------------------------------------------------------------------- cluster calls


@dataclass
class IntentStats:
    """Outcome of :func:`execute_intents`."""

    bound: int = 0
    evicted: int = 0
    failed: int = 0
    reverted: int = 0


def _bind_all(backend: ClusterBackend, binds: list[tuple[str, str, str]]) -> dict[tuple[str, str], BackendError | None]:
    bind_many = getattr(backend, "bind_many", None)
    if bind_many is not None:
        results: dict[tuple[str, str], BackendError | None] = bind_many(binds)
        return results
    out: dict[tuple[str, str], BackendError | None] = {}
    for ns, name, node in binds:
        try:
            backend.bind(ns, name, node)
            out[(ns, name)] = None
        except BackendError as exc:
            out[(ns, name)] = exc
    return out


def _annotate_binds(backend: ClusterBackend, binds: list[PodIntent]) -> None:
    """Write the annotations a plugin chose with the bind (deviceshare's cards) on the cluster's pods first, as
    Volcano patches the pod before binding it; a failed patch leaves the bind to go ahead (the device plugin
    would refuse the pod)."""
    keys = {(i.namespace, i.name) for i in binds}
    rows = Pod.objects.filter(one_of("name", sorted({n for _, n in keys}))).values_list(
        "namespace", "name", "annotations"
    )
    for ns, name, stored in rows:
        notes = {k: v for k, v in (stored or {}).items() if k in BIND_ANNOTATIONS}
        if (ns, name) in keys and notes:
            with contextlib.suppress(BackendError):
                backend.patch_pod_annotations(ns, name, dict(notes))


def execute_intents(backend: ClusterBackend, intents: Iterable[PodIntent]) -> IntentStats:
    """Make the recorded cluster calls; delete each intent the cluster acknowledged (idempotent)."""
    stats = IntentStats()
    intents = list(intents)
    binds = [i for i in intents if i.kind == IntentKind.BIND]
    done: list[int] = []
    revert: list[tuple[str, str]] = []
    failed: list[PodIntent] = []
    if binds:
        _annotate_binds(backend, binds)
        results = _bind_all(backend, [(i.namespace, i.name, i.node) for i in binds])
        for intent in binds:
            error = results.get((intent.namespace, intent.name))
            if error is None:
                done.append(intent.pk)
                stats.bound += 1
            elif isinstance(error, BackendConflict):
                try:
                    actual = backend.get_pod(intent.namespace, intent.name).node_name
                except BackendError:
                    actual = ""
                done.append(intent.pk)
                if actual == intent.node:
                    stats.bound += 1  # bound by an earlier attempt: nothing is bound twice
                elif not actual:
                    revert.append((intent.namespace, intent.name))
            elif isinstance(error, BackendNotFound):
                done.append(intent.pk)
                revert.append((intent.namespace, intent.name))
            else:
                intent.attempts += 1
                intent.last_error = str(error)[:1000]
                failed.append(intent)
    for intent in (i for i in intents if i.kind == IntentKind.EVICT):
        try:
            backend.evict(intent.namespace, intent.name)
            done.append(intent.pk)
            stats.evicted += 1
        except BackendNotFound:
            done.append(intent.pk)
        except (EvictionBlocked, BackendError) as exc:
            intent.attempts += 1
            intent.last_error = str(exc)[:1000]
            failed.append(intent)
    with transaction.atomic():
        PodIntent.objects.filter(one_of("pk", done)).delete()
        if failed:
            PodIntent.objects.bulk_update(failed, ["attempts", "last_error"])
        for ns, name in revert:  # the cluster refused: make the pod schedulable again
            Pod.objects.filter(namespace=ns, name=name, phase="Pending").update(node_name="")
    stats.failed = len(failed)
    stats.reverted = len(revert)
    if stats.bound:
        metrics.PODS_BOUND.inc(stats.bound)
    if stats.evicted:
        metrics.PODS_EVICTED.inc(stats.evicted)
    return stats


def recover_intents(backend: ClusterBackend, *, exclude_run: int | None = None) -> IntentStats:
    """Retry the cluster calls of earlier cycles that were committed but not acknowledged."""
    query = PodIntent.objects.order_by("id")
    if exclude_run is not None:
        query = query.exclude(run_id=exclude_run)
    return execute_intents(backend, query[:5000])


# --------------------------------------------------------------------------- the cycle

_state_lock = threading.Lock()
_memo = Memo()
_cache = SessionCache()

#: Every this many cycles, :func:`_freeze_loop_state` unfreezes, collects in full, and freezes again.
FULL_COLLECTION_EVERY = 100


class _Freezer:
    """Keep the loop's long-lived state (the memo's objects, the session cache) out of the collector.

    The core pauses the cyclic garbage collector while it decides (``scheduler/gc_pause.py``); the
    collection it deferred then runs in the apply step, and a full one walks every object the memo and
    the session cache hold: at 50,000 pods that was most of the apply step (docs/performance.md "Issue 17:
    the binding cycle"). After each cycle that used the loop's state, ``gc.freeze()`` moves every object
    then alive into the permanent generation, which collections do not walk; each cycle's collections
    then walk only what was made since the last freeze.

    Memory: a frozen object that dies later is still freed by its reference count when it is not part of
    a reference cycle; one in a cycle is kept until the next unfreeze. So every
    :data:`FULL_COLLECTION_EVERY` cycles (after the cycle's timings are taken), and whenever the memo is
    reset (``Memo.reset`` unfreezes), the frozen objects go back to the collector, a full collection
    reclaims the cycles that died meanwhile, and what survives is frozen again. ``gc.freeze`` is
    process-wide: in the embedded web process it also freezes the other threads' objects then alive
    (same rule: freed by refcount, cyclic garbage kept until the next full collection here).
    """

    def __init__(self) -> None:
        self.cycles = 0

    def after_cycle(self) -> None:
        self.cycles += 1
        if self.cycles % FULL_COLLECTION_EVERY == 0:
            gc.unfreeze()
            gc.collect()
        gc.freeze()


_freezer = _Freezer()


@contextlib.contextmanager
def _loop_state() -> Iterator[tuple[Memo | None, SessionCache | None]]:
    """This process's snapshot memo and session cache (none when another thread of it is using them).

    Unchanged rows give the same objects as in the previous cycle, so the scheduler's session cache
    updates its opened state for the PodGroups that changed instead of opening a session over every pod.
    One cycle runs at a time (the lease), but a cycle that outlived its lease may overlap the next one.
    """
    if not _state_lock.acquire(blocking=False):
        yield None, None
        return
    try:
        yield _memo, _cache
    except BaseException:
        _memo.done()  # the memo is consistent; the cache drops its state itself when a cycle raises
        raise
    finally:
        _state_lock.release()


def _record_metrics(run: SchedulingRun, result: CycleResult | None) -> None:
    metrics.E2E_SCHEDULING_LATENCY.observe(run.duration_ms)
    if result is not None:
        for action, seconds in result.timings.items():
            metrics.ACTION_SCHEDULING_LATENCY.labels(action=action).observe(seconds * 1_000_000)
    if run.status == RunStatus.FAILED:
        outcome = "error"
    elif run.binds:
        outcome = "scheduled"
    elif run.unschedulable:
        outcome = "unschedulable"
    else:
        outcome = "idle"
    metrics.SCHEDULE_ATTEMPTS.labels(result=outcome).inc()


def run_claimed_cycle(
    token: int, holder: str, backend: ClusterBackend | None = None, *, now: float | None = None
) -> SchedulingRun:
    """Run one cycle under an already claimed lease (see the module docstring).

    ``now`` is the cycle's clock (seconds since the Unix epoch, default the current time): the
    snapshot's :attr:`~scheduler.Snapshot.now`, against which the sla plugin measures how long a
    PodGroup has waited since its ``created_at``.

    After a cycle that used this process's memo and session cache, what is alive is frozen out of
    the garbage collector (see :class:`_Freezer`); the cycle's own locals are gone by then.
    """
    used_state: list[bool] = []
    run = _run_claimed_cycle(token, holder, backend, now, used_state)
    if used_state:
        _freezer.after_cycle()
    return run


def _run_claimed_cycle(
    token: int, holder: str, backend: ClusterBackend | None, now: float | None, used_state: list[bool]
) -> SchedulingRun:
    backend = backend or get_backend()
    started = time.perf_counter()
    config, version = active_config()
    run = SchedulingRun.objects.create(holder=holder, token=token, config_version=version)
    result: CycleResult | None = None
    applied = False
    try:
        recovered = recover_intents(backend, exclude_run=run.pk)
        run.recovered = recovered.bound + recovered.evicted
        t0 = time.perf_counter()
        with _loop_state() as (memo, cache):
            if memo is not None:
                used_state.append(True)
            info = build_snapshot(memo, now)
            t1 = time.perf_counter()
            result = scheduler.run_cycle(
                info.snapshot, config, registry=PRODUCT_REGISTRY, timer=time.perf_counter, cache=cache
            )
        t2 = time.perf_counter()
        apply_result(info, result, run, token)
        t3 = time.perf_counter()
        applied = True
        record_ms = recorder.record_in_line(run, info, result, config)  # observation (volcanoweb/insights)
        t4 = time.perf_counter()
        execute_intents(backend, PodIntent.objects.filter(run_id=run.pk).order_by("id"))
        t5 = time.perf_counter()
        snap = info.snapshot
        run.nodes, run.jobs, run.tasks = len(snap.nodes), len(snap.jobs), len(snap.tasks)
        run.snapshot_ms, run.core_ms = (t1 - t0) * 1000, (t2 - t1) * 1000
        run.apply_ms, run.record_ms, run.bind_ms = (t3 - t2) * 1000, record_ms, (t5 - t4) * 1000
        run.action_ms = {k: round(v * 1000, 3) for k, v in result.timings.items()}
        run.status = RunStatus.SUCCEEDED
    except Exception as exc:  # a failed cycle is recorded; the next one starts from the database again
        log.exception("scheduling cycle %s failed", run.pk)
        discard_pending()  # messages of the rolled-back apply must not block later ones
        run.status = RunStatus.FAILED
        run.error = f"{type(exc).__name__}: {exc}"[:4000]
    run.finished_at = timezone.now()
    run.duration_ms = (time.perf_counter() - started) * 1000
    with transaction.atomic():
        run.save()  # whole row: only the cycle that claimed the run writes it
        publish(
            "cycle",
            str(run.pk),
            status=run.status,
            binds=run.binds,
            evictions=run.evictions,
            pipelined=run.pipelined,
            unschedulable=len(run.unschedulable),
            duration_ms=round(run.duration_ms, 2),
        )
    if applied and result is not None:  # after the run row is saved: the recorder's writer sets its record_ms
        recorder.hand_over(run, info, result, config)
    _record_metrics(run, result)
    if run.pk % 100 == 0:
        # a run whose input insights keeps as a decided cycle stays until that input's retention ends
        SchedulingRun.objects.filter(pk__lt=run.pk - KEEP_RUNS).exclude(cycle_input__decided=True).delete()
    return run


def run_cycle(
    *, backend: ClusterBackend | None = None, holder: str | None = None, now: float | None = None
) -> SchedulingRun | None:
    """Run one scheduling cycle unless another worker is running one; return its run (or None).

    ``now``: the cycle's clock, see :func:`run_claimed_cycle`."""
    holder = holder or default_holder()
    token = claim_cycle(holder)
    if token is None:
        return None
    try:
        return run_claimed_cycle(token, holder, backend, now=now)
    finally:
        release_cycle(holder, token)
