"""Volcano's CronJob and JobFlow controllers: they read job phases and create/delete Jobs.

Their deviations from Volcano are listed in docs/controllers.md.

Both controllers create Jobs only through :func:`volcanoweb.jobs.services.apply_job` (so admission,
PodGroups and audit happen as for any other Job) and delete them through ``delete_job``. They never
drive job phases: the runtime's job controller does, and these controllers only read ``Job.phase``.

Every function takes the current time as ``now`` (timezone-aware) so tests can use a controllable
clock. Each sync runs in one transaction holding a row lock on the CronJob/JobFlow, so concurrent
ticks (beat + an embedded loop, two workers) serialise and the second one sees the first one's
``lastScheduleTime``: a start time is never run twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from volcanoweb.core import jsonq
from volcanoweb.core.errors import AlreadyExists, ApiError
from volcanoweb.jobs import services as jobs_service
from volcanoweb.jobs.models import FINISHED_JOB_PHASES, EventType, Job, JobPhase
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.objects import bump
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows import cron
from volcanoweb.workflows.models import CronJob, JobFlow, JobFlowPhase, JobTemplate

log = logging.getLogger(__name__)

SCHEDULED_TIMESTAMP_ANNOTATION = "volcano.sh/cronjob-scheduled-timestamp"
CREATED_BY_JOBFLOW = "volcano.sh/createdByJobFlow"
CREATED_BY_JOBTEMPLATE = "volcano.sh/createdByJobTemplate"
CRONJOB_SOURCE = "cronjob-controller"
JOBFLOW_SOURCE = "jobflow-controller"
RETAIN_DELETE = "delete"


@dataclass
class SyncResult:
    """What one sync did: jobs created and deleted, event reasons recorded, and when to sync next."""

    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    next_run: datetime | None = None
    phase: str | None = None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _event(result: SyncResult, obj: Any, kind: str, type_: str, reason: str, message: str, source: str) -> None:
    jobs_service.record_event(obj, kind, type_, reason, message, source=source)
    result.events.append(reason)


def job_ref(job: Job) -> dict[str, Any]:
    """Return the reference to a job kept in a CronJob's ``status.active``."""
    return {
        "apiVersion": parse.JOB.api_version,
        "kind": "Job",
        "namespace": job.namespace,
        "name": job.name,
        "uid": str(job.uid),
    }


def _owner_reference(info: parse.KindInfo, obj: Any) -> dict[str, Any]:
    return {
        "apiVersion": info.api_version,
        "kind": info.kind,
        "name": obj.name,
        "uid": str(obj.uid),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _delete_job(job: Job) -> bool:
    """Delete a job as the system; return False if it was already gone."""
    try:
        jobs_service.delete_job(SYSTEM, job.namespace, job.name)
    except ApiError as exc:
        if exc.code == 404:
            return False
        raise
    return True


# --- CronJob -----------------------------------------------------------------


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
            "ownerReferences": [_owner_reference(parse.CRONJOB, cronjob)],
        },
        "spec": template.get("spec") or {},
    }


def _job_from_template(cronjob: CronJob, scheduled: datetime, schedule: cron.Schedule) -> dict[str, Any]:
    annotations = {SCHEDULED_TIMESTAMP_ANNOTATION: schedule.local(scheduled).isoformat()}
    return cronjob_job_manifest(cronjob, cronjob_job_name(cronjob, scheduled), annotations)


def _finished_at(job: Job) -> datetime:
    state = (job.status or {}).get("state") or {}
    return _parse_time(state.get("lastTransitionTime")) or job.updated_at


def _reconcile_cronjob_jobs(cronjob: CronJob, owned: list[Job], status: dict[str, Any], result: SyncResult) -> None:
    """Drop finished and stale entries from ``active``, record successes, clean history."""
    active: list[dict[str, Any]] = list(status.get("active") or [])
    by_uid = {str(job.uid): job for job in owned}
    last_success = _parse_time(status.get("lastSuccessfulTime"))
    for job in owned:
        listed = any(ref.get("uid") == str(job.uid) for ref in active)
        if job.phase in FINISHED_JOB_PHASES:
            if listed:
                active = [ref for ref in active if ref.get("uid") != str(job.uid)]
                _event(
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
            _event(
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
            _event(
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
                if _delete_job(job):
                    result.deleted.append(job.name)
                    _event(
                        result,
                        cronjob,
                        "CronJob",
                        EventType.NORMAL,
                        "SuccessfulDelete",
                        f"Deleted job {job.name}",
                        CRONJOB_SOURCE,
                    )
            except ApiError as exc:
                _event(
                    result,
                    cronjob,
                    "CronJob",
                    EventType.WARNING,
                    "FailedDelete",
                    f"Deleted job: {exc.message}",
                    CRONJOB_SOURCE,
                )


def _save_cronjob(cronjob: CronJob, status: dict[str, Any]) -> None:
    last_schedule = _parse_time(status.get("lastScheduleTime"))
    last_success = _parse_time(status.get("lastSuccessfulTime"))
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
            _event(
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
        _event(
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
    _event(result, cronjob, "CronJob", EventType.NORMAL, "SuccessfulCreate", f"Created job {name}", CRONJOB_SOURCE)
    return True


@transaction.atomic
def sync_cronjob(cronjob_id: int, now: datetime) -> SyncResult | None:
    """Process one CronJob at ``now`` (Kubernetes' ``syncCronJob``); return what happened, None if it is gone.

    At most one job is created per call (missed start times are not back-filled), so running it
    again at the same ``now`` does nothing new.
    """
    if timezone.is_naive(now):
        raise ValueError("now must be timezone-aware")
    cronjob = CronJob.objects.select_for_update().filter(pk=cronjob_id).first()
    if cronjob is None:
        return None
    result = SyncResult()
    status: dict[str, Any] = dict(cronjob.status or {})
    status["active"] = list(status.get("active") or [])
    owned = list(Job.objects.filter(controller_uid=cronjob.uid).order_by("created_at", "name"))
    _reconcile_cronjob_jobs(cronjob, owned, status, result)
    if cronjob.suspend:
        _save_cronjob(cronjob, status)
        return result
    try:
        schedule = cronjob_schedule(cronjob)
    except cron.ScheduleError as exc:
        reason = "InvalidTimeZone" if exc.field == "spec.timeZone" else "InvalidSchedule"
        _event(result, cronjob, "CronJob", EventType.WARNING, reason, exc.message, CRONJOB_SOURCE)
        _save_cronjob(cronjob, status)
        return result
    last_scheduled = _parse_time(status.get("lastScheduleTime"))
    missed = cron.missed_runs(
        schedule,
        created=cronjob.created_at,
        last_scheduled=last_scheduled,
        now=now,
        starting_deadline_seconds=cronjob.starting_deadline_seconds,
    )
    result.next_run = missed.next_time
    if missed.too_many:
        _event(
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
        _save_cronjob(cronjob, status)
        return result
    deadline = cronjob.starting_deadline_seconds
    if deadline is not None and scheduled + timedelta(seconds=deadline) < now:
        _event(
            result,
            cronjob,
            "CronJob",
            EventType.WARNING,
            "MissSchedule",
            f"Missed scheduled time to start a job: {render.timestamp(scheduled)}",
            CRONJOB_SOURCE,
        )
        _save_cronjob(cronjob, status)
        return result
    name = cronjob_job_name(cronjob, scheduled)
    if any(ref.get("name") == name for ref in status["active"]) or last_scheduled == scheduled:
        _save_cronjob(cronjob, status)
        return result
    policy = cronjob.concurrency_policy
    if policy == "Forbid" and status["active"]:
        _event(
            result,
            cronjob,
            "CronJob",
            EventType.WARNING,
            "ForbidConcurrent",
            "Not starting job because prior execution is still running and concurrency policy is Forbid",
            CRONJOB_SOURCE,
        )
        _save_cronjob(cronjob, status)
        return result
    if policy == "Replace" and status["active"]:
        by_uid = {str(job.uid): job for job in owned}
        for ref in list(status["active"]):
            job = by_uid.get(str(ref.get("uid")))
            if job is not None and _delete_job(job):
                result.deleted.append(job.name)
            status["active"].remove(ref)
            _event(
                result,
                cronjob,
                "CronJob",
                EventType.WARNING,
                "ReplaceConcurrent",
                f"Deleted job {ref.get('name')} to replace it (concurrency policy Replace)",
                CRONJOB_SOURCE,
            )
    if _create_cron_job(cronjob, scheduled, schedule, status, result):
        status["lastScheduleTime"] = render.timestamp(scheduled)
    _save_cronjob(cronjob, status)
    return result


# --- JobFlow -----------------------------------------------------------------


def jobflow_job_name(jobflow: JobFlow, flow_name: str) -> str:
    """Return the name of the job for one flow entry: ``<jobflow>-<flow>``."""
    return f"{jobflow.name}-{flow_name}"


def jobflow_jobs(jobflow: JobFlow) -> list[Job]:
    """Return the jobs labelled as created by this JobFlow, by name."""
    label = f"{jobflow.namespace}.{jobflow.name}"
    return list(
        Job.objects.filter(jsonq.label_equals(CREATED_BY_JOBFLOW, label), namespace=jobflow.namespace).order_by("name")
    )


def _flows(jobflow: JobFlow) -> list[dict[str, Any]]:
    """Return the flow entries; a repeated name keeps its first entry (Volcano would count both, never succeed)."""
    seen: dict[str, dict[str, Any]] = {}
    for flow in jobflow.spec.get("flows") or []:
        if isinstance(flow, dict) and isinstance(flow.get("name"), str) and flow["name"] and flow["name"] not in seen:
            seen[flow["name"]] = flow
    return list(seen.values())


def _targets(flow: dict[str, Any]) -> list[str]:
    return list(((flow.get("dependsOn") or {}).get("targets")) or [])


def _create_flow_job(jobflow: JobFlow, flow_name: str, result: SyncResult) -> bool:
    """Create the job of one flow from its JobTemplate; return False (with a warning event) when that fails."""
    template = JobTemplate.objects.filter(namespace=jobflow.namespace, name=flow_name).first()
    if template is None:
        _event(
            result,
            jobflow,
            "JobFlow",
            EventType.WARNING,
            "JobTemplateNotFound",
            f'jobtemplates.flow.volcano.sh "{flow_name}" not found',
            JOBFLOW_SOURCE,
        )
        return False
    name = jobflow_job_name(jobflow, flow_name)
    marks = {
        CREATED_BY_JOBTEMPLATE: f"{jobflow.namespace}.{flow_name}",
        CREATED_BY_JOBFLOW: f"{jobflow.namespace}.{jobflow.name}",
    }
    doc = {
        "apiVersion": parse.JOB.api_version,
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": jobflow.namespace,
            "labels": dict(marks),
            "annotations": dict(marks),
            "ownerReferences": [_owner_reference(parse.JOBFLOW, jobflow)],
        },
        "spec": template.spec,
    }
    try:
        jobs_service.apply_job(SYSTEM, doc, jobflow.namespace, mode="create")
    except AlreadyExists:
        return True
    except ApiError as exc:
        _event(
            result,
            jobflow,
            "JobFlow",
            EventType.WARNING,
            "FailedCreate",
            f"Error creating job {name}: {exc.message}",
            JOBFLOW_SOURCE,
        )
        return False
    result.created.append(name)
    _event(result, jobflow, "JobFlow", EventType.NORMAL, "Created", f"create a job named {name}!", JOBFLOW_SOURCE)
    return True


def _deploy_flow_jobs(jobflow: JobFlow, result: SyncResult) -> None:
    """Create each flow's job once all of its targets' jobs are Completed."""
    existing = {
        job.name: job
        for job in Job.objects.filter(
            namespace=jobflow.namespace, name__in=[jobflow_job_name(jobflow, f["name"]) for f in _flows(jobflow)]
        )
    }
    for flow in _flows(jobflow):
        name = jobflow_job_name(jobflow, flow["name"])
        if name in existing:
            continue
        ready = all(
            (target_job := existing.get(jobflow_job_name(jobflow, target))) is not None
            and target_job.phase == JobPhase.COMPLETED
            for target in _targets(flow)
        )
        if not ready:
            continue
        if not _create_flow_job(jobflow, flow["name"], result):
            return  # Volcano returns the error and retries the whole deploy later
        job = Job.objects.filter(namespace=jobflow.namespace, name=name).first()
        if job is not None:
            existing[name] = job


def _running_histories(previous: dict[str, Any] | None, phase: str, stamp: str | None) -> list[dict[str, Any]]:
    histories = [dict(h) for h in (previous or {}).get("runningHistories") or []]
    if histories and histories[-1].get("state") != phase:
        histories[-1]["endTimestamp"] = stamp
        histories.append({"startTimestamp": stamp, "endTimestamp": None, "state": phase})
    if not histories and phase:
        histories.append({"startTimestamp": stamp, "endTimestamp": None, "state": phase})
    return histories


def _flow_status(jobflow: JobFlow, jobs: list[Job], now: datetime) -> dict[str, Any]:
    """Bucket the jobs by phase and rebuild conditions and jobStatusList."""
    buckets: dict[str, list[str]] = {
        key: [] for key in ("pendingJobs", "runningJobs", "completedJobs", "failedJobs", "terminatedJobs", "unKnowJobs")
    }
    bucket_of = {
        JobPhase.PENDING: "pendingJobs",
        JobPhase.RUNNING: "runningJobs",
        JobPhase.COMPLETED: "completedJobs",
        JobPhase.FAILED: "failedJobs",
        JobPhase.TERMINATED: "terminatedJobs",
    }
    previous = {entry.get("name"): entry for entry in (jobflow.status or {}).get("jobStatusList") or []}
    stamp = render.timestamp(now)
    conditions: dict[str, Any] = {}
    status_list: list[dict[str, Any]] = []
    for job in jobs:
        if job.phase in (JobPhase.COMPLETING, JobPhase.TERMINATING):
            pass  # tracked by Volcano but not exported
        else:
            buckets[bucket_of.get(JobPhase(job.phase), "unKnowJobs")].append(job.name)
        job_status = job.status or {}
        running_duration = job_status.get("runningDuration")
        conditions[job.name] = {
            "phase": job.phase,
            "createTime": render.timestamp(job.created_at),
            "runningDuration": running_duration,
            "taskStatusCount": job_status.get("taskStatusCount") or {},
        }
        end = None
        seconds = _duration_seconds(running_duration)
        if seconds is not None:
            end = render.timestamp(job.created_at + timedelta(seconds=seconds))
        status_list.append(
            {
                "name": job.name,
                "state": job.phase,
                "startTimestamp": render.timestamp(job.created_at),
                "endTimestamp": end,
                "restartCount": int(job_status.get("retryCount") or 0),
                "runningHistories": _running_histories(previous.get(job.name), job.phase, stamp),
            }
        )
    return {
        **{key: value for key, value in buckets.items() if value},
        "conditions": conditions,
        "jobStatusList": status_list,
    }


def _duration_seconds(value: Any) -> float | None:
    """Return seconds for a runningDuration given as a number, ``{"Duration": ns}`` or a Go duration string."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict) and isinstance(value.get("Duration"), int | float):
        return float(value["Duration"]) / 1e9
    if isinstance(value, str) and value:
        try:
            return cron.parse_every("@every " + value).total_seconds()
        except cron.ScheduleError:
            return None
    return None


def _next_phase(current: str, status: dict[str, Any], flow_count: int) -> str:
    """Volcano's JobFlow state machine (one transition per sync)."""
    running, completed = status.get("runningJobs") or [], status.get("completedJobs") or []
    failed, terminated = status.get("failedJobs") or [], status.get("terminatedJobs") or []
    if current == JobFlowPhase.PENDING:
        if (running or completed) and not failed:
            return JobFlowPhase.RUNNING
        if failed or terminated:
            return JobFlowPhase.FAILED
        return JobFlowPhase.PENDING
    if current == JobFlowPhase.RUNNING:
        if len(completed) == flow_count:
            return JobFlowPhase.SUCCEED
        if failed or terminated:
            return JobFlowPhase.FAILED
        return JobFlowPhase.RUNNING
    return current


def _delete_flow_jobs(jobflow: JobFlow, result: SyncResult) -> None:
    for job in jobflow_jobs(jobflow):
        if job.deletion_timestamp is None and _delete_job(job):
            result.deleted.append(job.name)


@transaction.atomic
def sync_jobflow(jobflow_id: int, now: datetime | None = None) -> SyncResult | None:
    """Process one JobFlow (Volcano's ``syncJobFlow``); return what happened, None if it is gone.

    Failed and Terminating flows are terminal (nothing is created any more). A Succeed flow with
    ``jobRetainPolicy: delete`` has its jobs deleted (the status keeps their names).
    """
    now = now or timezone.now()
    jobflow = JobFlow.objects.select_for_update().filter(pk=jobflow_id).first()
    if jobflow is None:
        return None
    result = SyncResult(phase=jobflow.phase)
    if jobflow.phase in (JobFlowPhase.FAILED, JobFlowPhase.TERMINATING):
        return result
    if jobflow.phase == JobFlowPhase.SUCCEED and jobflow.job_retain_policy == RETAIN_DELETE:
        _delete_flow_jobs(jobflow, result)
        return result
    if jobflow.phase != JobFlowPhase.SUCCEED:
        _deploy_flow_jobs(jobflow, result)
    status = _flow_status(jobflow, jobflow_jobs(jobflow), now)
    phase = _next_phase(jobflow.phase, status, len(_flows(jobflow)))
    status["state"] = {"phase": phase}
    result.phase = phase
    if status != (jobflow.status or {}) or phase != jobflow.phase:
        jobflow.status = status
        jobflow.phase = phase
        jobflow.save(update_fields=["status", "phase", *bump(jobflow, spec_changed=False)])
        notify.changed("JobFlow", jobflow, "status")
    for flow in _flows(jobflow):
        sync_jobtemplate_for(jobflow.namespace, flow["name"])
    if phase == JobFlowPhase.SUCCEED and jobflow.job_retain_policy == RETAIN_DELETE:
        _delete_flow_jobs(jobflow, result)
    return result


def sync_jobtemplate_for(namespace: str, name: str) -> None:
    """JobTemplate sync: ``status.jobDependsOnList`` = jobs made from it (written only when there are some)."""
    template = JobTemplate.objects.filter(namespace=namespace, name=name).first()
    if template is None:
        return
    names = sorted(
        Job.objects.filter(
            jsonq.label_equals(CREATED_BY_JOBTEMPLATE, f"{namespace}.{name}"), namespace=namespace
        ).values_list("name", flat=True)
    )
    if not names or (template.status or {}).get("jobDependsOnList") == names:
        return
    template.status = {**(template.status or {}), "jobDependsOnList": names}
    template.save(update_fields=["status", *bump(template, spec_changed=False)])
    notify.changed("JobTemplate", template, "status")
