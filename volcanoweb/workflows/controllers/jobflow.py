"""The JobFlow controller (Volcano's ``syncJobFlow``): the DAG of JobTemplates, its status and retain policy.

A flow's job is created from its JobTemplate once the jobs of all its targets are Completed; the
JobTemplate sync records which jobs were made from a template.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from volcanoweb.core import jsonq
from volcanoweb.core.errors import AlreadyExists, ApiError
from volcanoweb.jobs import services as jobs_service
from volcanoweb.jobs.models import EventType, Job, JobPhase
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.objects import bump
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows import cron
from volcanoweb.workflows.controllers.common import SyncResult, delete_job, event
from volcanoweb.workflows.models import JobFlow, JobFlowPhase, JobTemplate

CREATED_BY_JOBFLOW = "volcano.sh/createdByJobFlow"
CREATED_BY_JOBTEMPLATE = "volcano.sh/createdByJobTemplate"
JOBFLOW_SOURCE = "jobflow-controller"
RETAIN_DELETE = "delete"


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
        event(
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
            "ownerReferences": [render.controller_reference(parse.JOBFLOW, jobflow)],
        },
        "spec": template.spec,
    }
    try:
        jobs_service.apply_job(SYSTEM, doc, jobflow.namespace, mode="create")
    except AlreadyExists:
        return True
    except ApiError as exc:
        event(
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
    event(result, jobflow, "JobFlow", EventType.NORMAL, "Created", f"create a job named {name}!", JOBFLOW_SOURCE)
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
        if job.deletion_timestamp is None and delete_job(job):
            result.deleted.append(job.name)


@transaction.atomic
def sync_jobflow(jobflow_id: int, now: datetime | None = None) -> SyncResult | None:
    """Process one JobFlow (Volcano's ``syncJobFlow``); return what happened, None if it is gone.

    Failed and Terminating flows are terminal (nothing is created any more). A Succeed flow with
    ``jobRetainPolicy: delete`` has its jobs deleted (the status keeps their names).
    """
    now = now or timezone.now()
    jobflow = JobFlow.objects.select_for_update(no_key=True).filter(pk=jobflow_id).first()
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
