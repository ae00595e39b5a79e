"""KubernetesBackend: a real cluster through the official ``kubernetes`` client.

* Pods are created with their ``schedulerName``, the PodGroup annotation
  ``scheduling.k8s.io/group-name`` and owner references (see
  :func:`pod_to_k8s`); Services, ConfigMaps and Secrets are created
  idempotently (409 → "already there").
* Binding goes through the ``pods/binding`` subresource, called with
  ``_preload_content=False`` because the client cannot deserialise the
  apiserver's Status reply into ``V1Binding``; eviction through the
  ``policy/v1`` Eviction API (429 → :class:`EvictionBlocked`).
* Pods and nodes are mirrored by two *reflectors* (background threads started
  by the first :meth:`KubernetesBackend.poll_events`): list, then watch from
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
  :func:`.base.group_pods`.

All responses are read as raw JSON (``_preload_content=False``) and converted
by :func:`pod_from_k8s` / :func:`node_from_k8s`, which is faster than the
client's model deserialisation and keeps the camelCase manifest shapes.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from .base import (
    BackendError,
    BackendEvent,
    ClusterBackend,
    Conflict,
    Container,
    EventType,
    EvictionBlocked,
    NodeInfo,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
    Taint,
    Unavailable,
    effective_requests,
)

log = logging.getLogger(__name__)

Kind = Literal["pod", "node"]


# ---------------------------------------------------------------- conversions


def _timestamp(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _owner_to_k8s(owner: OwnerReference) -> dict[str, Any]:
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
        metadata["ownerReferences"] = [_owner_to_k8s(spec.owner)]
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


def _translate(exc: Exception, what: str) -> BackendError:
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


#: Seconds a followed log may stay silent before the read gives up.
FOLLOW_READ_TIMEOUT = 3600

_TRANSPORT_ERRORS = (ApiException, urllib3.exceptions.HTTPError, OSError)


def _interrupt(response: Any) -> None:
    """Unblock a thread reading a streaming response (close alone does not)."""
    connection = getattr(response, "connection", None)
    sock = getattr(connection, "sock", None)
    try:
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
        response.close()
    except Exception:  # best effort, from another thread
        pass


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): relist."""


# ---------------------------------------------------------------- reflector


class _Reflector:
    """List + watch one kind into a cache, reporting changes to the backend."""

    def __init__(
        self,
        backend: KubernetesBackend,
        kind: Kind,
        list_fn: Callable[..., Any],
        convert: Callable[[dict[str, Any]], PodInfo | NodeInfo],
    ) -> None:
        self.backend = backend
        self.kind: Kind = kind
        self.list_fn = list_fn
        self.convert = convert
        self.cache: dict[tuple[str, str], PodInfo | NodeInfo] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self.lists = 0
        self.watches = 0
        self._stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name=f"kube-reflector-{kind}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            _interrupt(response)
        self._thread.join(timeout=10)

    def _key(self, obj: PodInfo | NodeInfo) -> tuple[str, str]:
        return (obj.namespace, obj.name) if isinstance(obj, PodInfo) else ("", obj.name)

    def _run(self) -> None:
        backend = self.backend
        delay = backend.backoff[0]
        need_list = True
        last_list = 0.0
        while not self._stop.is_set():
            try:
                if need_list or time.monotonic() - last_list >= backend.resync_period:
                    self._relist()
                    last_list = time.monotonic()
                    need_list = False
                backend._set_available(self.kind, None)
                delay = backend.backoff[0]
                self._watch(deadline=last_list + backend.resync_period)
            except _Gone:
                need_list = True
            except _TRANSPORT_ERRORS as exc:
                if self._stop.is_set():
                    break
                need_list = True
                error = _translate(exc, f"{self.kind} reflector")
                if isinstance(error, Unavailable):
                    backend._set_available(self.kind, str(error))
                log.warning("%s; retrying in %.1fs", error, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, backend.backoff[1])
            except Exception:  # a reflector must never die
                if self._stop.is_set():
                    break
                log.exception("%s reflector failed; relisting", self.kind)
                need_list = True
                self._stop.wait(delay)
                delay = min(delay * 2, backend.backoff[1])

    def _relist(self) -> None:
        response = self.list_fn(_preload_content=False, _request_timeout=self.backend.request_timeout)
        data = json.loads(response.data)
        self.lists += 1
        fresh: dict[tuple[str, str], PodInfo | NodeInfo] = {}
        for item in data.get("items") or []:
            obj = self.convert(item)
            fresh[self._key(obj)] = obj
        events: list[BackendEvent] = []
        for key, obj in fresh.items():
            old = self.cache.get(key)
            if old is None:
                events.append(BackendEvent(self.kind, "ADDED", obj))
            elif old.resource_version != obj.resource_version:
                events.append(BackendEvent(self.kind, "MODIFIED", obj))
        for key, old in self.cache.items():
            if key not in fresh:
                events.append(BackendEvent(self.kind, "DELETED", old))
        self.cache = fresh
        self.resource_version = str((data.get("metadata") or {}).get("resourceVersion", ""))
        self.backend._emit(events)
        self.synced.set()

    def _watch(self, deadline: float) -> None:
        backend = self.backend
        timeout = max(1, int(min(backend.watch_timeout, deadline - time.monotonic())))
        response = self.list_fn(
            watch=True,
            resource_version=self.resource_version,
            timeout_seconds=timeout,
            allow_watch_bookmarks=True,
            _preload_content=False,
            _request_timeout=(backend.request_timeout, timeout + backend.request_timeout),
        )
        self._response = response
        self.watches += 1
        try:
            if self._stop.is_set():  # stop() ran while the request was in flight
                return
            for line in iter_resp_lines(response):
                if self._stop.is_set():
                    return
                if not line or not line.strip():
                    continue
                event = json.loads(line)
                self._apply(event)
        finally:
            self._response = None
            response.close()
            response.release_conn()

    def _apply(self, event: dict[str, Any]) -> None:
        type_ = event.get("type")
        raw = event.get("object") or {}
        if type_ == "ERROR":
            if raw.get("code") == 410:
                raise _Gone(raw.get("message", ""))
            raise ApiException(status=raw.get("code", 500), reason=raw.get("message", ""))
        rv = str((raw.get("metadata") or {}).get("resourceVersion", ""))
        if type_ == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        obj = self.convert(raw)
        key = self._key(obj)
        self.resource_version = rv or self.resource_version
        old = self.cache.get(key)
        kind: EventType
        if type_ == "DELETED":
            self.cache.pop(key, None)
            kind = "DELETED"
        else:
            if old is not None and old.resource_version == obj.resource_version:
                return
            self.cache[key] = obj
            kind = "ADDED" if old is None else "MODIFIED"
        self.backend._emit([BackendEvent(self.kind, kind, obj)])


# ---------------------------------------------------------------- backend


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
        self.resync_period = resync_period
        self.watch_timeout = watch_timeout
        self.request_timeout = request_timeout
        self.backoff = backoff
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._events: list[BackendEvent] = []
        self._unavailable: dict[str, str] = {}
        self._reflectors: dict[Kind, _Reflector] = {}

    # ------------------------------------------------------------ calls

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call the API returning parsed JSON; translate errors."""
        try:
            response = fn(*args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs)
        except ApiException as exc:
            if exc.status == 429 and what.startswith("evict"):
                raise EvictionBlocked(f"{what}: 429 {exc.reason}") from exc
            raise _translate(exc, what) from exc
        except _TRANSPORT_ERRORS as exc:
            raise _translate(exc, what) from exc
        body = response.data
        return json.loads(body) if body else {}

    # ------------------------------------------------------------ reads

    def list_nodes(self) -> list[NodeInfo]:
        data = self._call("list nodes", self.core.list_node)
        nodes = [node_from_k8s(item) for item in data.get("items") or []]
        return sorted(nodes, key=lambda n: n.name)

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
            response = self.core.read_namespaced_pod_log(
                name,
                namespace,
                _preload_content=False,
                _request_timeout=self.request_timeout,
                **self._log_kwargs(container, tail_lines, previous),
            )
        except ApiException as exc:
            if exc.status == 400:
                raise NotFound(f"{what}: {exc.reason}: {exc.body or ''}".strip()) from exc
            raise _translate(exc, what) from exc
        except _TRANSPORT_ERRORS as exc:
            raise _translate(exc, what) from exc
        body = response.data
        return body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")

    def follow_pod_log(
        self, namespace: str, name: str, *, container: str | None = None, tail_lines: int | None = None
    ) -> Iterator[str]:
        """``read_namespaced_pod_log(follow=True)``: lines as the kubelet streams them, until the container ends."""
        what = f"follow log of pod {namespace}/{name}"
        try:
            response = self.core.read_namespaced_pod_log(
                name,
                namespace,
                follow=True,
                _preload_content=False,
                _request_timeout=(self.request_timeout, FOLLOW_READ_TIMEOUT),
                **self._log_kwargs(container, tail_lines, False),
            )
        except _TRANSPORT_ERRORS as exc:
            raise _translate(exc, what) from exc
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
            meta["ownerReferences"] = [_owner_to_k8s(owner)]
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
                "node": _Reflector(self, "node", self.core.list_node, node_from_k8s),
                "pod": _Reflector(self, "pod", self.core.list_pod_for_all_namespaces, pod_from_k8s),
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
