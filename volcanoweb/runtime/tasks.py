"""Celery tasks of the runtime controllers: ids in, one service call, idempotent."""

from __future__ import annotations

import threading
from typing import Any

from celery import shared_task

from volcanoweb.runtime import services


@shared_task(name="volcanoweb.runtime.sync_job", ignore_result=True)
def sync_job(job_id: int) -> list[str]:
    """Reconcile one job (commands, pod changes, PodGroup phase, timers)."""
    return services.sync_job(job_id)


@shared_task(name="volcanoweb.runtime.on_pods_changed", ignore_result=True)
def on_pods_changed(job_ids: list[int]) -> dict[int, list[str]]:
    """React to mirrored pod changes of these jobs."""
    return services.on_pods_changed(job_ids)


@shared_task(name="volcanoweb.runtime.job_deleted", ignore_result=True)
def job_deleted(job_id: int | None = None, job_uid: str | None = None) -> int:
    """Clean up the cluster objects of a deleted job."""
    return services.on_job_deleted(job_id, job_uid=job_uid)


@shared_task(name="volcanoweb.runtime.sync_queues", ignore_result=True)
def sync_queues(names: list[str] | None = None) -> dict[str, str]:
    """Run the queue controller."""
    return services.sync_queues(names)


@shared_task(name="volcanoweb.runtime.group_bare_pods", ignore_result=True)
def group_bare_pods() -> int:
    """Create PodGroups for Volcano pods without one."""
    return services.group_bare_pods()


#: Held while this worker process runs a resync. Beat sends one every CONTROLLER_RESYNC_PERIOD, and with
#: thousands of busy jobs a resync takes longer than that: overlapping runs would redo the same work and take
#: every worker thread, starving the scheduling cycle and the backend sync.
_resync_running = threading.Lock()


@shared_task(name="volcanoweb.runtime.resync_controllers", ignore_result=True)
def resync_controllers() -> dict[str, Any]:
    """The periodic resync of every controller (skipped while this worker is still running the previous one)."""
    if not _resync_running.acquire(blocking=False):
        return {"skipped": "a resync is already running in this worker"}
    try:
        return services.resync_controllers()
    finally:
        _resync_running.release()


@shared_task(name="volcanoweb.runtime.gc_finished_jobs", ignore_result=True)
def gc_finished_jobs() -> list[str]:
    """Delete finished jobs whose ttlSecondsAfterFinished expired."""
    return services.gc_finished_jobs()
