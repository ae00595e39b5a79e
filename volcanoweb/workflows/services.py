"""Writes for CronJobs, JobFlows and JobTemplates (storage and validation; controllers live elsewhere)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from volcanoweb.audit import services as audit
from volcanoweb.core.errors import AlreadyExists, Errors, not_found
from volcanoweb.jobs import services as jobs_service
from volcanoweb.jobs.models import EventType, Job
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.admission import check_submission_queue
from volcanoweb.manifests.objects import Outcome, bump, check_existence, check_version, prepare, raise_if
from volcanoweb.manifests.workflows import check_cronjob, check_jobflow, check_jobtemplate
from volcanoweb.tenancy.access import Access, resolve_namespace
from volcanoweb.workflows.controllers.cronjob import CRONJOB_SOURCE, cronjob_job_manifest, job_ref
from volcanoweb.workflows.models import CronJob, JobFlow, JobTemplate

Checker = Callable[[Errors, str, Any], "dict[str, Any] | None"]


def _cronjob_fields(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "schedule": spec["schedule"],
        "time_zone": spec.get("timeZone"),
        "suspend": bool(spec.get("suspend")),
        "concurrency_policy": spec.get("concurrencyPolicy", "Allow"),
        "starting_deadline_seconds": spec.get("startingDeadlineSeconds"),
        "successful_jobs_history_limit": spec.get("successfulJobsHistoryLimit", 3),
        "failed_jobs_history_limit": spec.get("failedJobsHistoryLimit", 1),
    }


def _jobflow_fields(spec: dict[str, Any]) -> dict[str, Any]:
    return {"job_retain_policy": spec.get("jobRetainPolicy") or ""}


_KINDS: dict[
    str, tuple[parse.KindInfo, type[Any], Callable[[Any], dict[str, Any]], Callable[[dict[str, Any]], dict[str, Any]]]
] = {
    "CronJob": (parse.CRONJOB, CronJob, render.cronjob, _cronjob_fields),
    "JobFlow": (parse.JOBFLOW, JobFlow, render.jobflow, _jobflow_fields),
    "JobTemplate": (parse.JOBTEMPLATE, JobTemplate, render.jobtemplate, lambda spec: {}),
}


def _check(kind: str, errors: Errors, name: str, spec: Any) -> dict[str, Any] | None:
    if kind == "CronJob":
        return check_cronjob(errors, name, spec)
    if kind == "JobFlow":
        return check_jobflow(errors, spec)
    return check_jobtemplate(errors, name, spec)


def _apply(kind: str, access: Access, doc: dict[str, Any], default_namespace: str | None, mode: str) -> Outcome:
    info, model, to_manifest, extra_fields = _KINDS[kind]
    meta, namespace = prepare(access, doc, info, default_namespace)
    assert namespace is not None
    existing = model.objects.select_for_update(no_key=True).filter(namespace=namespace.name, name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    spec = _check(kind, errors, meta.name, doc.get("spec"))
    raise_if(errors, info, meta.name)
    assert spec is not None
    if kind == "CronJob":
        queue = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("queue") or "default"
        if (
            existing is None
            or (existing.spec.get("jobTemplate") or {}).get("spec", {}).get("queue", "default") != queue
        ):
            check_submission_queue(errors, access, namespace.tenant, queue, path="spec.jobTemplate.spec.queue")
            raise_if(errors, info, meta.name)
    fields = {"spec": spec, "labels": meta.labels, "annotations": meta.annotations, **extra_fields(spec)}
    if existing is not None:
        if all(getattr(existing, key) == value for key, value in fields.items()):
            return Outcome("unchanged", kind, meta.name, namespace.name, to_manifest(existing))
        before = to_manifest(existing)
        spec_changed = existing.spec != spec
        for key, value in fields.items():
            setattr(existing, key, value)
        existing.save(update_fields=[*fields, *bump(existing, spec_changed=spec_changed)])
        after = to_manifest(existing)
        audit.record(access.user, "update", kind, existing.key, tenant=namespace.tenant, before=before, after=after)
        notify.changed(kind, existing, "update")
        return Outcome("configured", kind, meta.name, namespace.name, after)
    created = model.objects.create(namespace=namespace.name, name=meta.name, tenant=namespace.tenant, **fields)
    after = to_manifest(created)
    audit.record(access.user, "create", kind, created.key, tenant=namespace.tenant, after=after)
    notify.changed(kind, created, "create")
    return Outcome("created", kind, meta.name, namespace.name, after)


@transaction.atomic
def apply_cronjob(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a CronJob (Volcano's CronJob webhook; its job template's queue must be usable)."""
    return _apply("CronJob", access, doc, default_namespace, mode)


@transaction.atomic
def apply_jobflow(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a JobFlow (flows must form a DAG)."""
    return _apply("JobFlow", access, doc, default_namespace, mode)


@transaction.atomic
def apply_jobtemplate(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a JobTemplate (its spec must be a valid Job spec)."""
    return _apply("JobTemplate", access, doc, default_namespace, mode)


@transaction.atomic
def delete_workflow_object(
    access: Access, kind: str, namespace: str, name: str, propagation: str = jobs_service.BACKGROUND
) -> Outcome:
    """Delete a CronJob, JobFlow or JobTemplate; the objects whose ownerReferences name it (the Jobs a CronJob
    or JobFlow created) follow ``propagation``, as Kubernetes' garbage collector does: ``Background`` and
    ``Foreground`` delete them, ``Orphan`` keeps them without the reference.

    Foreground runs in the same transaction: the dependents are deleted first, and the answer is the owner
    with its ``deletionTimestamp`` and the ``foregroundDeletion`` finalizer, as the API server's is.
    """
    info, model, to_manifest, _ = _KINDS[kind]
    resolve_namespace(access, namespace, "delete", info, name)
    obj = model.objects.select_for_update(no_key=True).filter(namespace=namespace, name=name).first()
    if obj is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)
    before = to_manifest(obj)
    jobs_service.collect_garbage(access, namespace, str(obj.uid), propagation)
    if propagation == jobs_service.FOREGROUND:
        meta = before["metadata"]
        meta["deletionTimestamp"] = render.timestamp(timezone.now())
        meta["finalizers"] = [*meta.get("finalizers", []), jobs_service.FOREGROUND_FINALIZER]
    obj.delete()
    audit.record(access.user, "delete", kind, f"{namespace}/{name}", tenant=obj.tenant, before=before)
    notify.changed(kind, obj, "delete")
    return Outcome("deleted", kind, name, namespace, before)


# --- CronJob actions: suspend, resume, run now ----------------------------------

#: kubectl's annotation on jobs made by ``kubectl create job --from=cronjob/NAME``.
MANUAL_INSTANTIATE_ANNOTATION = "cronjob.kubernetes.io/instantiate"
#: When the manual run was asked for.
MANUAL_RUN_TIME_ANNOTATION = "volcanoweb.io/manual-run-time"
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' utilrand alphabet (no vowels, no 0/1/3)
_JOB_NAME_MAX = 63


def manual_job_name(cronjob_name: str) -> str:
    """Return a fresh ``<cronjob>-manual-<5 random chars>`` name (the CronJob part cut to fit 63 characters)."""
    suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))
    tail = f"-manual-{suffix}"
    return f"{cronjob_name[: _JOB_NAME_MAX - len(tail)].rstrip('-')}{tail}"


def _cronjob_for_write(access: Access, namespace: str, name: str) -> CronJob:
    resolve_namespace(access, namespace, "update", parse.CRONJOB, name)
    cronjob = CronJob.objects.select_for_update(no_key=True).filter(namespace=namespace, name=name).first()
    if cronjob is None:
        raise not_found(parse.CRONJOB.qualified_resource, name, parse.CRONJOB.kind, parse.CRONJOB.group)
    return cronjob


def _set_suspend(access: Access, namespace: str, name: str, suspend: bool) -> Outcome:
    cronjob = _cronjob_for_write(access, namespace, name)
    if cronjob.suspend == suspend and bool(cronjob.spec.get("suspend")) == suspend:
        return Outcome("unchanged", "CronJob", name, namespace, render.cronjob(cronjob))
    before = render.cronjob(cronjob)
    cronjob.spec = {**cronjob.spec, "suspend": suspend}
    cronjob.suspend = suspend
    cronjob.save(update_fields=["spec", "suspend", *bump(cronjob, spec_changed=True)])
    after = render.cronjob(cronjob)
    verb = "suspend" if suspend else "resume"
    audit.record(access.user, verb, "CronJob", cronjob.key, tenant=cronjob.tenant, before=before, after=after)
    notify.changed("CronJob", cronjob, "update")
    return Outcome("configured", "CronJob", name, namespace, after)


@transaction.atomic
def suspend_cronjob(access: Access, namespace: str, name: str) -> Outcome:
    """Set ``spec.suspend: true``: the controller creates no jobs until resumed (running jobs go on).

    Writers of the CronJob's tenant only; "unchanged" (no audit entry) when it already is suspended.
    """
    return _set_suspend(access, namespace, name, True)


@transaction.atomic
def resume_cronjob(access: Access, namespace: str, name: str) -> Outcome:
    """Set ``spec.suspend: false``: the controller schedules again (at most one catch-up run, as usual)."""
    return _set_suspend(access, namespace, name, False)


@transaction.atomic
def run_cronjob_now(access: Access, namespace: str, name: str, now: datetime | None = None) -> Job:
    """Create one job from the CronJob's jobTemplate now, like ``kubectl create job --from=cronjob/NAME``.

    The job is named ``<cronjob>-manual-<suffix>``, annotated ``cronjob.kubernetes.io/instantiate:
    manual`` and controlled by the CronJob (so it appears in its history, counts against the history
    limits and is listed in ``status.active`` until it finishes). The CronJob's ``concurrencyPolicy``,
    ``suspend`` and ``startingDeadlineSeconds`` are deliberately not applied, as with kubectl: the run
    happens even while another job runs or the CronJob is suspended, and ``lastScheduleTime`` is left
    alone (the schedule is unaffected). A later scheduled run does see the manual job as active, so
    under Forbid it waits for it and under Replace it replaces it.

    The job is created with the caller's rights (its queue must be usable by them) through
    :func:`volcanoweb.jobs.services.apply_job`; errors (403, 404, 400) are raised unchanged.
    """
    now = now or timezone.now()
    cronjob = _cronjob_for_write(access, namespace, name)
    annotations = {MANUAL_INSTANTIATE_ANNOTATION: "manual", MANUAL_RUN_TIME_ANNOTATION: render.timestamp(now) or ""}
    for attempt in range(3):
        doc = cronjob_job_manifest(cronjob, manual_job_name(cronjob.name), annotations)
        try:
            outcome = jobs_service.apply_job(access, doc, namespace, mode="create")
            break
        except AlreadyExists:
            if attempt == 2:
                raise
    job = Job.objects.get(namespace=namespace, name=outcome.name)
    status = dict(cronjob.status or {})
    status["active"] = [*(status.get("active") or []), job_ref(job)]
    cronjob.status = status
    cronjob.save(update_fields=["status", *bump(cronjob, spec_changed=False)])
    jobs_service.record_event(
        cronjob,
        "CronJob",
        EventType.NORMAL,
        "SuccessfulCreate",
        f"Created job {job.name} (run now by {access.username})",
        source=CRONJOB_SOURCE,
    )
    audit.record(
        access.user,
        "run",
        "CronJob",
        cronjob.key,
        tenant=cronjob.tenant,
        after=render.cronjob(cronjob),
        message=f"created job {job.name}",
    )
    notify.changed("CronJob", cronjob, "status")
    return job
