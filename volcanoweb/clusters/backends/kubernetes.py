"""KubernetesBackend: a real cluster through the official ``kubernetes`` client.

* Pods are created with their ``schedulerName``, the PodGroup annotation
  ``scheduling.k8s.io/group-name`` and owner references (see
  :func:`pod_to_k8s`); Services, ConfigMaps and Secrets are created
  idempotently (409 → "already there").
* Binding goes through the ``pods/binding`` subresource, called with
  ``_preload_content=False`` because the client cannot deserialise the
  apiserver's Status reply into ``V1Binding``; eviction through the
  ``policy/v1`` Eviction API (429 → :class:`EvictionBlocked`).
* Pods and nodes are mirrored by two *reflectors* (:mod:`.kube_reflector`,
  background threads started by the first
  :meth:`KubernetesBackend.poll_events`): list, then watch from
  the list's resourceVersion with ``timeoutSeconds``; a stream that ends is
  re-opened from the last resourceVersion seen; 410 Gone, connection loss
  and every ``resync_period`` trigger a relist whose differences with the
  cache are reported as ordinary ADDED/MODIFIED/DELETED events. While the
  API server is unreachable the reflectors retry with capped exponential
  backoff and :meth:`KubernetesBackend.poll_events` raises
  :class:`Unavailable`; they never die.
* Pods created by other operators with ``schedulerName: volcano`` (Spark,
  Kubeflow) are listed with a server-side field selector
  (``list_pods(scheduler_name="volcano")``) and grouped with
  :func:`.grouping.group_pods`.

All responses are read as raw JSON (``_preload_content=False``) and converted
by :func:`~.kube_wire.pod_from_k8s` / :func:`~.kube_wire.node_from_k8s`
(:mod:`.kube_wire`, re-exported here), which is faster than the client's model
deserialisation and keeps the camelCase manifest shapes.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from volcanoweb.core import dryrun

from .base import (
    BackendEvent,
    ClusterBackend,
    Conflict,
    EvictionBlocked,
    NodeInfo,
    NodeMetrics,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
    Unavailable,
)
from .kube_reflector import Kind, Reflector
from .kube_wire import (
    TRANSPORT_ERRORS,
    node_from_k8s,
    node_metrics_from_k8s,
    owner_to_k8s,
    pod_from_k8s,
    pod_to_k8s,
    translate_error,
)

__all__ = ["KubernetesBackend", "node_from_k8s", "pod_from_k8s", "pod_to_k8s"]

log = logging.getLogger(__name__)

#: Seconds a followed log may stay silent before the read gives up.
FOLLOW_READ_TIMEOUT = 3600


class KubernetesBackend(ClusterBackend):
    """A Kubernetes API server behind the :class:`ClusterBackend` interface."""

    name = "kubernetes"

    def __init__(
        self,
        configuration: client.Configuration | None = None,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        resync_period: float = 300.0,
        watch_timeout: int = 60,
        request_timeout: float = 10.0,
        backoff: tuple[float, float] = (0.2, 10.0),
    ) -> None:
        if configuration is None:
            configuration = client.Configuration()
            if in_cluster:
                config.load_incluster_config(client_configuration=configuration)
            else:
                config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
        self.configuration = configuration
        self.api_client = client.ApiClient(configuration)
        self.core = client.CoreV1Api(self.api_client)
        self.policy = client.PolicyV1Api(self.api_client)
        self.custom = client.CustomObjectsApi(self.api_client)
        self.resync_period = resync_period
        self.watch_timeout = watch_timeout
        self.request_timeout = request_timeout
        self.backoff = backoff
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._events: list[BackendEvent] = []
        self._unavailable: dict[str, str] = {}
        self._reflectors: dict[Kind, Reflector] = {}

    # ------------------------------------------------------------ calls

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call the API returning parsed JSON; translate errors. During a dry-run request
        (:func:`volcanoweb.core.dryrun.active`) writes go with ``dryRun=All``: the cluster validates, keeps nothing."""
        if dryrun.active() and not fn.__name__.startswith(("list_", "read_")):
            kwargs = {**kwargs, "dry_run": "All"}
        try:
            response = fn(*args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs)
        except ApiException as exc:
            if exc.status == 429 and what.startswith("evict"):
                raise EvictionBlocked(f"{what}: 429 {exc.reason}") from exc
            raise translate_error(exc, what) from exc
        except TRANSPORT_ERRORS as exc:
            raise translate_error(exc, what) from exc
        body = response.data
        return json.loads(body) if body else {}

    # ------------------------------------------------------------ reads

    def list_nodes(self) -> list[NodeInfo]:
        data = self._call("list nodes", self.core.list_node)
        nodes = [node_from_k8s(item) for item in data.get("items") or []]
        return sorted(nodes, key=lambda n: n.name)

    def node_metrics(self) -> list[NodeMetrics]:
        """metrics-server's ``metrics.k8s.io/v1beta1`` NodeMetrics; none when the metrics API is not served."""
        try:
            data = self._call(
                "list node metrics", self.custom.list_cluster_custom_object, "metrics.k8s.io", "v1beta1", "nodes"
            )
        except NotFound:
            return []
        out = [m for m in (node_metrics_from_k8s(item) for item in data.get("items") or []) if m is not None]
        return sorted(out, key=lambda m: m.name)

    def list_pods(self, scheduler_name: str | None = None, namespace: str | None = None) -> list[PodInfo]:
        kwargs: dict[str, Any] = {}
        if scheduler_name is not None:
            kwargs["field_selector"] = f"spec.schedulerName={scheduler_name}"
        if namespace is None:
            data = self._call("list pods", self.core.list_pod_for_all_namespaces, **kwargs)
        else:
            data = self._call("list pods", self.core.list_namespaced_pod, namespace, **kwargs)
        pods = [pod_from_k8s(item) for item in data.get("items") or []]
        return sorted(pods, key=lambda p: p.key)

    def get_pod(self, namespace: str, name: str) -> PodInfo:
        data = self._call(f"get pod {namespace}/{name}", self.core.read_namespaced_pod, name, namespace)
        return pod_from_k8s(data)

    def _log_kwargs(self, container: str | None, tail_lines: int | None, previous: bool) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if container:
            kwargs["container"] = container
        if tail_lines is not None:
            kwargs["tail_lines"] = tail_lines
        if previous:
            kwargs["previous"] = True
        return kwargs

    def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
    ) -> str:
        """``read_namespaced_pod_log`` (tail, previous container); a 400 for a missing instance is NotFound."""
        what = f"read log of pod {namespace}/{name}"
        try:
            # Annotated ``str`` by the client; with _preload_content=False it is the urllib3 response.
            response: Any = self.core.read_namespaced_pod_log(
                name,
                namespace,
                _preload_content=False,
                _request_timeout=self.request_timeout,
                **self._log_kwargs(container, tail_lines, previous),
            )
        except ApiException as exc:
            if exc.status == 400:
                raise NotFound(f"{what}: {exc.reason}: {exc.body or ''}".strip()) from exc
            raise translate_error(exc, what) from exc
        except TRANSPORT_ERRORS as exc:
            raise translate_error(exc, what) from exc
        body = response.data
        return body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")

    def follow_pod_log(
        self, namespace: str, name: str, *, container: str | None = None, tail_lines: int | None = None
    ) -> Iterator[str]:
        """``read_namespaced_pod_log(follow=True)``: lines as the kubelet streams them, until the container ends."""
        what = f"follow log of pod {namespace}/{name}"
        try:
            response: Any = self.core.read_namespaced_pod_log(  # the urllib3 response, as above
                name,
                namespace,
                follow=True,
                _preload_content=False,
                _request_timeout=(self.request_timeout, FOLLOW_READ_TIMEOUT),
                **self._log_kwargs(container, tail_lines, False),
            )
        except TRANSPORT_ERRORS as exc:
            raise translate_error(exc, what) from exc
        try:
            yield from iter_resp_lines(response)
        finally:
            response.close()
            response.release_conn()

    # ------------------------------------------------------------ pods

    def create_pod(self, spec: PodSpec) -> PodInfo:
        data = self._call(
            f"create pod {spec.namespace}/{spec.name}",
            self.core.create_namespaced_pod,
            spec.namespace,
            pod_to_k8s(spec),
        )
        return pod_from_k8s(data)

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        kwargs: dict[str, Any] = {}
        if grace_period_seconds is not None:
            kwargs["grace_period_seconds"] = grace_period_seconds
        try:
            self._call(
                f"delete pod {namespace}/{name}",
                self.core.delete_namespaced_pod,
                name,
                namespace,
                **kwargs,
            )
        except NotFound:
            return False
        return True

    def bind(self, namespace: str, name: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self._call(
            f"bind pod {namespace}/{name} to {node}",
            self.core.create_namespaced_pod_binding,
            name,
            namespace,
            body,
        )

    def evict(self, namespace: str, name: str) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        what = f"evict pod {namespace}/{name}"
        self._call(what, self.core.create_namespaced_pod_eviction, name, namespace, body)

    def cordon(self, name: str, unschedulable: bool = True) -> None:
        """Set the node's ``spec.unschedulable`` (``kubectl cordon`` / ``uncordon``): a merge patch."""
        self._call(f"cordon node {name}", self.core.patch_node, name, {"spec": {"unschedulable": unschedulable}})

    def patch_pod_annotations(self, namespace: str, name: str, annotations: dict[str, str | None]) -> PodInfo:
        data = self._call(
            f"patch pod {namespace}/{name}",
            self.core.patch_namespaced_pod,
            name,
            namespace,
            {"metadata": {"annotations": annotations}},
        )
        return pod_from_k8s(data)

    # ------------------------------------------------------------ services etc.

    def _ensure(self, what: str, fn: Callable[..., Any], namespace: str, body: Any) -> bool:
        try:
            self._call(what, fn, namespace, body)
        except Conflict:
            return False
        return True

    def _remove(self, what: str, fn: Callable[..., Any], namespace: str, name: str) -> bool:
        try:
            self._call(what, fn, name, namespace)
        except NotFound:
            return False
        return True

    @staticmethod
    def _metadata(
        namespace: str, name: str, labels: dict[str, str] | None, owner: OwnerReference | None
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": namespace}
        if labels:
            meta["labels"] = dict(labels)
        if owner is not None:
            meta["ownerReferences"] = [owner_to_k8s(owner)]
        return meta

    def ensure_service(self, spec: ServiceSpec) -> bool:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": self._metadata(spec.namespace, spec.name, spec.labels, spec.owner),
            "spec": {
                "selector": dict(spec.selector),
                "ports": list(spec.ports),
                "publishNotReadyAddresses": spec.publish_not_ready_addresses,
            },
        }
        if spec.headless:
            body["spec"]["clusterIP"] = "None"
        what = f"create service {spec.namespace}/{spec.name}"
        return self._ensure(what, self.core.create_namespaced_service, spec.namespace, body)

    def delete_service(self, namespace: str, name: str) -> bool:
        what = f"delete service {namespace}/{name}"
        return self._remove(what, self.core.delete_namespaced_service, namespace, name)

    def ensure_config_map(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
    ) -> bool:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": self._metadata(namespace, name, labels, owner),
            "data": dict(data),
        }
        what = f"create configmap {namespace}/{name}"
        return self._ensure(what, self.core.create_namespaced_config_map, namespace, body)

    def delete_config_map(self, namespace: str, name: str) -> bool:
        what = f"delete configmap {namespace}/{name}"
        return self._remove(what, self.core.delete_namespaced_config_map, namespace, name)

    def ensure_secret(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
        type: str = "Opaque",
    ) -> bool:
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": type,
            "metadata": self._metadata(namespace, name, labels, owner),
            "data": encoded,
        }
        what = f"create secret {namespace}/{name}"
        return self._ensure(what, self.core.create_namespaced_secret, namespace, body)

    def delete_secret(self, namespace: str, name: str) -> bool:
        what = f"delete secret {namespace}/{name}"
        return self._remove(what, self.core.delete_namespaced_secret, namespace, name)

    # ------------------------------------------------------------ events

    def start(self) -> None:
        """Start the pod and node reflectors (idempotent)."""
        with self._lock:
            if self._reflectors:
                return
            self._reflectors = {
                "node": Reflector(self, "node", self.core.list_node, node_from_k8s),
                "pod": Reflector(self, "pod", self.core.list_pod_for_all_namespaces, pod_from_k8s),
            }
        for reflector in self._reflectors.values():
            reflector.start()

    def wait_synced(self, timeout: float = 10.0) -> bool:
        """Wait until both reflectors have listed once."""
        self.start()
        deadline = time.monotonic() + timeout
        return all(r.synced.wait(max(0.0, deadline - time.monotonic())) for r in self._reflectors.values())

    @property
    def available(self) -> bool:
        with self._lock:
            return not self._unavailable

    def cached_pods(self) -> list[PodInfo]:
        """Pods as last seen by the watch (no API call)."""
        reflector = self._reflectors.get("pod")
        pods = list(reflector.cache.values()) if reflector else []
        return sorted((p for p in pods if isinstance(p, PodInfo)), key=lambda p: p.key)

    def poll_events(self, timeout: float = 0.0) -> list[BackendEvent]:
        self.start()
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            while not self._events:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(remaining)
            if self._events:
                events, self._events = self._events, []
                return events
            if self._unavailable:
                raise Unavailable("; ".join(sorted(self._unavailable.values())))
            return []

    def _emit(self, events: list[BackendEvent]) -> None:
        if not events:
            return
        with self._lock:
            self._events.extend(events)
            self._changed.notify_all()

    def _set_available(self, kind: str, error: str | None) -> None:
        with self._lock:
            if error is None:
                if self._unavailable.pop(kind, None) is not None:
                    log.info("%s reflector reconnected", kind)
            else:
                self._unavailable[kind] = error
            self._changed.notify_all()

    def close(self) -> None:
        reflectors, self._reflectors = list(self._reflectors.values()), {}
        for reflector in reflectors:
            reflector.stop()
        self.api_client.close()
