"""The CronJob controller (Kubernetes' ``syncCronJob``): one job per due start time, history limits.

The schedule arithmetic (time zones, missed start times) is in :mod:`volcanoweb.workflows.cron`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from volcanoweb.core.errors import AlreadyExists, ApiError
from volcanoweb.jobs import services as jobs_service
from volcanoweb.jobs.models import FINISHED_JOB_PHASES, EventType, Job, JobPhase
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.objects import bump
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows import cron
from volcanoweb.workflows.controllers.common import SyncResult, delete_job, event, parse_time
from volcanoweb.workflows.models import CronJob

SCHEDULED_TIMESTAMP_ANNOTATION = "volcano.sh/cronjob-scheduled-timestamp"
CRONJOB_SOURCE = "cronjob-controller"


def job_ref(job: Job) -> dict[str, Any]:
    """Return the reference to a job kept in a CronJob's ``status.active``."""
    return {
        "apiVersion": parse.JOB.api_version,
        "kind": "Job",
        "namespace": job.namespace,
        "name": job.name,
        "uid": str(job.uid),
    }


def cronjob_schedule(cronjob: CronJob) -> cron.Schedule:
    """Return the parsed schedule of a CronJob (raises :class:`cron.ScheduleError`)."""
    return cron.parse_schedule(cronjob.schedule, cronjob.time_zone)


def cronjob_job_name(cronjob: CronJob, scheduled: datetime) -> str:
    """Return the name of the job for a start time: ``<cronjob>-<unix minutes>``."""
    return f"{cronjob.name}-{cron.job_name_suffix(scheduled)}"


def cronjob_job_manifest(cronjob: CronJob, name: str, annotations: dict[str, str]) -> dict[str, Any]:
    """Return the Job manifest made from a CronJob's jobTemplate: named ``name``, controlled by the CronJob,
    with ``annotations`` added to the template's (used for scheduled runs and for run-now alike)."""
    template = cronjob.spec.get("jobTemplate") or {}
    meta = template.get("metadata") or {}
    merged = {**dict(meta.get("annotations") or {}), **annotations}
    return {
        "apiVersion": parse.JOB.api_version,
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": cronjob.namespace,
            "labels": dict(meta.get("labels") or {}),
            "annotations": merged,
            "ownerReferences": [render.controller_reference(parse.CRONJOB, cronjob)],
        },
        "spec": template.get("spec") or {},
    }


def _job_from_template(cronjob: CronJob, scheduled: datetime, schedule: cron.Schedule) -> dict[str, Any]:
    annotations = {SCHEDULED_TIMESTAMP_ANNOTATION: schedule.local(scheduled).isoformat()}
    return cronjob_job_manifest(cronjob, cronjob_job_name(cronjob, scheduled), annotations)


def _finished_at(job: Job) -> datetime:
    state = (job.status or {}).get("state") or {}
    return parse_time(state.get("lastTransitionTime")) or job.updated_at


def _reconcile_cronjob_jobs(cronjob: CronJob, owned: list[Job], status: dict[str, Any], result: SyncResult) -> None:
    """Drop finished and stale entries from ``active``, record successes, clean history."""
    active: list[dict[str, Any]] = list(status.get("active") or [])
    by_uid = {str(job.uid): job for job in owned}
    last_success = parse_time(status.get("lastSuccessfulTime"))
    for job in owned:
        listed = any(ref.get("uid") == str(job.uid) for ref in active)
        if job.phase in FINISHED_JOB_PHASES:
            if listed:
                active = [ref for ref in active if ref.get("uid") != str(job.uid)]
                event(
                    result,
                    cronjob,
                    "CronJob",
                    EventType.NORMAL,
                    "SawCompletedJob",
                    f"Saw completed job: {job.name}, status: {job.phase}",
                    CRONJOB_SOURCE,
                )
            if job.phase == JobPhase.COMPLETED:
                finished = _finished_at(job)
                if last_success is None or finished > last_success:
                    last_success = finished
        elif not listed and job.deletion_timestamp is None:
            # Our transactions make this rare (a job made by hand with our uid): adopt it so Forbid sees it.
            active.append(job_ref(job))
            event(
                result,
                cronjob,
                "CronJob",
                EventType.WARNING,
                "OrphanedJob",
                f"Saw a job that the controller did not create or forgot: {job.name}; adopted it",
                CRONJOB_SOURCE,
            )
    kept: list[dict[str, Any]] = []
    for ref in active:
        current = by_uid.get(str(ref.get("uid")))
        if current is None or current.deletion_timestamp is not None:
            event(
                result,
                cronjob,
                "CronJob",
                EventType.WARNING,
                "StaleReference",
                f"Active job went missing: {ref.get('name')}",
                CRONJOB_SOURCE,
            )
            continue
        kept.append(ref)
    status["active"] = kept
    if last_success is not None:
        status["lastSuccessfulTime"] = render.timestamp(last_success)
    _clean_history(cronjob, owned, result)


def _clean_history(cronjob: CronJob, owned: list[Job], result: SyncResult) -> None:
    """Delete the oldest successful/failed jobs beyond the history limits (by creation time, then name)."""
    live = [job for job in owned if job.deletion_timestamp is None]
    for phase, limit in (
        (JobPhase.COMPLETED, cronjob.successful_jobs_history_limit),
        (JobPhase.FAILED, cronjob.failed_jobs_history_limit),
    ):
        finished = sorted((job for job in live if job.phase == phase), key=lambda j: (j.created_at, j.name))
        for job in finished[: max(0, len(finished) - limit)]:
            try:
                if delete_job(job):
                    result.deleted.append(job.name)
                    event(
                        result,
                        cronjob,
                        "CronJob",
                        EventType.NORMAL,
                        "SuccessfulDelete",
                        f"Deleted job {job.name}",
                        CRONJOB_SOURCE,
                    )
            except ApiError as exc:
                event(
                    result,
                    cronjob,
                    "CronJob",
                    EventType.WARNING,
                    "FailedDelete",
                    f"Deleted job: {exc.message}",
                    CRONJOB_SOURCE,
                )


def _save_cronjob(cronjob: CronJob, status: dict[str, Any]) -> None:
    last_schedule = parse_time(status.get("lastScheduleTime"))
    last_success = parse_time(status.get("lastSuccessfulTime"))
    if not status.get("active"):
        status.pop("active", None)
    clean = {key: value for key, value in status.items() if value is not None}
    if (clean, last_schedule, last_success) == (
        cronjob.status or {},
        cronjob.last_schedule_time,
        cronjob.last_successful_time,
    ):
        return
    cronjob.status = clean
    cronjob.last_schedule_time = last_schedule
    cronjob.last_successful_time = last_success
    fields = ["status", "last_schedule_time", "last_successful_time"]
    cronjob.save(update_fields=[*fields, *bump(cronjob, spec_changed=False)])
    notify.changed("CronJob", cronjob, "status")


def _create_cron_job(
    cronjob: CronJob, scheduled: datetime, schedule: cron.Schedule, status: dict[str, Any], result: SyncResult
) -> bool:
    """Create (or adopt) the job for ``scheduled``; return True when the run counts as made."""
    doc = _job_from_template(cronjob, scheduled, schedule)
    name = doc["metadata"]["name"]
    try:
        jobs_service.apply_job(SYSTEM, doc, cronjob.namespace, mode="create")
    except AlreadyExists:
        existing = Job.objects.filter(namespace=cronjob.namespace, name=name).first()
        if existing is None:
            return False
        if existing.controller_uid != cronjob.uid:
            event(
                result,
                cronjob,
                "CronJob",
                EventType.WARNING,
                "ForeignJob",
                f"Job {name} already exists and is not controlled by this CronJob",
                CRONJOB_SOURCE,
            )
            return False
        unfinished = existing.phase not in FINISHED_JOB_PHASES and existing.deletion_timestamp is None
        if unfinished and not any(ref.get("uid") == str(existing.uid) for ref in status.get("active") or []):
            status.setdefault("active", []).append(job_ref(existing))
        return True
    except ApiError as exc:
        event(
            result,
            cronjob,
            "CronJob",
            EventType.WARNING,
            "FailedCreate",
            f"Error creating job: {exc.message}",
            CRONJOB_SOURCE,
        )
        return False
    job = Job.objects.get(namespace=cronjob.namespace, name=name)
    status.setdefault("active", []).append(job_ref(job))
    result.created.append(name)
    event(result, cronjob, "CronJob", EventType.NORMAL, "SuccessfulCreate", f"Created job {name}", CRONJOB_SOURCE)
    return True


@transaction.atomic
def sync_cronjob(cronjob_id: int, now: datetime) -> SyncResult | None:
    """Process one CronJob at ``now`` (Kubernetes' ``syncCronJob``); return what happened, None if it is gone.

    At most one job is created per call (missed start times are not back-filled), so running it
    again at the same ``now`` does nothing new.
    """
    if timezone.is_naive(now):
        raise ValueError("now must be timezone-aware")
    cronjob = CronJob.objects.select_for_update(no_key=True).filter(pk=cronjob_id).first()
    if cronjob is None:
        return None
    result = SyncResult()
    status: dict[str, Any] = dict(cronjob.status or {})
    status["active"] = list(status.get("active") or [])
    owned = list(Job.objects.filter(controller_uid=cronjob.uid).order_by("created_at", "name"))
    _reconcile_cronjob_jobs(cronjob, owned, status, result)
    if not cronjob.suspend:
        _start_due_run(cronjob, owned, status, now, result)
    _save_cronjob(cronjob, status)
    return result


def _start_due_run(
    cronjob: CronJob, owned: list[Job], status: dict[str, Any], now: datetime, result: SyncResult
) -> None:
    """Create the job of the latest start time due at ``now``, unless it ran already, its deadline passed or
    the concurrency policy forbids it; a made run is recorded in ``status["lastScheduleTime"]``."""
    try:
        schedule = cronjob_schedule(cronjob)
    except cron.ScheduleError as exc:
        reason = "InvalidTimeZone" if exc.field == "spec.timeZone" else "InvalidSchedule"
        event(result, cronjob, "CronJob", EventType.WARNING, reason, exc.message, CRONJOB_SOURCE)
        return
    last_scheduled = parse_time(status.get("lastScheduleTime"))
    scheduled = _due_time(cronjob, schedule, last_scheduled, now, result)
    if scheduled is None:
        return
    name = cronjob_job_name(cronjob, scheduled)
    if any(ref.get("name") == name for ref in status["active"]) or last_scheduled == scheduled:
        return
    if not _apply_concurrency_policy(cronjob, owned, status, result):
        return
    if _create_cron_job(cronjob, scheduled, schedule, status, result):
        status["lastScheduleTime"] = render.timestamp(scheduled)


def _due_time(
    cronjob: CronJob, schedule: cron.Schedule, last_scheduled: datetime | None, now: datetime, result: SyncResult
) -> datetime | None:
    """The start time to run now (None when there is none, or it missed its starting deadline); sets
    ``result.next_run``."""
    missed = cron.missed_runs(
        schedule,
        created=cronjob.created_at,
        last_scheduled=last_scheduled,
        now=now,
        starting_deadline_seconds=cronjob.starting_deadline_seconds,
    )
    result.next_run = missed.next_time
    if missed.too_many:
        event(
            result,
            cronjob,
            "CronJob",
            EventType.WARNING,
            "TooManyMissedTimes",
            f"too many missed start times: more than {cron.MAX_MISSED}. "
            "Set or decrease .spec.startingDeadlineSeconds or check clock skew",
            CRONJOB_SOURCE,
        )
    scheduled = missed.scheduled
    if scheduled is None:
        return None
    deadline = cronjob.starting_deadline_seconds
    if deadline is not None and scheduled + timedelta(seconds=deadline) < now:
        event(
            result,
            cronjob,
            "CronJob",
            EventType.WARNING,
            "MissSchedule",
            f"Missed scheduled time to start a job: {render.timestamp(scheduled)}",
            CRONJOB_SOURCE,
        )
        return None
    return scheduled


def _apply_concurrency_policy(cronjob: CronJob, owned: list[Job], status: dict[str, Any], result: SyncResult) -> bool:
    """Forbid: return False while a run is active; Replace: delete the active runs first; Allow: nothing to do."""
    policy = cronjob.concurrency_policy
    if policy == "Forbid" and status["active"]:
        event(
            result,
            cronjob,
            "CronJob",
            EventType.WARNING,
            "ForbidConcurrent",
            "Not starting job because prior execution is still running and concurrency policy is Forbid",
            CRONJOB_SOURCE,
        )
        return False
    if policy == "Replace" and status["active"]:
        by_uid = {str(job.uid): job for job in owned}
        for ref in list(status["active"]):
            job = by_uid.get(str(ref.get("uid")))
            if job is not None and delete_job(job):
                result.deleted.append(job.name)
            status["active"].remove(ref)
            event(
                result,
                cronjob,
                "CronJob",
                EventType.WARNING,
                "ReplaceConcurrent",
                f"Deleted job {ref.get('name')} to replace it (concurrency policy Replace)",
                CRONJOB_SOURCE,
            )
    return True
