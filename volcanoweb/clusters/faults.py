"""Fault injection on the cluster: fail, recover and cordon nodes, end and evict pods.

User-initiated changes (the API's node and pod actions, the dashboard, the admin): each checks the caller's
rights (platform admins for nodes; platform or tenant admins of the pod for pods), asks the backend (the
simulated cluster for failures and ends; every backend for cordon and evict), records an audit entry and
mirrors the result at once (:func:`volcanoweb.clusters.services.sync_from_backend`).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from volcanoweb.audit import services as audit
from volcanoweb.clusters import services
from volcanoweb.clusters.backend import get_backend
from volcanoweb.clusters.backends.base import ClusterBackend
from volcanoweb.clusters.backends.base import Conflict as BackendConflict
from volcanoweb.clusters.backends.base import NotFound as BackendNotFound
from volcanoweb.clusters.models import Node
from volcanoweb.core.errors import BadRequest, Conflict, Forbidden, NotFound
from volcanoweb.jobs.models import Pod
from volcanoweb.tenancy.access import Access


def _require_sim(backend: ClusterBackend, method: str) -> Any:
    func = getattr(backend, method, None)
    if func is None:
        raise BadRequest(f"the {backend.name or 'current'} cluster backend does not support {method.replace('_', ' ')}")
    return func


def _node_or_404(name: str) -> Node:
    node = Node.objects.filter(name=name).first()
    if node is None:
        raise NotFound(f'nodes "{name}" not found', kind="Node", name=name)
    return node


def fail_node(access: Access, name: str, *, evict_pods: bool = True, backend: ClusterBackend | None = None) -> Node:
    """Make a simulated node fail (NotReady, its pods lost); platform admins only."""
    if not access.platform_admin:
        raise Forbidden(
            f'nodes "{name}" is forbidden: User "{access.username}" cannot fail nodes', kind="Node", name=name
        )
    backend = backend or get_backend()
    _node_or_404(name)
    _require_sim(backend, "fail_node")(name, evict_pods=evict_pods)
    with transaction.atomic():
        audit.record(access.user, "fail", "Node", name, source="api", message=f"evict_pods={evict_pods}")
    services.sync_from_backend(backend)
    return _node_or_404(name)


def recover_node(access: Access, name: str, *, backend: ClusterBackend | None = None) -> Node:
    """Make a failed simulated node Ready again; platform admins only."""
    if not access.platform_admin:
        raise Forbidden(
            f'nodes "{name}" is forbidden: User "{access.username}" cannot recover nodes', kind="Node", name=name
        )
    backend = backend or get_backend()
    _node_or_404(name)
    _require_sim(backend, "recover_node")(name)
    with transaction.atomic():
        audit.record(access.user, "recover", "Node", name, source="api")
    services.sync_from_backend(backend)
    return _node_or_404(name)


def cordon_node(
    access: Access, name: str, *, unschedulable: bool = True, backend: ClusterBackend | None = None
) -> Node:
    """Cordon a node (no new pods are placed on it; those running stay) or uncordon it; platform admins only.
    Works on every backend: ``spec.unschedulable`` on Kubernetes, the node's state on the simulated cluster."""
    verb = "cordon" if unschedulable else "uncordon"
    if not access.platform_admin:
        raise Forbidden(
            f'nodes "{name}" is forbidden: User "{access.username}" cannot {verb} nodes', kind="Node", name=name
        )
    backend = backend or get_backend()
    _node_or_404(name)
    _require_sim(backend, "cordon")(name, unschedulable)
    with transaction.atomic():
        audit.record(access.user, verb, "Node", name, source="api")
    services.sync_from_backend(backend)
    return _node_or_404(name)


def _pod_for_injection(access: Access, namespace: str, name: str, verb: str) -> Pod:
    pod = Pod.objects.filter(namespace=namespace, name=name).first()
    if pod is None or not access.can_read(pod.tenant_id):
        raise NotFound(f'pods "{name}" not found', kind="Pod", name=name)
    if not access.is_tenant_admin(pod.tenant_id):
        raise Forbidden(
            f'pods "{name}" is forbidden: User "{access.username}" cannot {verb} pods in the namespace "{namespace}"',
            kind="Pod",
            name=name,
        )
    return pod


def end_pod(
    access: Access,
    namespace: str,
    name: str,
    exit_code: int,
    *,
    restart: bool = False,
    backend: ClusterBackend | None = None,
) -> Pod:
    """End a running simulated pod now with ``exit_code`` (platform admins, tenant admins of the pod).

    With ``restart`` only the main container exits: the pod's restartPolicy decides (OnFailure and a
    non-zero code, or Always: restarted in place, restartCount + 1; else the pod ends)."""
    pod = _pod_for_injection(access, namespace, name, "end")
    backend = backend or get_backend()
    fail = _require_sim(backend, "restart_container" if restart else "fail_pod")
    try:
        if restart:
            fail(namespace, name, exit_code=exit_code, reason="Error" if exit_code else "Completed")
        elif exit_code == 0:
            fail(namespace, name, exit_code=0, reason="Completed")
        else:
            fail(namespace, name, exit_code=exit_code, reason="Error")
    except BackendNotFound:
        raise Conflict(f'pod "{name}" is not running in the cluster', kind="Pod", name=name) from None
    except BackendConflict as exc:
        raise Conflict(str(exc), kind="Pod", name=name) from None
    with transaction.atomic():
        audit.record(
            access.user,
            "end",
            "Pod",
            pod.key,
            tenant=pod.tenant,
            source="api",
            message=f"exitCode={exit_code}" + (" (container restart)" if restart else ""),
        )
    services.sync_from_backend(backend)
    return Pod.objects.filter(pk=pod.pk).first() or pod


def evict_pod(access: Access, namespace: str, name: str, *, backend: ClusterBackend | None = None) -> Pod:
    """Evict a pod through the backend (platform admins, tenant admins of the pod)."""
    pod = _pod_for_injection(access, namespace, name, "evict")
    backend = backend or get_backend()
    try:
        backend.evict(namespace, name)
    except BackendNotFound:
        raise Conflict(f'pod "{name}" is not running in the cluster', kind="Pod", name=name) from None
    with transaction.atomic():
        audit.record(access.user, "evict", "Pod", pod.key, tenant=pod.tenant, source="api")
    services.sync_from_backend(backend)
    return Pod.objects.filter(pk=pod.pk).first() or pod
