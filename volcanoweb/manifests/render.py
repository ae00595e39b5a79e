"""Model rows → manifests in Volcano's own shape (apiVersion, kind, metadata, spec, status)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from volcanoweb.manifests import parse
from volcanoweb.manifests.corepod import SCHEDULED_BY_ANNOTATION, pod_status
from volcanoweb.manifests.parse import KindInfo


def timestamp(value: datetime | None) -> str | None:
    """Return an RFC 3339 UTC timestamp (``2026-01-02T03:04:05Z``) or None."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def controller_reference(info: KindInfo, obj: Any) -> dict[str, Any]:
    """The ownerReference an object's controller puts on what it creates (a job's pods and PodGroup, a
    CronJob's or JobFlow's jobs): ``controller`` and ``blockOwnerDeletion`` set, as Kubernetes' controllers do."""
    return {
        "apiVersion": info.api_version,
        "kind": info.kind,
        "name": obj.name,
        "uid": str(obj.uid),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def metadata(obj: Any, *, namespaced: bool) -> dict[str, Any]:
    """Return ``metadata`` for a KubeObject row."""
    meta: dict[str, Any] = {"name": obj.name}
    if namespaced:
        meta["namespace"] = obj.namespace
    meta["uid"] = str(obj.uid)
    meta["resourceVersion"] = str(obj.resource_version)
    meta["generation"] = obj.generation
    meta["creationTimestamp"] = timestamp(obj.created_at)
    if obj.labels:
        meta["labels"] = dict(obj.labels)
    if obj.annotations:
        meta["annotations"] = dict(obj.annotations)
    owners = getattr(obj, "owner_references", None)
    if owners:
        meta["ownerReferences"] = list(owners)
    finalizers = getattr(obj, "finalizers", None)
    if finalizers:
        meta["finalizers"] = list(finalizers)
    deletion = getattr(obj, "deletion_timestamp", None)
    if deletion is not None:
        meta["deletionTimestamp"] = timestamp(deletion)
    return meta


def _envelope(info: KindInfo, obj: Any) -> dict[str, Any]:
    return {"apiVersion": info.api_version, "kind": info.kind, "metadata": metadata(obj, namespaced=info.namespaced)}


def job(obj: Any) -> dict[str, Any]:
    """Return a Job manifest."""
    return {**_envelope(parse.JOB, obj), "spec": obj.spec, "status": obj.status or {"state": {"phase": obj.phase}}}


def podgroup(obj: Any) -> dict[str, Any]:
    """Return a PodGroup manifest."""
    return {**_envelope(parse.PODGROUP, obj), "spec": obj.spec, "status": {"phase": obj.phase, **(obj.status or {})}}


def pod(obj: Any) -> dict[str, Any]:
    """Return a core v1 Pod (phase and nodeName from the columns, the kubelet's status: ``corepod``)."""
    spec = dict(obj.spec)
    if obj.node_name:
        spec["nodeName"] = obj.node_name
    status = {**(obj.status or {}), "phase": obj.phase}
    if getattr(obj, "started_at", None) is not None:
        status["startTime"] = timestamp(obj.started_at)
    out = {**_envelope(parse.POD, obj), "spec": spec}
    run = (obj.status or {}).get("scheduledBy")
    if run is not None:
        out["metadata"]["annotations"] = {**out["metadata"].get("annotations", {}), SCHEDULED_BY_ANNOTATION: str(run)}
    out["status"] = pod_status(obj, status, out["metadata"].get("creationTimestamp"))
    return out


def resourcequota(obj: Any) -> dict[str, Any]:
    """Return a ResourceQuota manifest (``status.hard`` mirrors the spec, as the quota controller would)."""
    return {**_envelope(parse.RESOURCEQUOTA, obj), "spec": obj.spec, "status": {"hard": dict(obj.hard)}}


def priorityclass(obj: Any) -> dict[str, Any]:
    """Return a PriorityClass manifest (no spec: the fields sit at the top level)."""
    out = {**_envelope(parse.PRIORITYCLASS, obj), "value": obj.value, "globalDefault": obj.global_default}
    if obj.description:
        out["description"] = obj.description
    out["preemptionPolicy"] = obj.preemption_policy
    return out


def hypernode(obj: Any) -> dict[str, Any]:
    """Return a HyperNode manifest (``spec.tier``, ``spec.tierName``, ``spec.members``)."""
    spec: dict[str, Any] = {"tier": obj.tier, "members": obj.members}
    if obj.tier_name:
        spec["tierName"] = obj.tier_name
    return {**_envelope(parse.HYPERNODE, obj), "spec": spec, "status": {}}


def queue(obj: Any) -> dict[str, Any]:
    """Return a Queue manifest; status carries state, allocated and the PodGroup counts."""
    status: dict[str, Any] = {"state": obj.state}
    if obj.allocated:
        status["allocated"] = obj.allocated
    for key in ("pending", "running", "inqueue", "completed", "unknown"):
        value = getattr(obj, key)
        if value:
            status[key] = value
    return {**_envelope(parse.QUEUE, obj), "spec": obj.spec, "status": status}


def cronjob(obj: Any) -> dict[str, Any]:
    """Return a CronJob manifest."""
    return {**_envelope(parse.CRONJOB, obj), "spec": obj.spec, "status": obj.status or {}}


def jobflow(obj: Any) -> dict[str, Any]:
    """Return a JobFlow manifest."""
    return {**_envelope(parse.JOBFLOW, obj), "spec": obj.spec, "status": obj.status or {"state": {"phase": obj.phase}}}


def jobtemplate(obj: Any) -> dict[str, Any]:
    """Return a JobTemplate manifest."""
    return {**_envelope(parse.JOBTEMPLATE, obj), "spec": obj.spec, "status": obj.status or {}}
