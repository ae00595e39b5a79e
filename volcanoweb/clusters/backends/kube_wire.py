"""Wire conversion for the Kubernetes backend: Kubernetes objects (raw JSON, camelCase) to and from the
backend's dataclasses, and API errors to :class:`~.base.BackendError`.

Responses are read as raw JSON (``_preload_content=False``) and converted by :func:`pod_from_k8s` /
:func:`node_from_k8s`, which is faster than the client's model deserialisation and keeps the camelCase
manifest shapes; :func:`pod_to_k8s` writes the pod the backend creates.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from scheduler.decode import timestamp as scheduler_timestamp
from scheduler.quantity import parse_resource

from .base import (
    BackendError,
    Conflict,
    Container,
    NodeInfo,
    NodeMetrics,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    Taint,
    Unavailable,
    effective_requests,
)

# ---------------------------------------------------------------- conversions


def _timestamp(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def owner_to_k8s(owner: OwnerReference) -> dict[str, Any]:
    return {
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": owner.controller,
        "blockOwnerDeletion": owner.block_owner_deletion,
    }


def _owner_from_k8s(refs: list[dict[str, Any]] | None) -> OwnerReference | None:
    for ref in refs or []:
        if ref.get("controller"):
            return OwnerReference(
                kind=ref.get("kind", ""),
                name=ref.get("name", ""),
                uid=ref.get("uid", ""),
                api_version=ref.get("apiVersion", ""),
                controller=True,
                block_owner_deletion=bool(ref.get("blockOwnerDeletion", False)),
            )
    return None


def _container_to_k8s(c: Container) -> dict[str, Any]:
    body: dict[str, Any] = {"name": c.name, "image": c.image}
    if c.command:
        body["command"] = list(c.command)
    if c.args:
        body["args"] = list(c.args)
    if c.env:
        body["env"] = [{"name": k, "value": v} for k, v in c.env.items()]
    resources: dict[str, Any] = {}
    if c.requests:
        resources["requests"] = dict(c.requests)
    if c.limits:
        resources["limits"] = dict(c.limits)
    if resources:
        body["resources"] = resources
    if c.volume_mounts:
        mounts = []
        for m in c.volume_mounts:
            mount: dict[str, Any] = {"name": m.name, "mountPath": m.mount_path}
            if m.read_only:
                mount["readOnly"] = True
            if m.sub_path:
                mount["subPath"] = m.sub_path
            mounts.append(mount)
        body["volumeMounts"] = mounts
    if c.ports:
        body["ports"] = list(c.ports)
    return body


def _container_from_k8s(data: dict[str, Any]) -> Container:
    resources = data.get("resources") or {}
    return Container(
        name=data.get("name", ""),
        image=data.get("image", ""),
        requests=dict(resources.get("requests") or {}),
        limits=dict(resources.get("limits") or {}),
    )


def pod_to_k8s(spec: PodSpec) -> dict[str, Any]:
    """The Pod manifest (camelCase JSON) for a :class:`PodSpec`."""
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace}
    if spec.labels:
        metadata["labels"] = dict(spec.labels)
    if spec.annotations:
        metadata["annotations"] = dict(spec.annotations)
    if spec.owner is not None:
        metadata["ownerReferences"] = [owner_to_k8s(spec.owner)]
    body: dict[str, Any] = {
        "schedulerName": spec.scheduler_name,
        "restartPolicy": spec.restart_policy,
        "containers": [_container_to_k8s(c) for c in spec.containers],
    }
    if spec.init_containers:
        body["initContainers"] = [_container_to_k8s(c) for c in spec.init_containers]
    if spec.volumes:
        body["volumes"] = [{"name": v.name, **v.source} for v in spec.volumes]
    if spec.node_selector:
        body["nodeSelector"] = dict(spec.node_selector)
    if spec.tolerations:
        body["tolerations"] = list(spec.tolerations)
    if spec.affinity:
        body["affinity"] = spec.affinity
    if spec.priority_class_name:
        body["priorityClassName"] = spec.priority_class_name
    if spec.hostname:
        body["hostname"] = spec.hostname
    if spec.subdomain:
        body["subdomain"] = spec.subdomain
    if spec.service_account_name:
        body["serviceAccountName"] = spec.service_account_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}


def pod_from_k8s(data: dict[str, Any]) -> PodInfo:
    """A :class:`PodInfo` from a Pod's JSON."""
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    exit_code: int | None = None
    reason = status.get("reason") or ""
    message = status.get("message") or ""
    finished_at: float | None = None
    restarts = sum(
        int(c.get("restartCount") or 0)
        for c in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    )
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            exit_code = terminated.get("exitCode")
            reason = reason or terminated.get("reason") or ""
            message = message or terminated.get("message") or ""
            finished_at = _timestamp(terminated.get("finishedAt"))
            break
    return PodInfo(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        phase=status.get("phase") or "Pending",
        node_name=spec.get("nodeName") or "",
        exit_code=exit_code,
        reason=reason,
        message=message,
        annotations=dict(meta.get("annotations") or {}),
        labels=dict(meta.get("labels") or {}),
        scheduler_name=spec.get("schedulerName") or "default-scheduler",
        requests=effective_requests(
            [_container_from_k8s(c) for c in spec.get("containers") or []],
            [_container_from_k8s(c) for c in spec.get("initContainers") or []],
        ),
        deleting=bool(meta.get("deletionTimestamp")),
        resource_version=str(meta.get("resourceVersion", "")),
        owner=_owner_from_k8s(meta.get("ownerReferences")),
        priority_class_name=spec.get("priorityClassName") or "",
        created_at=_timestamp(meta.get("creationTimestamp")),
        started_at=_timestamp(status.get("startTime")),
        finished_at=finished_at,
        restart_count=restarts,
    )


def node_from_k8s(data: dict[str, Any]) -> NodeInfo:
    """A :class:`NodeInfo` from a Node's JSON.

    ``ready`` follows the Ready condition; a node reporting no Ready condition
    at all counts as ready (virtual nodes often report none).
    """
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    ready = True
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
    return NodeInfo(
        name=meta.get("name", ""),
        allocatable={k: str(v) for k, v in (status.get("allocatable") or {}).items()},
        labels=dict(meta.get("labels") or {}),
        taints=[Taint.from_dict(t) for t in spec.get("taints") or []],
        unschedulable=bool(spec.get("unschedulable", False)),
        ready=ready,
        resource_version=str(meta.get("resourceVersion", "")),
    )


# ---------------------------------------------------------------- errors


def node_metrics_from_k8s(item: Mapping[str, Any]) -> NodeMetrics | None:
    """A ``metrics.k8s.io/v1beta1`` NodeMetrics object (None when it names no node or its usage is unreadable)."""
    meta = item.get("metadata") or {}
    usage = item.get("usage") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    try:
        cpu, memory = parse_resource("cpu", usage.get("cpu", "0")), parse_resource("memory", usage.get("memory", "0"))
        when = scheduler_timestamp(item.get("timestamp")) if item.get("timestamp") else time.time()
    except ValueError:
        return None
    return NodeMetrics(name, cpu, memory, when)


def translate_error(exc: Exception, what: str) -> BackendError:
    if isinstance(exc, ApiException):
        status = exc.status or 0
        text = f"{what}: {status} {exc.reason}"
        if status == 404:
            return NotFound(text)
        if status == 409:
            return Conflict(text)
        if status == 0 or status == 429 or status >= 500:
            return Unavailable(text)
        return BackendError(text)
    return Unavailable(f"{what}: {type(exc).__name__}: {exc}")


#: The exceptions a call or a watch stream raises when the API server cannot be reached or answers an error.
TRANSPORT_ERRORS = (ApiException, urllib3.exceptions.HTTPError, OSError)
