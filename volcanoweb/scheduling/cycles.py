"""The scheduling cycle service: claim, snapshot, decide, apply atomically, then talk to the cluster.

This module runs the loop's steps in order and keeps the loop's state between cycles (the snapshot memo,
the session cache); each step of its own is a module beside it, named in the list below.

One cycle (:func:`run_cycle`):

1. **Claim** the :class:`SchedulerLease` row with one conditional UPDATE (expired → held by me until
   ``now + lease``); continue only if exactly one row changed. The claim's ``token`` is re-checked
   under a row lock when applying (fencing), so a worker whose lease ran out cannot apply
   (:mod:`volcanoweb.scheduling.lease`).
2. **Finish earlier cycles' cluster calls**: :class:`PodIntent` rows left by a worker that died
   after its commit are retried (idempotently: "already bound to that node" counts as done).
3. **Snapshot** the database (:func:`volcanoweb.scheduling.snapshots.build_snapshot`) and run the
   pure core (``scheduler.run_cycle``) with the active :class:`SchedulerProfile`.
4. **Apply** the result in ONE transaction (:func:`volcanoweb.scheduling.decisions.apply_result`): pods
   get ``node_name`` and a bind intent (whole gangs at once, only pods still unbound: applying twice binds
   nothing twice), evictions get a deletion timestamp and an evict intent, PodGroup phases / conditions /
   events, queue status, and the :class:`SchedulingRun` row.
5. **Call the cluster** for this cycle's intents (:mod:`volcanoweb.scheduling.intents`); each acknowledged
   intent is deleted. A crash between 4 and 5 leaves intents that step 2 of the next cycle completes.
6. **Hand the cycle to the insights recorder** (:mod:`volcanoweb.insights.recorder`), which records
   it beside the loop (or, with ``INSIGHTS_RECORD_ASYNC`` off, in line between 4 and 5).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Iterator

from django.db import transaction
from django.utils import timezone

import scheduler
from scheduler import CycleResult, SchedulerConfig, SessionCache, Snapshot, parse_config
from scheduler.config import PRODUCT_CONFIG_YAML
from volcanoweb.clusters.backend import get_backend
from volcanoweb.clusters.backends.base import ClusterBackend
from volcanoweb.core import metrics
from volcanoweb.core.stageprof import stage
from volcanoweb.insights import recorder
from volcanoweb.live.broadcast import discard_pending, publish
from volcanoweb.scheduling import decisions, intents
from volcanoweb.scheduling.extender import PRODUCT_REGISTRY
from volcanoweb.scheduling.lease import claim_cycle, default_holder, release_cycle
from volcanoweb.scheduling.memo import Memo
from volcanoweb.scheduling.models import PodIntent, RunStatus, SchedulerProfile, SchedulingRun
from volcanoweb.scheduling.snapshots import SnapshotInfo, build_snapshot

log = logging.getLogger(__name__)

KEEP_RUNS = 5000
_config_cache: dict[str, SchedulerConfig] = {}


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


@stage("cycle snapshot")
def _snapshot(memo: Memo | None, now: float | None) -> SnapshotInfo:
    """The cycle's snapshot step, a stage of its own (the what-if paths' snapshots are not counted)."""
    return build_snapshot(memo, now)


@stage("cycle decide")
def _decide(snapshot: Snapshot, config: SchedulerConfig, cache: SessionCache | None) -> CycleResult:
    """The cycle's decide step: the pure core, a stage of its own (the core imports nothing of the web app)."""
    return scheduler.run_cycle(snapshot, config, registry=PRODUCT_REGISTRY, timer=time.perf_counter, cache=cache)


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
        recovered = intents.recover_intents(backend, exclude_run=run.pk)
        run.recovered = recovered.bound + recovered.evicted
        t0 = time.perf_counter()
        with _loop_state() as (memo, cache):
            if memo is not None:
                used_state.append(True)
            info = _snapshot(memo, now)
            t1 = time.perf_counter()
            result = _decide(info.snapshot, config, cache)
        t2 = time.perf_counter()
        decisions.apply_result(info, result, run, token)
        t3 = time.perf_counter()
        applied = True
        record_ms = recorder.record_in_line(run, info, result, config)  # observation (volcanoweb/insights)
        t4 = time.perf_counter()
        intents.execute_intents(backend, PodIntent.objects.filter(run_id=run.pk).order_by("id"))
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
    _save_run(run)
    if applied and result is not None:  # after the run row is saved: the recorder's writer sets its record_ms
        recorder.hand_over(run, info, result, config)
    _record_metrics(run, result)
    if run.pk % 100 == 0:
        prune_runs(run.pk)
    return run


def prune_runs(latest: int, keep: int = KEEP_RUNS) -> int:
    """Delete the runs older than the last ``keep`` before ``latest``, except those whose input insights keeps (a
    deciding cycle's, the first cycle after a queue or configuration change, for their retention): a run's input
    goes with it, and a change's effects are computed on that cycle. Returns the runs deleted."""
    deleted, _ = SchedulingRun.objects.filter(pk__lt=latest - keep, cycle_input__isnull=True).delete()
    return deleted


def _save_run(run: SchedulingRun) -> None:
    """Save the finished run and tell the pages about it (on commit)."""
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
