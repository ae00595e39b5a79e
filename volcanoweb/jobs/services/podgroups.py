"""Writes for standalone PodGroups (a Job's own PodGroup is written with the Job, in :mod:`.jobs`)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from volcanoweb.audit import services as audit
from volcanoweb.core.errors import Errors, Forbidden
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.jobs.services.common import get_for_write, update_plain_fields
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.admission import check_priority_class, check_submission_queue
from volcanoweb.manifests.objects import Outcome, check_existence, check_version, prepare, raise_if
from volcanoweb.manifests.workflows import check_podgroup
from volcanoweb.tenancy.access import Access


@transaction.atomic
def apply_podgroup(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a standalone PodGroup (queue must exist, be Open and usable by the tenant)."""
    info = parse.PODGROUP
    meta, namespace = prepare(access, doc, info, default_namespace)
    assert namespace is not None
    existing = PodGroup.objects.select_for_update(no_key=True).filter(namespace=namespace.name, name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    if existing is not None and existing.job_id is not None:
        raise Forbidden(
            f'podgroups.scheduling.volcano.sh "{meta.name}" is managed by its Job and cannot be changed',
            kind="PodGroup",
            name=meta.name,
        )
    errors = Errors()
    spec = check_podgroup(errors, doc.get("spec"))
    raise_if(errors, info, meta.name)
    assert spec is not None
    ns_queue = namespace.annotations.get("scheduling.volcano.sh/queue-name")
    if existing is None and spec["queue"] == "default" and ns_queue:
        spec["queue"] = ns_queue
    if existing is None or existing.queue_name != spec["queue"]:
        check_submission_queue(errors, access, namespace.tenant, spec["queue"], kind="PodGroup")
    if existing is None or existing.priority_class_name != (spec.get("priorityClassName") or ""):
        check_priority_class(errors, spec.get("priorityClassName"), "spec.priorityClassName")
    raise_if(errors, info, meta.name)
    fields = {
        "queue_name": spec["queue"],
        "min_member": spec.get("minMember", 0),
        "min_task_member": spec.get("minTaskMember") or {},
        "min_resources": spec.get("minResources"),
        "priority_class_name": spec.get("priorityClassName") or "",
        "spec": spec,
        "labels": meta.labels,
        "annotations": meta.annotations,
    }
    if existing is not None:
        return update_plain_fields(access, info, namespace, existing, fields, render.podgroup)
    podgroup = PodGroup.objects.create(
        namespace=namespace.name,
        name=meta.name,
        tenant=namespace.tenant,
        owner_references=meta.owner_references,
        **fields,
    )
    Pod.objects.filter(namespace=namespace.name, group_name=meta.name, podgroup__isnull=True).update(podgroup=podgroup)
    after = render.podgroup(podgroup)
    audit.record(access.user, "create", info.kind, podgroup.key, tenant=namespace.tenant, after=after)
    notify.changed(info.kind, podgroup, "create")
    return Outcome("created", info.kind, meta.name, namespace.name, after)


@transaction.atomic
def delete_podgroup(access: Access, namespace: str, name: str) -> Outcome:
    """Delete a standalone PodGroup (a job's PodGroup goes with its job); its pods are unlinked."""
    podgroup = get_for_write(access, PodGroup, parse.PODGROUP, namespace, name, "delete")
    if podgroup.job_id is not None:
        raise Forbidden(
            f'podgroups.scheduling.volcano.sh "{name}" is managed by its Job; delete the Job',
            kind="PodGroup",
            name=name,
        )
    before = render.podgroup(podgroup)
    podgroup.delete()
    audit.record(access.user, "delete", "PodGroup", f"{namespace}/{name}", tenant=podgroup.tenant, before=before)
    notify.changed("PodGroup", podgroup, "delete")
    return Outcome("deleted", "PodGroup", name, namespace, before)
