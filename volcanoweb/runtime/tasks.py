"""Celery tasks of the runtime controllers: ids in, one service call, idempotent."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from volcanoweb.feed import log as feed_log
from volcanoweb.runtime import dispatch, services


@shared_task(name="volcanoweb.runtime.sync_job", ignore_result=True)
def sync_job(job_id: int) -> list[str]:
    """Reconcile one job (commands, pod changes, PodGroup phase, timers)."""
    return services.sync_job(job_id)


@shared_task(name=dispatch.SYNC_JOBS_TASK, ignore_result=True)
def sync_jobs(job_ids: list[int]) -> dict[int, list[str]]:
    """Reconcile several jobs together (set-based: one query per kind for the batch, ADR 0022)."""
    return services.sync_jobs(job_ids)


@shared_task(name=dispatch.SYNC_DIRTY_JOBS_TASK, ignore_result=True)
def sync_dirty_jobs(slot: int = 0) -> int:
    """Reconcile the jobs queued by ``dispatch.request_sync`` (each once) in a drain slot; return the sync count."""
    return dispatch.drain(services.sync_jobs, slot=slot)


@shared_task(name="volcanoweb.runtime.on_pods_changed", ignore_result=True)
def on_pods_changed(job_ids: list[int]) -> dict[int, list[str]]:
    """React to mirrored pod changes of these jobs."""
    return services.on_pods_changed(job_ids)


@shared_task(name="volcanoweb.runtime.on_podgroups_changed", ignore_result=True)
def on_podgroups_changed(job_ids: list[int]) -> dict[int, list[str]]:
    """React to PodGroup phases the scheduler changed (Inqueue: create the pods)."""
    return services.on_podgroups_changed(job_ids)


@shared_task(name=dispatch.JOB_DELETED_TASK, ignore_result=True)
def job_deleted(job_id: int | None = None, job_uid: str | None = None) -> int:
    """Clean up the cluster objects of a deleted job."""
    return services.on_job_deleted(job_id, job_uid=job_uid)


@shared_task(name=dispatch.SYNC_QUEUES_TASK, ignore_result=True)
def sync_queues(names: list[str] | None = None) -> dict[str, str]:
    """Run the queue controller (a request coalesced by ``dispatch.request_queue_sync`` starts here)."""
    dispatch.queue_sync_started()
    return services.sync_queues(names)


@shared_task(name=dispatch.GROUP_BARE_PODS_TASK, ignore_result=True)
def group_bare_pods() -> int:
    """Create PodGroups for Volcano pods without one."""
    return services.group_bare_pods()


#: Held while this worker process runs a resync. Beat sends one every CONTROLLER_RESYNC_PERIOD, and with
#: thousands of busy jobs a resync takes longer than that: overlapping runs would redo the same work and take
#: every worker thread, starving the scheduling cycle and the backend sync.
_resync_running = threading.Lock()


#: time.monotonic() of this worker's last full resync and last drift check (0: none yet).
_last = {"full": 0.0, "drift": 0.0}


@dataclass
class _DriftCursor:
    """Where this worker's last drift check looked up to in the change log, and what it found: the next check
    looks at the jobs changed since and at those finds (``services.drifted_job_ids``)."""

    since: int | None = None
    carry: list[int] = field(default_factory=list)


_drift = _DriftCursor()


def _due(kind: str, period: float) -> bool:
    """Whether the ``kind`` sweep is due (and, if so, note that it runs now)."""
    now = time.monotonic()
    if period <= 0 or (_last[kind] and now - _last[kind] < period):
        return False
    _last[kind] = now
    return True


@shared_task(name=dispatch.RESYNC_TASK, ignore_result=True)
def resync_controllers() -> dict[str, Any]:
    """The periodic resync (skipped while this worker is still running the previous one).

    Every run hands the jobs with work due (timers, commands, deletions) to the coalesced syncs; every
    CONTROLLER_DRIFT_RESYNC_PERIOD also the jobs whose rows drifted from the controller's records
    (``services.drifted_job_ids``), and every CONTROLLER_FULL_RESYNC_PERIOD every busy job. Thousands of
    quiet running jobs are thus not reconciled every few seconds.
    """
    if not _resync_running.acquire(blocking=False):
        return {"skipped": "a resync is already running in this worker"}
    try:
        full = _due("full", float(settings.CONTROLLER_FULL_RESYNC_PERIOD))
        drift = full or _due("drift", float(settings.CONTROLLER_DRIFT_RESYNC_PERIOD))
        if not drift:
            return services.resync_controllers(full=False, drift=False, queue=True)
        upto = feed_log.head()[0]  # read first: what commits during the check is looked at by the next one
        result = services.resync_controllers(
            full=full, drift=True, queue=True, since=None if full else _drift.since, carry=_drift.carry
        )
        _drift.since, _drift.carry = upto, list(result["drifted"])
        return result
    finally:
        _resync_running.release()


@shared_task(name="volcanoweb.runtime.gc_finished_jobs", ignore_result=True)
def gc_finished_jobs() -> list[str]:
    """Delete finished jobs whose ttlSecondsAfterFinished expired."""
    return services.gc_finished_jobs()


#: The controllers' informer of this worker process, if it runs one (see :func:`_start_informer`).
_informer: Any = None


@worker_ready.connect
def _start_informer(sender: Any = None, **_kwargs: Any) -> None:
    """A controller worker (one that consumes the controllers' queue) runs the controllers' informer
    (``runtime.informer``): the log's changes become the sync requests it and the other controller workers
    drain. One leads (the informer's advisory lock); the others stand by. The periodic worker, whose process
    runs the scheduling cycle, does not."""
    global _informer
    try:
        queues = {queue.name for queue in sender.task_consumer.queues}
    except AttributeError:
        return
    if settings.CELERY_TASK_DEFAULT_QUEUE in queues and _informer is None:
        from volcanoweb.runtime import informer

        _informer = informer.Runner().start()
