"""Celery tasks for the CronJob and JobFlow controllers (beat runs them in the stack mode).

Both tasks are idempotent: each object is synced in its own transaction under a row lock, and a
CronJob start time is recorded in ``lastScheduleTime`` in the same transaction that creates its job,
so a repeated or concurrent tick creates nothing twice. In the embedded mode the same tasks run
from in-process loops (settings.PERIODIC_TASKS).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from celery import shared_task
from django.utils import timezone

from volcanoweb.workflows.controllers import cronjob, jobflow
from volcanoweb.workflows.models import CronJob, JobFlow, JobFlowPhase

log = logging.getLogger(__name__)


def _ids(ids: Iterable[int] | None, default: Iterable[int]) -> list[int]:
    return sorted({int(i) for i in (ids if ids is not None else default)})


def run_cronjobs(cronjob_ids: Iterable[int] | None = None) -> dict[str, Any]:
    """Sync the given CronJobs (all when None) at the current time; one failure does not stop the others."""
    now = timezone.now()
    ids = _ids(cronjob_ids, CronJob.objects.values_list("pk", flat=True))
    created: list[str] = []
    failed: list[int] = []
    for cronjob_id in ids:
        try:
            result = cronjob.sync_cronjob(cronjob_id, now)
        except Exception:
            log.exception("CronJob %s: sync failed", cronjob_id)
            failed.append(cronjob_id)
            continue
        if result is not None:
            created.extend(result.created)
    return {"synced": len(ids) - len(failed), "failed": failed, "created": created}


def run_jobflows(jobflow_ids: Iterable[int] | None = None) -> dict[str, Any]:
    """Sync the given JobFlows (all non-terminal ones when None); one failure does not stop the others."""
    now = timezone.now()
    live = JobFlow.objects.exclude(phase__in=[JobFlowPhase.FAILED, JobFlowPhase.TERMINATING])
    ids = _ids(jobflow_ids, live.values_list("pk", flat=True))
    created: list[str] = []
    failed: list[int] = []
    for jobflow_id in ids:
        try:
            result = jobflow.sync_jobflow(jobflow_id, now)
        except Exception:
            log.exception("JobFlow %s: sync failed", jobflow_id)
            failed.append(jobflow_id)
            continue
        if result is not None:
            created.extend(result.created)
    return {"synced": len(ids) - len(failed), "failed": failed, "created": created}


@shared_task(name="volcanoweb.workflows.tasks.tick_cronjobs", ignore_result=True)
def tick_cronjobs(cronjob_ids: list[int] | None = None) -> dict[str, Any]:
    """Celery task: run due CronJobs (all, or the given ids)."""
    return run_cronjobs(cronjob_ids)


@shared_task(name="volcanoweb.workflows.tasks.sync_jobflows", ignore_result=True)
def sync_jobflows(jobflow_ids: list[int] | None = None) -> dict[str, Any]:
    """Celery task: advance JobFlows (all non-terminal ones, or the given ids)."""
    return run_jobflows(jobflow_ids)
