"""Writes for plain pods: their create (admission of the queue they name), label and annotation
updates, and delete."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from scheduler.decode import GROUP_ANNOTATION
from volcanoweb.audit import services as audit
from volcanoweb.clusters.backend import get_backend
from volcanoweb.core.errors import Errors
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.jobs.services.common import get_for_write
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.admission import (
    POD_QUEUE_ANNOTATION,
    check_priority_class,
    check_submission_queue,
    pod_queue_name,
)
from volcanoweb.manifests.fields import Metadata
from volcanoweb.manifests.objects import Outcome, bump, check_existence, check_version, prepare, raise_if
from volcanoweb.manifests.pods import check_jdb_annotations, check_pod_spec, pod_requests
from volcanoweb.tenancy.access import Access
from volcanoweb.tenancy.models import Namespace


def _check_pod_queue(
    errors: Errors, access: Access, namespace: Namespace, annotations: dict[str, str], existing: Pod | None
) -> None:
    """A bare pod that names a queue (``scheduling.volcano.sh/queue-name``, on the pod or its namespace) gets
    a PodGroup in that queue from the PodGroup controller: the queue must pass the same checks as a Job's
    or a PodGroup's (exists for the caller, Open, a leaf, open to the namespace's tenant). A pod joining a
    PodGroup by name, or already grouped, uses that PodGroup's (admitted) queue."""
    if annotations.get(GROUP_ANNOTATION) or (existing is not None and existing.group_name):
        return
    named = annotations.get(POD_QUEUE_ANNOTATION)
    if existing is not None and existing.annotations.get(POD_QUEUE_ANNOTATION) == named:
        return
    queue = pod_queue_name(annotations, namespace.annotations)
    if not named and queue == "default":
        return
    where = f"metadata.annotations[{POD_QUEUE_ANNOTATION}]"
    check_submission_queue(errors, access, namespace.tenant, queue, kind="Pod", path=where)


@transaction.atomic
def apply_pod(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create a plain pod (or change its labels/annotations); it joins the PodGroup named by its
    ``scheduling.k8s.io/group-name`` annotation. Pod specs are immutable, as in Kubernetes."""
    info = parse.POD
    meta, namespace = prepare(access, doc, info, default_namespace)
    assert namespace is not None
    existing = Pod.objects.select_for_update(no_key=True).filter(namespace=namespace.name, name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    spec = doc.get("spec")
    check_pod_spec(errors, spec, "spec")
    check_jdb_annotations(errors, meta.annotations)
    raise_if(errors, info, meta.name)
    _check_pod_queue(errors, access, namespace, meta.annotations, existing)
    raise_if(errors, info, meta.name)
    assert isinstance(spec, dict)
    spec = {k: v for k, v in spec.items() if k != "nodeName"} if existing is not None else dict(spec)
    if existing is not None:
        return _update_pod(access, existing, meta, namespace, spec, errors)
    return _create_pod(access, meta, namespace, spec, errors)


def _update_pod(
    access: Access, existing: Pod, meta: Metadata, namespace: Namespace, spec: dict[str, Any], errors: Errors
) -> Outcome:
    """The update half of :func:`apply_pod`: only labels and annotations may change (``spec`` is the
    manifest's, without ``nodeName``)."""
    info = parse.POD
    stored = {k: v for k, v in existing.spec.items() if k != "nodeName"}
    if stored != spec:
        errors.add(
            "spec",
            "Forbidden: pod updates may not change fields other than labels and annotations",
            "FieldValueForbidden",
        )
        raise_if(errors, info, meta.name)
    if (existing.labels, existing.annotations) == (meta.labels, meta.annotations):
        return Outcome("unchanged", info.kind, meta.name, namespace.name, render.pod(existing))
    before = render.pod(existing)
    existing.labels, existing.annotations = meta.labels, meta.annotations
    existing.save(update_fields=["labels", "annotations", *bump(existing, spec_changed=False)])
    after = render.pod(existing)
    audit.record(access.user, "update", info.kind, existing.key, tenant=namespace.tenant, before=before, after=after)
    notify.changed(info.kind, existing, "update")
    return Outcome("configured", info.kind, meta.name, namespace.name, after)


def _create_pod(access: Access, meta: Metadata, namespace: Namespace, spec: dict[str, Any], errors: Errors) -> Outcome:
    """The create half of :func:`apply_pod`: admit its priority class, then store it in the PodGroup its
    annotation names (when that PodGroup exists already)."""
    info = parse.POD
    priority = check_priority_class(errors, spec.get("priorityClassName"), "spec.priorityClassName")
    raise_if(errors, info, meta.name)
    group_name = meta.annotations.get(GROUP_ANNOTATION, "")
    pod = Pod.objects.create(
        namespace=namespace.name,
        name=meta.name,
        tenant=namespace.tenant,
        labels=meta.labels,
        annotations=meta.annotations,
        group_name=group_name,
        podgroup=PodGroup.objects.filter(namespace=namespace.name, name=group_name).first() if group_name else None,
        scheduler_name=spec.get("schedulerName") or "default-scheduler",
        priority_class_name=spec.get("priorityClassName") or "",
        priority=priority,
        requests=pod_requests(spec),
        spec=spec,
        node_name="",
        owner_references=meta.owner_references,
    )
    after = render.pod(pod)
    audit.record(access.user, "create", info.kind, pod.key, tenant=namespace.tenant, after=after)
    notify.changed(info.kind, pod, "create")
    return Outcome("created", info.kind, meta.name, namespace.name, after)


@transaction.atomic
def delete_pod(access: Access, namespace: str, name: str) -> Outcome:
    """Delete a pod. A job's pod is deleted as on Volcano: the cluster removes it and the job controller sees
    it gone as a ``PodEvicted`` event, so the job's policies decide what happens (by default the controller
    creates it again)."""
    pod = get_for_write(access, Pod, parse.POD, namespace, name, "delete")
    before = render.pod(pod)
    if ((pod.status or {}).get("backendUid") or pod.node_name) and get_backend().delete_pod(namespace, name):
        # In the cluster: it holds its node until the cluster removes it; the cluster sync then
        # deletes the row (deleting the row alone left a pod running that the scheduler ignored).
        pod.deletion_timestamp = pod.deletion_timestamp or timezone.now()
        pod.save(update_fields=["deletion_timestamp", *bump(pod, spec_changed=False)])
    else:
        pod.delete()
    audit.record(access.user, "delete", "Pod", f"{namespace}/{name}", tenant=pod.tenant, before=before)
    notify.changed("Pod", pod, "delete")
    return Outcome("deleted", "Pod", name, namespace, before)
