"""SimCluster: the embedded, KWOK-like simulated cluster.

Virtual nodes come from a *pool spec* string; pods start when bound and
finish after a simulated duration; exit codes, evictions and node failures
can be injected; time comes from an injectable :class:`Clock`.

Pool spec format
================

``pools := pool ("," pool)*`` where ``pool := NAME ":" [COUNT "x"] SHAPE [LABELS]``:

* ``NAME``: pool name (``[a-z0-9-]+``); nodes are named ``<NAME>-<i>`` (i from 0)
  and labelled ``sim.volcanoweb.io/pool=<NAME>`` and
  ``kubernetes.io/hostname=<node name>``;
* ``COUNT``: number of nodes (default 1);
* ``SHAPE``: one or more ``<number><unit>`` terms, units ``c`` (CPU cores,
  decimals allowed: ``0.5c``), ``Ki``/``Mi``/``Gi``/``Ti`` (memory), ``gpu``
  (``nvidia.com/gpu``) and ``pods`` (max pods, default 110);
* ``LABELS``: optional extra node labels in brackets, ``[k=v;k2=v2]``.

Example: ``"cpu:8x16c64Gi,gpu:4x32c256Gi4gpu[accelerator=a100]"`` is 8 nodes
with 16 CPUs and 64 GiB each, and 4 nodes with 32 CPUs, 256 GiB and 4 GPUs.

Pod lifecycle
=============

``create_pod`` → Pending (no node) → ``bind`` → Pending on the node → at
``bound time + startup_delay`` the simulated kubelet admits it (Running; or
Failed with reason ``OutOf<resource>`` when the node is full, ``NodeAffinity``
when the node selector does not match) → after the duration from the pod
annotation ``sim.volcanoweb.io/duration`` (Go-style "30s", "5m", "1h30m",
"250ms" or plain seconds; else ``default_duration``) it ends with the exit
code from ``sim.volcanoweb.io/exit-code`` (default 0): Succeeded (reason
Completed) or Failed (reason Error). Pods bound to a NotReady node wait
until the node recovers.

Deleting a running pod with a grace period marks it ``deleting`` and removes
it after the grace period; unbound or finished pods are removed at once.

Time only moves in :meth:`SimCluster.tick` (also called by
:meth:`SimCluster.poll_events` and :meth:`SimCluster.advance`): timers due at
or before ``clock.now()`` fire in time order, so a run is deterministic for
a given sequence of calls and clock readings. The whole state is a JSON-ready
dict (:meth:`SimCluster.to_state` / :meth:`SimCluster.from_state`).
"""

from __future__ import annotations

import contextlib
import heapq
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, Protocol

from scheduler.quantity import parse_duration

from .base import (
    SIM_DURATION_ANNOTATION,
    SIM_EXIT_CODE_ANNOTATION,
    BackendEvent,
    ClusterBackend,
    Conflict,
    EventType,
    NodeInfo,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
    Taint,
    restarts_in_place,
    simulated_pod_log,
)
from .quantity import parse_quantity

POOL_LABEL = "sim.volcanoweb.io/pool"
HOSTNAME_LABEL = "kubernetes.io/hostname"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
DEFAULT_MAX_PODS = 110
_UID_NAMESPACE = uuid.UUID("7d7f6a2e-55a4-4c8e-9a1b-5f3b2c7e9d10")
STATE_VERSION = 1


# ---------------------------------------------------------------- clocks


class Clock(Protocol):
    """Simulated time in seconds. ``speed`` is sim seconds per real second
    (0 for a clock that only moves when told to)."""

    speed: float

    def now(self) -> float: ...


class ManualClock:
    """A clock that moves only through :meth:`advance` / :meth:`set` (tests)."""

    speed: float = 0.0

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("time cannot go backwards")
        self._now += seconds
        return self._now

    def set(self, now: float) -> None:
        if now < self._now:
            raise ValueError("time cannot go backwards")
        self._now = float(now)


class ScaledClock:
    """Simulated time running ``speed`` times faster than wall-clock time.

    Anchored on the wall clock (``time.time()``), so another process built
    with the same anchors (:meth:`to_dict` / :meth:`from_dict`) reads the
    same simulated time.
    """

    def __init__(
        self,
        speed: float = 1.0,
        start: float = 0.0,
        wall_start: float | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = float(speed)
        self._start = float(start)
        self._wall = wall
        self._wall_start = wall() if wall_start is None else float(wall_start)

    def now(self) -> float:
        return self._start + (self._wall() - self._wall_start) * self.speed

    def to_dict(self) -> dict[str, float]:
        return {"speed": self.speed, "start": self._start, "wall_start": self._wall_start}

    @classmethod
    def from_dict(cls, data: dict[str, float], wall: Callable[[], float] = time.time) -> ScaledClock:
        return cls(data["speed"], data["start"], data["wall_start"], wall=wall)


# ---------------------------------------------------------------- parsing

_POOL_RE = re.compile(
    r"^(?P<name>[a-z0-9]([a-z0-9-]*[a-z0-9])?):(?:(?P<count>\d+)x)?"
    r"(?P<shape>[^\[\]]+)(?:\[(?P<labels>[^\]]*)\])?$"
)
_TERM_RE = re.compile(r"(\d+(?:\.\d+)?)(gpu|pods|Ki|Mi|Gi|Ti|Pi|c)")
_UNIT_RESOURCE = {
    "c": "cpu",
    "gpu": "nvidia.com/gpu",
    "pods": "pods",
    "Ki": "memory",
    "Mi": "memory",
    "Gi": "memory",
    "Ti": "memory",
    "Pi": "memory",
}


def parse_pool_spec(spec: str) -> list[NodeInfo]:
    """Nodes described by a pool spec string (see the module docstring)."""
    nodes: list[NodeInfo] = []
    seen: set[str] = set()
    for raw in spec.split(","):
        text = raw.strip()
        if not text:
            continue
        match = _POOL_RE.match(text)
        if not match:
            raise ValueError(f"invalid pool {text!r}: expected NAME:[COUNTx]SHAPE[labels]")
        name = match["name"]
        if name in seen:
            raise ValueError(f"duplicate pool {name!r}")
        seen.add(name)
        count = int(match["count"]) if match["count"] else 1
        allocatable = _parse_shape(match["shape"], text)
        extra = _parse_labels(match["labels"] or "", text)
        for index in range(count):
            node = f"{name}-{index}"
            labels = {POOL_LABEL: name, HOSTNAME_LABEL: node, **extra}
            nodes.append(NodeInfo(name=node, allocatable=dict(allocatable), labels=labels))
    return nodes


def _parse_shape(shape: str, pool: str) -> dict[str, str]:
    position = 0
    allocatable: dict[str, str] = {}
    for term in _TERM_RE.finditer(shape):
        if term.start() != position:
            break
        number, unit = term.group(1), term.group(2)
        resource = _UNIT_RESOURCE[unit]
        if resource in allocatable:
            raise ValueError(f"pool {pool!r}: {resource} given twice")
        allocatable[resource] = number + unit if resource == "memory" else number
        position = term.end()
    if position != len(shape) or not allocatable:
        raise ValueError(f"pool {pool!r}: invalid shape {shape!r} (units: c Mi Gi gpu pods)")
    allocatable.setdefault("pods", str(DEFAULT_MAX_PODS))
    return allocatable


def _parse_labels(text: str, pool: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"pool {pool!r}: invalid label {item!r}")
        labels[key] = value
    return labels


# ---------------------------------------------------------------- internals


@dataclass(slots=True)
class _Pod:
    spec: PodSpec
    uid: str
    requests: dict[str, str]
    created_at: float
    phase: str = "Pending"
    node_name: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    deleting: bool = False
    resource_version: int = 0
    admitted: bool = False
    started_at: float | None = None
    finished_at: float | None = None
    start_at: float | None = None
    finish_at: float | None = None
    remove_at: float | None = None
    restart_count: int = 0
    usage: dict[str, Decimal] = field(default_factory=dict)

    def info(self) -> PodInfo:
        spec = self.spec
        return PodInfo(
            namespace=spec.namespace,
            name=spec.name,
            uid=self.uid,
            phase=self.phase,
            node_name=self.node_name,
            exit_code=self.exit_code,
            reason=self.reason,
            message=self.message,
            annotations=dict(spec.annotations),
            labels=dict(spec.labels),
            scheduler_name=spec.scheduler_name,
            requests=dict(self.requests),
            deleting=self.deleting,
            resource_version=str(self.resource_version),
            owner=spec.owner,
            priority_class_name=spec.priority_class_name,
            created_at=self.created_at,
            started_at=self.started_at,
            finished_at=self.finished_at,
            restart_count=self.restart_count,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_dict(),
            "uid": self.uid,
            "requests": self.requests,
            "created_at": self.created_at,
            "phase": self.phase,
            "node_name": self.node_name,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "message": self.message,
            "deleting": self.deleting,
            "resource_version": self.resource_version,
            "admitted": self.admitted,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "start_at": self.start_at,
            "finish_at": self.finish_at,
            "remove_at": self.remove_at,
            "restart_count": self.restart_count,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> _Pod:
        values = dict(data)
        values["spec"] = PodSpec.from_dict(values["spec"])
        pod = cls(**values)
        if pod.admitted:
            pod.usage = _usage(pod.requests)
        return pod


@dataclass(slots=True)
class _Node:
    info: NodeInfo
    capacity: dict[str, Decimal]
    used: dict[str, Decimal] = field(default_factory=dict)


def _usage(requests: dict[str, str]) -> dict[str, Decimal]:
    usage = {name: parse_quantity(value) for name, value in requests.items()}
    usage["pods"] = Decimal(1)
    return usage


_TimerKind = Literal["start", "finish", "remove"]


class SimCluster(ClusterBackend):
    """The simulated cluster; see the module docstring for its behaviour."""

    name = "sim"

    def __init__(
        self,
        pools: str | Iterable[NodeInfo] = "",
        clock: Clock | None = None,
        default_duration: float = 60.0,
        startup_delay: float = 0.0,
        delete_grace: float = 0.0,
    ) -> None:
        self.clock: Clock = clock if clock is not None else ManualClock()
        self.default_duration = float(default_duration)
        self.startup_delay = float(startup_delay)
        self.delete_grace = float(delete_grace)
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._nodes: dict[str, _Node] = {}
        self._pods: dict[tuple[str, str], _Pod] = {}
        self._by_node: dict[str, set[tuple[str, str]]] = {}
        self._timers: list[tuple[float, int, _TimerKind, tuple[str, str]]] = []
        self._events: list[BackendEvent] = []
        self._rv = 0
        self._seq = 0
        self._now = self.clock.now()
        self.services: dict[tuple[str, str], dict[str, Any]] = {}
        self.config_maps: dict[tuple[str, str], dict[str, Any]] = {}
        self.secrets: dict[tuple[str, str], dict[str, Any]] = {}
        nodes = parse_pool_spec(pools) if isinstance(pools, str) else list(pools)
        for node in nodes:
            self.add_node(node)

    # ------------------------------------------------------------ clock

    def now(self) -> float:
        """Simulated time of the last tick."""
        return self._now

    def tick(self) -> int:
        """Fire every timer due at or before ``clock.now()``; return how many fired."""
        with self._lock:
            now = max(self.clock.now(), self._now)
            fired = 0
            while self._timers and self._timers[0][0] <= now:
                at, _, kind, key = heapq.heappop(self._timers)
                pod = self._pods.get(key)
                if pod is None:
                    continue
                self._now = max(self._now, at)
                if kind == "start" and pod.start_at == at:
                    pod.start_at = None
                    self._start(pod, at)
                    fired += 1
                elif kind == "finish" and pod.finish_at == at:
                    pod.finish_at = None
                    self._finish(pod, at)
                    fired += 1
                elif kind == "remove" and pod.remove_at == at:
                    pod.remove_at = None
                    self._remove(pod)
                    fired += 1
            self._now = now
            if fired:
                self._changed.notify_all()
            return fired

    def advance(self, seconds: float) -> int:
        """Move a :class:`ManualClock` forward and tick."""
        if not isinstance(self.clock, ManualClock):
            raise TypeError("advance() needs a ManualClock")
        self.clock.advance(seconds)
        return self.tick()

    def next_timer(self) -> float | None:
        """Simulated time of the next pending timer, if any."""
        with self._lock:
            while self._timers:
                at, _, kind, key = self._timers[0]
                pod = self._pods.get(key)
                if pod is not None and getattr(pod, f"{kind}_at") == at:
                    return at
                heapq.heappop(self._timers)
            return None

    # ------------------------------------------------------------ nodes

    def add_node(self, node: NodeInfo) -> None:
        """Add a node (ADDED event); :class:`Conflict` if the name is taken."""
        with self._lock:
            if node.name in self._nodes:
                raise Conflict(f"node {node.name} already exists")
            info = NodeInfo.from_dict(node.to_dict())
            capacity = {k: parse_quantity(v) for k, v in info.allocatable.items()}
            capacity.setdefault("pods", Decimal(DEFAULT_MAX_PODS))
            self._nodes[info.name] = _Node(info=info, capacity=capacity)
            self._by_node.setdefault(info.name, set())
            for key in self._by_node[info.name]:
                self._recount(self._nodes[info.name], self._pods[key])
            self._node_event("ADDED", self._nodes[info.name])

    def remove_node(self, name: str) -> None:
        """Delete a node; its pods fail with reason NodeLost."""
        with self._lock:
            node = self._node(name)
            self._lose_pods(name, evict=False)
            del self._nodes[name]
            self._node_event("DELETED", node)

    def fail_node(self, name: str, evict_pods: bool = True) -> None:
        """Make a node NotReady and unreachable-tainted.

        Its unfinished pods are evicted (deleted, reason NodeLost), or with
        ``evict_pods=False`` marked Failed with reason NodeLost.
        """
        with self._lock:
            node = self._node(name)
            node.info.ready = False
            taints = [t for t in node.info.taints if t.key != UNREACHABLE_TAINT]
            taints += [Taint(UNREACHABLE_TAINT, "", "NoSchedule")]
            taints += [Taint(UNREACHABLE_TAINT, "", "NoExecute")]
            node.info.taints = taints
            self._node_event("MODIFIED", node)
            self._lose_pods(name, evict=evict_pods)

    def recover_node(self, name: str) -> None:
        """Make a failed node Ready again; pods bound to it start."""
        with self._lock:
            node = self._node(name)
            node.info.ready = True
            node.info.taints = [t for t in node.info.taints if t.key != UNREACHABLE_TAINT]
            self._node_event("MODIFIED", node)
            for key in sorted(self._by_node.get(name, ())):
                pod = self._pods[key]
                if pod.phase == "Pending" and not pod.admitted and pod.start_at is None:
                    self._schedule(pod, "start", self._now + self.startup_delay)

    def cordon(self, name: str, unschedulable: bool = True) -> None:
        """Set ``spec.unschedulable`` on a node."""
        with self._lock:
            node = self._node(name)
            node.info.unschedulable = unschedulable
            self._node_event("MODIFIED", node)

    def list_nodes(self) -> list[NodeInfo]:
        with self._lock:
            return [NodeInfo.from_dict(self._nodes[n].info.to_dict()) for n in sorted(self._nodes)]

    def node_usage(self, name: str) -> dict[str, Decimal]:
        """Resources admitted on a node (Σ requests of admitted pods, and pod count)."""
        with self._lock:
            return dict(self._node(name).used)

    # ------------------------------------------------------------ pods

    def list_pods(self, scheduler_name: str | None = None, namespace: str | None = None) -> list[PodInfo]:
        with self._lock:
            return [
                pod.info()
                for key, pod in sorted(self._pods.items())
                if (scheduler_name is None or pod.spec.scheduler_name == scheduler_name)
                and (namespace is None or key[0] == namespace)
            ]

    def get_pod(self, namespace: str, name: str) -> PodInfo:
        with self._lock:
            return self._pod(namespace, name).info()

    def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
    ) -> str:
        """The simulated log (see :func:`~volcanoweb.clusters.backends.base.simulated_pod_log`)."""
        info = self.get_pod(namespace, name)
        return simulated_pod_log(info, self.now(), container=container, tail_lines=tail_lines, previous=previous)

    def create_pod(self, spec: PodSpec) -> PodInfo:
        with self._lock:
            key = (spec.namespace, spec.name)
            if key in self._pods:
                raise Conflict(f"pod {spec.namespace}/{spec.name} already exists")
            spec = PodSpec.from_dict(spec.to_dict())
            self._seq += 1
            uid = str(uuid.uuid5(_UID_NAMESPACE, f"{spec.namespace}/{spec.name}/{self._seq}"))
            pod = _Pod(spec=spec, uid=uid, requests=spec.requests(), created_at=self._now)
            self._pods[key] = pod
            self._pod_event("ADDED", pod)
            return pod.info()

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        with self._lock:
            pod = self._pods.get((namespace, name))
            if pod is None:
                return False
            grace = self.delete_grace if grace_period_seconds is None else grace_period_seconds
            self._delete(pod, float(grace))
            return True

    def bind(self, namespace: str, name: str, node: str) -> None:
        with self._lock:
            pod = self._pod(namespace, name)
            if pod.node_name:
                raise Conflict(f"pod {namespace}/{name} is already assigned to node {pod.node_name!r}")
            if pod.deleting:
                raise Conflict(f"pod {namespace}/{name} is being deleted")
            target = self._node(node)
            pod.node_name = node
            self._by_node[node].add((namespace, name))
            self._pod_event("MODIFIED", pod)
            if target.info.ready:
                self._schedule(pod, "start", self._now + self.startup_delay)

    def evict(self, namespace: str, name: str) -> None:
        with self._lock:
            pod = self._pod(namespace, name)
            if pod.deleting:
                return
            if pod.phase not in ("Succeeded", "Failed"):
                pod.reason, pod.message = "Evicted", "Evicted through the Eviction API"
            self._delete(pod, self.delete_grace)

    def patch_pod_annotations(self, namespace: str, name: str, annotations: dict[str, str | None]) -> PodInfo:
        with self._lock:
            pod = self._pod(namespace, name)
            for key, value in annotations.items():
                if value is None:
                    pod.spec.annotations.pop(key, None)
                else:
                    pod.spec.annotations[key] = value
            self._pod_event("MODIFIED", pod)
            return pod.info()

    def fail_pod(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> None:
        """Make an unfinished pod fail now with an exit code (137: killed)."""
        with self._lock:
            pod = self._pod(namespace, name)
            if pod.phase in ("Succeeded", "Failed"):
                raise Conflict(f"pod {namespace}/{name} already finished ({pod.phase})")
            pod.start_at = pod.finish_at = None
            self._end(pod, "Failed", exit_code, reason, "", self._now)

    def restart_container(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> PodInfo:
        """The running pod's main container exits with ``exit_code``.

        With restartPolicy ``OnFailure`` (non-zero code) or ``Always`` the kubelet restarts it in place:
        restartCount + 1, the pod stays Running and its simulated run starts again. Otherwise the pod
        ends as with :meth:`fail_pod`."""
        with self._lock:
            pod = self._pod(namespace, name)
            if pod.phase != "Running":
                raise Conflict(f"pod {namespace}/{name} is not running ({pod.phase})")
            if not restarts_in_place(pod.spec.restart_policy, exit_code):
                pod.start_at = pod.finish_at = None
                phase = "Succeeded" if exit_code == 0 else "Failed"
                self._end(pod, phase, exit_code, reason if exit_code else "Completed", "", self._now)
                return pod.info()
            pod.restart_count += 1
            pod.reason, pod.message = reason, f"container restarted after exit code {exit_code}"
            self._pod_event("MODIFIED", pod)
            self._schedule(pod, "finish", self._now + self._duration(pod))
            return pod.info()

    # ------------------------------------------------------------ services etc.

    def ensure_service(self, spec: ServiceSpec) -> bool:
        with self._lock:
            key = (spec.namespace, spec.name)
            if key in self.services:
                return False
            self.services[key] = {
                "selector": dict(spec.selector),
                "ports": list(spec.ports),
                "labels": dict(spec.labels),
                "owner": spec.owner.to_dict() if spec.owner else None,
                "headless": spec.headless,
            }
            return True

    def delete_service(self, namespace: str, name: str) -> bool:
        with self._lock:
            return self.services.pop((namespace, name), None) is not None

    def ensure_config_map(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
    ) -> bool:
        return self._ensure(self.config_maps, namespace, name, data, labels, owner, None)

    def delete_config_map(self, namespace: str, name: str) -> bool:
        with self._lock:
            return self.config_maps.pop((namespace, name), None) is not None

    def ensure_secret(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
        type: str = "Opaque",
    ) -> bool:
        return self._ensure(self.secrets, namespace, name, data, labels, owner, type)

    def delete_secret(self, namespace: str, name: str) -> bool:
        with self._lock:
            return self.secrets.pop((namespace, name), None) is not None

    def _ensure(
        self,
        store: dict[tuple[str, str], dict[str, Any]],
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None,
        owner: OwnerReference | None,
        type: str | None,
    ) -> bool:
        with self._lock:
            if (namespace, name) in store:
                return False
            entry: dict[str, Any] = {
                "data": dict(data),
                "labels": dict(labels or {}),
                "owner": owner.to_dict() if owner else None,
            }
            if type is not None:
                entry["type"] = type
            store[(namespace, name)] = entry
            return True

    # ------------------------------------------------------------ events

    def poll_events(self, timeout: float = 0.0) -> list[BackendEvent]:
        deadline = time.monotonic() + max(timeout, 0.0)
        with self._lock:
            while True:
                self.tick()
                if self._events:
                    events, self._events = self._events, []
                    return events
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                wait = remaining
                next_at = self.next_timer()
                if next_at is not None and self.clock.speed > 0:
                    wait = min(wait, max((next_at - self.clock.now()) / self.clock.speed, 0.001))
                self._changed.wait(wait)

    def pending_events(self) -> int:
        with self._lock:
            return len(self._events)

    # ------------------------------------------------------------ state

    def to_state(self) -> dict[str, Any]:
        """The whole simulation as a JSON-ready dict (events not yet polled included)."""
        with self._lock:
            return {
                "version": STATE_VERSION,
                "now": self._now,
                "rv": self._rv,
                "seq": self._seq,
                "default_duration": self.default_duration,
                "startup_delay": self.startup_delay,
                "delete_grace": self.delete_grace,
                "nodes": [self._nodes[n].info.to_dict() for n in sorted(self._nodes)],
                "pods": [self._pods[k].to_dict() for k in sorted(self._pods)],
                "services": _store_to_list(self.services),
                "config_maps": _store_to_list(self.config_maps),
                "secrets": _store_to_list(self.secrets),
                "events": [event.to_dict() for event in self._events],
            }

    @classmethod
    def from_state(cls, state: dict[str, Any], clock: Clock | None = None) -> SimCluster:
        """Rebuild a simulation; without ``clock``, a ManualClock at the saved time."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported sim state version {state.get('version')!r}")
        sim = cls(
            clock=clock if clock is not None else ManualClock(state["now"]),
            default_duration=state["default_duration"],
            startup_delay=state["startup_delay"],
            delete_grace=state["delete_grace"],
        )
        sim._now = max(float(state["now"]), sim._now) if clock is None else float(state["now"])
        for data in state["nodes"]:
            info = NodeInfo.from_dict(data)
            capacity = {k: parse_quantity(v) for k, v in info.allocatable.items()}
            capacity.setdefault("pods", Decimal(DEFAULT_MAX_PODS))
            sim._nodes[info.name] = _Node(info=info, capacity=capacity)
            sim._by_node[info.name] = set()
        for data in state["pods"]:
            pod = _Pod.from_dict(data)
            key = (pod.spec.namespace, pod.spec.name)
            sim._pods[key] = pod
            if pod.node_name:
                sim._by_node.setdefault(pod.node_name, set()).add(key)
                node = sim._nodes.get(pod.node_name)
                if node is not None and pod.admitted:
                    _add(node.used, pod.usage)
            for kind in ("start", "finish", "remove"):
                at = getattr(pod, f"{kind}_at")
                if at is not None:
                    sim._push(at, kind, key)
        sim.services = _store_from_list(state["services"])
        sim.config_maps = _store_from_list(state["config_maps"])
        sim.secrets = _store_from_list(state["secrets"])
        sim._events = [BackendEvent.from_dict(e) for e in state["events"]]
        sim._rv = state["rv"]
        sim._seq = state["seq"]
        return sim

    # ------------------------------------------------------------ internals

    def _node(self, name: str) -> _Node:
        node = self._nodes.get(name)
        if node is None:
            raise NotFound(f"node {name} not found")
        return node

    def _pod(self, namespace: str, name: str) -> _Pod:
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise NotFound(f"pod {namespace}/{name} not found")
        return pod

    def _push(self, at: float, kind: _TimerKind, key: tuple[str, str]) -> None:
        self._seq += 1
        heapq.heappush(self._timers, (at, self._seq, kind, key))

    def _schedule(self, pod: _Pod, kind: _TimerKind, at: float) -> None:
        setattr(pod, f"{kind}_at", at)
        self._push(at, kind, (pod.spec.namespace, pod.spec.name))
        self._changed.notify_all()

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _pod_event(self, type: EventType, pod: _Pod) -> None:
        pod.resource_version = self._next_rv()
        self._events.append(BackendEvent("pod", type, pod.info()))
        self._changed.notify_all()

    def _node_event(self, type: EventType, node: _Node) -> None:
        node.info.resource_version = str(self._next_rv())
        info = NodeInfo.from_dict(node.info.to_dict())
        self._events.append(BackendEvent("node", type, info))
        self._changed.notify_all()

    def _start(self, pod: _Pod, at: float) -> None:
        """The simulated kubelet admits and starts a bound pod."""
        node = self._nodes.get(pod.node_name)
        if node is None or not node.info.ready or pod.phase != "Pending" or pod.deleting:
            return
        for key, value in pod.spec.node_selector.items():
            if node.info.labels.get(key) != value:
                self._end(pod, "Failed", None, "NodeAffinity", "node selector mismatch", at)
                return
        usage = _usage(pod.requests)
        for resource, amount in usage.items():
            free = node.capacity.get(resource, Decimal(0)) - node.used.get(resource, Decimal(0))
            if amount > free:
                message = f"Node didn't have enough resource: {resource}"
                self._end(pod, "Failed", None, f"OutOf{resource}", message, at)
                return
        pod.usage = usage
        pod.admitted = True
        _add(node.used, usage)
        pod.phase, pod.started_at = "Running", at
        self._pod_event("MODIFIED", pod)
        self._schedule(pod, "finish", at + self._duration(pod))

    def _duration(self, pod: _Pod) -> float:
        """The simulated run time: the duration annotation, else the default."""
        annotations = pod.spec.annotations
        if SIM_DURATION_ANNOTATION in annotations:
            with contextlib.suppress(ValueError):
                return parse_duration(annotations[SIM_DURATION_ANNOTATION], plain_seconds=True)
        return self.default_duration

    def _finish(self, pod: _Pod, at: float) -> None:
        if pod.phase != "Running":
            return
        try:
            code = int(pod.spec.annotations.get(SIM_EXIT_CODE_ANNOTATION, "0"))
        except ValueError:
            code = 1
        if code == 0:
            self._end(pod, "Succeeded", 0, "Completed", "", at)
        else:
            self._end(pod, "Failed", code, "Error", "", at)

    def _end(self, pod: _Pod, phase: str, code: int | None, reason: str, message: str, at: float) -> None:
        self._release(pod)
        pod.phase, pod.exit_code, pod.reason, pod.message = phase, code, reason, message
        pod.finished_at = at
        self._pod_event("MODIFIED", pod)

    def _release(self, pod: _Pod) -> None:
        if pod.admitted:
            node = self._nodes.get(pod.node_name)
            if node is not None:
                _add(node.used, pod.usage, -1)
            pod.admitted = False
            pod.usage = {}

    def _delete(self, pod: _Pod, grace: float) -> None:
        if pod.deleting:
            return
        running = pod.node_name and pod.phase in ("Pending", "Running")
        if grace <= 0 or not running:
            self._remove(pod)
            return
        pod.deleting = True
        pod.start_at = None
        self._pod_event("MODIFIED", pod)
        self._schedule(pod, "remove", self._now + grace)

    def _remove(self, pod: _Pod) -> None:
        self._release(pod)
        key = (pod.spec.namespace, pod.spec.name)
        del self._pods[key]
        if pod.node_name:
            self._by_node.get(pod.node_name, set()).discard(key)
        pod.deleting = True
        self._pod_event("DELETED", pod)

    def _lose_pods(self, node: str, evict: bool) -> None:
        for key in sorted(self._by_node.get(node, ())):
            pod = self._pods[key]
            if pod.phase in ("Succeeded", "Failed"):
                continue
            if evict:
                pod.reason, pod.message = "NodeLost", f"node {node} failed"
                self._remove(pod)
            else:
                pod.start_at = pod.finish_at = None
                self._end(pod, "Failed", None, "NodeLost", f"node {node} failed", self._now)

    def _recount(self, node: _Node, pod: _Pod) -> None:
        if pod.admitted:
            _add(node.used, pod.usage)


def _add(total: dict[str, Decimal], amounts: dict[str, Decimal], sign: int = 1) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, Decimal(0)) + sign * amount


def _store_to_list(store: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"namespace": ns, "name": name, **value} for (ns, name), value in sorted(store.items())]


def _store_from_list(items: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    store: dict[tuple[str, str], dict[str, Any]] = {}
    for item in items:
        values = dict(item)
        key = (values.pop("namespace"), values.pop("name"))
        store[key] = values
    return store
