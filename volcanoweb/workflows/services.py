"""Writes for CronJobs, JobFlows and JobTemplates (storage and validation; controllers live elsewhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from volcanoweb.audit import services as audit
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.admission import check_submission_queue
from volcanoweb.manifests.errors import Errors, not_found
from volcanoweb.manifests.objects import Outcome, bump, check_existence, check_version, prepare, raise_if
from volcanoweb.manifests.workflows import check_cronjob, check_jobflow, check_jobtemplate
from volcanoweb.tenancy.access import Access, resolve_namespace
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
    existing = model.objects.select_for_update().filter(namespace=namespace.name, name=meta.name).first()
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
        audit.on_change(kind, existing, "update")
        return Outcome("configured", kind, meta.name, namespace.name, after)
    created = model.objects.create(namespace=namespace.name, name=meta.name, tenant=namespace.tenant, **fields)
    after = to_manifest(created)
    audit.record(access.user, "create", kind, created.key, tenant=namespace.tenant, after=after)
    audit.on_change(kind, created, "create")
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
def delete_workflow_object(access: Access, kind: str, namespace: str, name: str) -> Outcome:
    """Delete a CronJob, JobFlow or JobTemplate (jobs they created are left to their controllers)."""
    info, model, to_manifest, _ = _KINDS[kind]
    resolve_namespace(access, namespace, "delete", info, name)
    obj = model.objects.select_for_update().filter(namespace=namespace, name=name).first()
    if obj is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)
    before = to_manifest(obj)
    obj.delete()
    audit.record(access.user, "delete", kind, f"{namespace}/{name}", tenant=obj.tenant, before=before)
    audit.on_change(kind, obj, "delete")
    return Outcome("deleted", kind, name, namespace, before)
