"""The cluster backend interface and the plain values that cross it.

A cluster backend is where pods really run: the embedded simulator
(:mod:`.sim`) or a Kubernetes API server (:mod:`.kubernetes`). The control
plane talks to both through :class:`ClusterBackend` only, with the plain
dataclasses below; nothing Kubernetes-client-specific or Django-specific
crosses the interface. Every value can be turned into JSON-ready dicts
(``to_dict``) and back (``from_dict``), so events and states can be stored
in a database row or sent to another process.

Conventions:

* resource quantities are Kubernetes strings ("500m", "4Gi", "1");
* tolerations, affinity and volume sources keep the Kubernetes JSON shape
  (camelCase dicts), exactly as users write them in manifests;
* pods are identified by ``(namespace, name)``;
* errors are :class:`BackendError` subclasses: :class:`NotFound`,
  :class:`Conflict` (already exists / already bound), :class:`EvictionBlocked`
  (a disruption budget said no; retry later) and :class:`Unavailable` (the
  cluster cannot be reached right now; retry later).

Beside it: :mod:`.grouping` (the PodGroup a pod belongs to) and :mod:`.simlog` (the simulated container
log).
"""

from __future__ import annotations

import abc
import copy
import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from scheduler.decode import GROUP_ANNOTATION
from scheduler.quantity import format_quantity, parse_resource
from volcanoweb.core import errors

#: Pod annotation: the PodGroup of a pod (the key the scheduler reads).
GROUP_NAME_ANNOTATION = GROUP_ANNOTATION
#: Pod annotation: simulated run time ("30s", "5m", "1h30m", or seconds).
SIM_DURATION_ANNOTATION = "sim.volcanoweb.io/duration"
#: Pod annotation: simulated exit code of the main container (default 0).
SIM_EXIT_CODE_ANNOTATION = "sim.volcanoweb.io/exit-code"
#: The default Volcano scheduler name.
VOLCANO_SCHEDULER = "volcano"

PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
EventKind = Literal["pod", "node"]


class BackendError(Exception):
    """A cluster operation failed."""


class NotFound(BackendError, errors.NotFound):
    """The object (pod, node...) does not exist in the cluster; an API error (404) where it reaches a caller."""


class Conflict(BackendError, errors.Conflict):
    """The object already exists, or the pod is already bound to a node; a 409 where it reaches a caller."""


class EvictionBlocked(Conflict):
    """The Eviction API refused (HTTP 429: a PodDisruptionBudget); retry later."""


class Unavailable(BackendError):
    """The cluster cannot be reached right now; the caller should retry later."""


# ---------------------------------------------------------------- values


@dataclass(slots=True)
class Taint:
    """A node taint, as in ``node.spec.taints``."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "effect": self.effect}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Taint:
        return cls(
            key=data["key"],
            value=data.get("value") or "",
            effect=data.get("effect") or "NoSchedule",
        )


#: Simulated nodes' hardware, as their pool spec declares it (``volcanoweb.clusters.backends.sim``): the usage
#: model's factor, the NUMA layout (``SOCKETSxNUMAxCORESxTHREADS``), the kubelet's topology manager policy and the
#: vGPU cards.
USAGE_FACTOR_LABEL = "sim.volcanoweb.io/usage-factor"
NUMA_LABEL = "sim.volcanoweb.io/numa"
TOPOLOGY_POLICY_LABEL = "sim.volcanoweb.io/topology-manager-policy"
#: A simulated node's vGPU cards (``CARDSxMEMORYxSPLIT``: cards of MEMORY MiB, each shared by up to SPLIT pods), as
#: its pool spec declares them; the node registers them as Volcano's vGPU device plugin does.
VGPU_LABEL = "sim.volcanoweb.io/vgpu"


@dataclass(frozen=True, slots=True)
class NodeMetrics:
    """A node's measured usage (metrics-server's ``NodeMetrics``): cpu millicores and memory bytes in use,
    measured at ``time`` (seconds since the epoch)."""

    name: str
    cpu: int
    memory: int
    time: float


@dataclass(slots=True)
class NodeInfo:
    """A node as observed: what the scheduler needs to place pods on it."""

    name: str
    allocatable: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[Taint] = field(default_factory=list)
    unschedulable: bool = False
    ready: bool = True
    resource_version: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "allocatable": dict(self.allocatable),
            "labels": dict(self.labels),
            "taints": [t.to_dict() for t in self.taints],
            "unschedulable": self.unschedulable,
            "ready": self.ready,
            "resource_version": self.resource_version,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeInfo:
        return cls(
            name=data["name"],
            allocatable=dict(data.get("allocatable") or {}),
            labels=dict(data.get("labels") or {}),
            taints=[Taint.from_dict(t) for t in data.get("taints") or []],
            unschedulable=bool(data.get("unschedulable", False)),
            ready=bool(data.get("ready", True)),
            resource_version=data.get("resource_version", ""),
        )


@dataclass(slots=True)
class OwnerReference:
    """``metadata.ownerReferences[]``: the controller owning a pod or object."""

    kind: str
    name: str
    uid: str
    api_version: str = "batch.volcano.sh/v1alpha1"
    controller: bool = True
    block_owner_deletion: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "api_version": self.api_version,
            "controller": self.controller,
            "block_owner_deletion": self.block_owner_deletion,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OwnerReference:
        return cls(**data)


@dataclass(slots=True)
class VolumeMount:
    """``containers[].volumeMounts[]``."""

    name: str
    mount_path: str
    read_only: bool = False
    sub_path: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mount_path": self.mount_path,
            "read_only": self.read_only,
            "sub_path": self.sub_path,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VolumeMount:
        return cls(**data)


@dataclass(slots=True)
class Container:
    """One container of a pod to create."""

    name: str
    image: str
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    requests: dict[str, str] = field(default_factory=dict)
    limits: dict[str, str] = field(default_factory=dict)
    volume_mounts: list[VolumeMount] = field(default_factory=list)
    ports: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "image": self.image,
            "command": list(self.command),
            "args": list(self.args),
            "env": dict(self.env),
            "requests": dict(self.requests),
            "limits": dict(self.limits),
            "volume_mounts": [m.to_dict() for m in self.volume_mounts],
            "ports": copy.deepcopy(self.ports),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Container:
        values = dict(data)
        values["volume_mounts"] = [VolumeMount.from_dict(m) for m in values.get("volume_mounts") or []]
        return cls(**values)


@dataclass(slots=True)
class Volume:
    """``spec.volumes[]``: a name and a Kubernetes volume source dict.

    Example: ``Volume("hosts", {"configMap": {"name": "job-svc"}})``.
    """

    name: str
    source: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": copy.deepcopy(self.source)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Volume:
        return cls(name=data["name"], source=dict(data.get("source") or {}))


def effective_requests(containers: Iterable[Container], init_containers: Iterable[Container] = ()) -> dict[str, str]:
    """Pod resource request: Σ containers, at least max(init containers).

    A container with limits but no requests requests its limits (Kubernetes
    defaulting).
    """

    def request_of(c: Container) -> dict[str, str]:
        merged = dict(c.limits)
        merged.update(c.requests)
        return merged

    main = [request_of(c) for c in containers]
    inits = [request_of(c) for c in init_containers]
    if len(main) == 1 and not inits:
        return dict(sorted(main[0].items()))  # keep the user's spelling
    total: dict[str, int] = {}
    for request in main:
        for name, value in request.items():
            total[name] = total.get(name, 0) + parse_resource(name, value)
    for request in inits:
        for name, value in request.items():
            total[name] = max(total.get(name, 0), parse_resource(name, value))
    return {name: format_quantity(name, amount) for name, amount in sorted(total.items())}


@dataclass(slots=True)
class PodSpec:
    """A pod to create (what a job controller or a user wants to run)."""

    namespace: str
    name: str
    containers: list[Container]
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    scheduler_name: str = VOLCANO_SCHEDULER
    init_containers: list[Container] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    affinity: dict[str, Any] | None = None
    priority_class_name: str = ""
    restart_policy: str = "Never"
    owner: OwnerReference | None = None
    hostname: str = ""
    subdomain: str = ""
    service_account_name: str = ""

    @property
    def group_name(self) -> str | None:
        """The PodGroup named by the group-name annotation, if any."""
        return self.annotations.get(GROUP_NAME_ANNOTATION)

    def requests(self) -> dict[str, str]:
        """The pod's effective resource request."""
        return effective_requests(self.containers, self.init_containers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "containers": [c.to_dict() for c in self.containers],
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "scheduler_name": self.scheduler_name,
            "init_containers": [c.to_dict() for c in self.init_containers],
            "volumes": [v.to_dict() for v in self.volumes],
            "node_selector": dict(self.node_selector),
            "tolerations": copy.deepcopy(self.tolerations),
            "affinity": copy.deepcopy(self.affinity),
            "priority_class_name": self.priority_class_name,
            "restart_policy": self.restart_policy,
            "owner": self.owner.to_dict() if self.owner else None,
            "hostname": self.hostname,
            "subdomain": self.subdomain,
            "service_account_name": self.service_account_name,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PodSpec:
        values = dict(data)
        values["containers"] = [Container.from_dict(c) for c in values["containers"]]
        values["init_containers"] = [Container.from_dict(c) for c in values.get("init_containers") or []]
        values["volumes"] = [Volume.from_dict(v) for v in values.get("volumes") or []]
        owner = values.get("owner")
        values["owner"] = OwnerReference.from_dict(owner) if owner else None
        return cls(**values)


def restarts_in_place(restart_policy: str, exit_code: int) -> bool:
    """Whether the kubelet restarts a container that exited with ``exit_code`` in place (the pod stays
    Running, its restartCount grows): ``Always`` on any exit, ``OnFailure`` on a non-zero code."""
    return restart_policy == "Always" or (restart_policy == "OnFailure" and exit_code != 0)


@dataclass(slots=True)
class PodInfo:
    """A pod as observed in the cluster.

    ``phase`` is the Kubernetes pod phase; a pod with ``node_name`` set and
    phase Pending is bound but not started. ``exit_code`` and ``reason`` come
    from the main (first) container's terminated state, or the pod's status
    reason ("Evicted", "NodeLost", "OutOfcpu"...). ``deleting`` is true when
    the pod has a deletionTimestamp (it is terminating).
    """

    namespace: str
    name: str
    uid: str
    phase: str = "Pending"
    node_name: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    scheduler_name: str = VOLCANO_SCHEDULER
    requests: dict[str, str] = field(default_factory=dict)
    deleting: bool = False
    resource_version: str = ""
    owner: OwnerReference | None = None
    priority_class_name: str = ""
    created_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    restart_count: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def group_name(self) -> str | None:
        """The PodGroup named by the group-name annotation, if any."""
        return self.annotations.get(GROUP_NAME_ANNOTATION)

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def to_dict(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        values["annotations"] = dict(self.annotations)
        values["labels"] = dict(self.labels)
        values["requests"] = dict(self.requests)
        values["owner"] = self.owner.to_dict() if self.owner else None
        return values

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PodInfo:
        values = dict(data)
        owner = values.get("owner")
        values["owner"] = OwnerReference.from_dict(owner) if owner else None
        return cls(**values)


@dataclass(slots=True)
class ServiceSpec:
    """A Service to ensure; headless (``clusterIP: None``) by default."""

    namespace: str
    name: str
    selector: dict[str, str] = field(default_factory=dict)
    ports: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    owner: OwnerReference | None = None
    headless: bool = True
    publish_not_ready_addresses: bool = True


@dataclass(slots=True)
class BackendEvent:
    """One change seen in the cluster: a pod or node ADDED, MODIFIED or DELETED.

    For DELETED, ``object`` is the last state seen before deletion.
    """

    kind: EventKind
    type: EventType
    object: PodInfo | NodeInfo

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "type": self.type, "object": self.object.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BackendEvent:
        obj: PodInfo | NodeInfo = (
            PodInfo.from_dict(data["object"]) if data["kind"] == "pod" else NodeInfo.from_dict(data["object"])
        )
        return cls(kind=data["kind"], type=data["type"], object=obj)


# ---------------------------------------------------------------- interface


class ClusterBackend(abc.ABC):
    """Where pods run. Implementations: ``SimCluster``, ``KubernetesBackend``.

    All methods are synchronous and may be called from any thread. Methods
    that talk to a remote cluster raise :class:`Unavailable` when it cannot be
    reached; the caller retries later (nothing is half-done by a failed call:
    each method is one API request, or an idempotent sequence of them).
    """

    #: Short identifier: "sim" or "kubernetes".
    name: str = ""

    @abc.abstractmethod
    def list_nodes(self) -> list[NodeInfo]:
        """All nodes, sorted by name."""

    def node_metrics(self) -> list[NodeMetrics]:
        """The nodes' measured usage (none by default: a backend without metrics)."""
        return []

    @abc.abstractmethod
    def list_pods(self, scheduler_name: str | None = None, namespace: str | None = None) -> list[PodInfo]:
        """Pods (optionally only those of one scheduler / namespace), sorted by key."""

    @abc.abstractmethod
    def get_pod(self, namespace: str, name: str) -> PodInfo:
        """One pod; :class:`NotFound` if it does not exist."""

    @abc.abstractmethod
    def create_pod(self, spec: PodSpec) -> PodInfo:
        """Create a pod (unbound, phase Pending); :class:`Conflict` if it exists."""

    @abc.abstractmethod
    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        """Delete a pod; False if it did not exist (idempotent)."""

    @abc.abstractmethod
    def bind(self, namespace: str, name: str, node: str) -> None:
        """Bind a pod to a node (the Binding subresource).

        :class:`Conflict` if the pod is already bound (to any node),
        :class:`NotFound` if the pod does not exist.
        """

    @abc.abstractmethod
    def evict(self, namespace: str, name: str) -> None:
        """Evict a pod (Eviction API): graceful deletion respecting budgets.

        :class:`NotFound` if the pod does not exist, :class:`EvictionBlocked`
        if a disruption budget refuses.
        """

    @abc.abstractmethod
    def patch_pod_annotations(self, namespace: str, name: str, annotations: dict[str, str | None]) -> PodInfo:
        """Merge annotations into a pod (None removes a key)."""

    @abc.abstractmethod
    def ensure_service(self, spec: ServiceSpec) -> bool:
        """Create a Service unless it exists; True if created."""

    @abc.abstractmethod
    def delete_service(self, namespace: str, name: str) -> bool:
        """Delete a Service; False if it did not exist."""

    @abc.abstractmethod
    def ensure_config_map(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
    ) -> bool:
        """Create a ConfigMap unless it exists; True if created."""

    @abc.abstractmethod
    def delete_config_map(self, namespace: str, name: str) -> bool:
        """Delete a ConfigMap; False if it did not exist."""

    @abc.abstractmethod
    def ensure_secret(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
        type: str = "Opaque",
    ) -> bool:
        """Create a Secret (``data`` are plain strings) unless it exists."""

    @abc.abstractmethod
    def delete_secret(self, namespace: str, name: str) -> bool:
        """Delete a Secret; False if it did not exist."""

    def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
    ) -> str:
        """A container's log (the last ``tail_lines`` lines; ``previous``: the last terminated instance).

        :class:`NotFound` when the pod (or, with ``previous``, an earlier instance) does not exist;
        :class:`Unavailable` from backends that keep no logs.
        """
        raise Unavailable(f"the {self.name} backend keeps no container logs")

    def log_wall_time(self, line: str) -> float | None:
        """The wall-clock time (epoch seconds) a line of :meth:`pod_log` was written, when the backend knows it.

        None by default (a real cluster's log lines carry no time unless asked for ``timestamps``).
        """
        return None

    def follow_pod_log(
        self, namespace: str, name: str, *, container: str | None = None, tail_lines: int | None = None
    ) -> Iterator[str]:
        """Log lines as they are written, until the container ends (Kubernetes' ``follow``).

        The default yields the current log once.
        """
        yield from self.pod_log(namespace, name, container=container, tail_lines=tail_lines).splitlines()

    @abc.abstractmethod
    def poll_events(self, timeout: float = 0.0) -> list[BackendEvent]:
        """Changes since the previous call, oldest first.

        Waits up to ``timeout`` seconds for the first event. Every pod and
        node change is reported exactly once per consumer call; after a
        relist (watch expiry, reconnection, periodic resync) the backend
        reports the differences as ordinary events. Raises
        :class:`Unavailable` when the cluster is unreachable and no event is
        queued.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and stop background threads."""
