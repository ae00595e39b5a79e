"""The simulated cluster's engine: ONE kubelet state machine over pod and node records, behind a store.

The engine is pure code (no Django, no threads): it reads and changes :class:`PodRecord` and
:class:`NodeRecord` values inside a :class:`SimTx` (one locked change of the cluster) that a
:class:`SimStore` opens. Two stores exist, and each backend is that store plus :class:`SimEngine`:

* :class:`~volcanoweb.clusters.backends.sim.MemoryStore` (``SimCluster``): dicts under a thread lock, for
  unit tests and tools;
* :class:`~volcanoweb.clusters.simdb.DatabaseStore` (``DatabaseSimCluster``): the ``Sim*`` tables, shared
  by every process of the product; on PostgreSQL a transaction locks the pods and nodes it changes (node-level
  changes, ``exclusive``, lock the whole cluster), on SQLite the ``SimState`` row.

See ``docs/adr/0014-one-simulated-cluster-engine.md``.

Transitions
===========

``create_pod`` → Pending (no node) → ``bind`` → Pending on the node, start timer at ``now +
startup_delay`` (only when the node is Ready) → :func:`start` by the simulated kubelet: Running (its
integer requests and one pod slot are admitted on the node), or Failed with ``NodeAffinity`` (node
selector mismatch) or ``OutOf<resource>`` (the node is full) → :func:`finish` after the duration from the
``sim.volcanoweb.io/duration`` annotation (else the default) with the exit code from
``sim.volcanoweb.io/exit-code`` (default 0): Succeeded/Completed or Failed/Error. :func:`end` releases
what the pod held. A graceful :func:`delete` of a pod bound and unfinished marks it ``deleting`` and
arms a remove timer; otherwise :func:`remove` drops it at once (DELETED). :func:`lose_pods` is a node
failure (pods evicted, or failed, with ``NodeLost``). Injections: ``fail_pod`` ends a pod now (exit code 0
is Succeeded), ``restart_container`` restarts it in place or ends it, per its restartPolicy.

Clock
=====

Every transaction reads ``now = max(clock.now(), stored now)`` (the stores keep the time of the changes
they made), so the simulated time never goes back and every call (not only :meth:`SimEngine.tick`) sees the
current time. Timers
(``start_at``/``finish_at``/``remove_at``) fire only in :func:`tick`, due ones in time order (ties by
pod key, then start/finish/remove), so a run is deterministic for a given sequence of calls and clock
readings. Resources are the scheduler's integers (cpu in millicores, memory in bytes, counts).
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from scheduler.quantity import parse_duration, parse_resource

from .base import (
    SIM_DURATION_ANNOTATION,
    SIM_EXIT_CODE_ANNOTATION,
    USAGE_FACTOR_LABEL,
    BackendError,
    BackendEvent,
    ClusterBackend,
    Conflict,
    EventType,
    NodeInfo,
    NodeMetrics,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
    Taint,
    restarts_in_place,
    simulated_log_time,
    simulated_pod_log,
)

DEFAULT_MAX_PODS = 110
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
#: At most this many events per :meth:`SimEngine.poll_events` call (the next call returns the rest).
MAX_EVENTS_PER_POLL = 5000
#: Seconds between two looks at the store while :meth:`SimEngine.poll_events` waits.
POLL_INTERVAL = 0.05
_UID_NAMESPACE = uuid.UUID("0b6c3b0e-8f0e-4f57-9d7c-2a0f3f7f6a11")
_FINISHED = ("Succeeded", "Failed")

PodKey = tuple[str, str]
TimerKind = Literal["start", "finish", "remove"]
_TIMERS: tuple[TimerKind, ...] = ("start", "finish", "remove")


# ---------------------------------------------------------------- resources


def integer_resources(requests: dict[str, str], *, pod_slot: bool) -> dict[str, int]:
    """Return quantity strings as scheduler integers (cpu millicores, memory bytes, counts)."""
    out = {name: parse_resource(name, value) for name, value in requests.items()}
    if pod_slot:
        out["pods"] = 1
    return out


def node_capacity(info: NodeInfo) -> dict[str, int]:
    """Return a node's allocatable as integers (pods default 110)."""
    capacity = integer_resources(info.allocatable, pod_slot=False)
    capacity.setdefault("pods", DEFAULT_MAX_PODS)
    return capacity


# ---------------------------------------------------------------- records


@dataclass(slots=True)
class PodRecord:
    """A simulated pod: its spec (a ``PodSpec`` dict), status and kubelet timers (simulated seconds).

    The engine never changes a dict of a record in place (it assigns a new one), so a shallow copy of a
    record is a snapshot.
    """

    namespace: str
    name: str
    uid: str
    spec: dict[str, Any]
    requests: dict[str, str]
    created_at: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)
    phase: str = "Pending"
    node_name: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    deleting: bool = False
    admitted: bool = False
    resource_version: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    start_at: float | None = None
    finish_at: float | None = None
    remove_at: float | None = None
    restart_count: int = 0

    @property
    def key(self) -> PodKey:
        return (self.namespace, self.name)

    @property
    def finished(self) -> bool:
        return self.phase in _FINISHED

    def timer(self, kind: TimerKind) -> float | None:
        at: float | None = getattr(self, f"{kind}_at")
        return at

    def info(self) -> PodInfo:
        """The pod as observed (a copy)."""
        spec = self.spec
        owner = spec.get("owner")
        return PodInfo(
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            phase=self.phase,
            node_name=self.node_name,
            exit_code=self.exit_code,
            reason=self.reason,
            message=self.message,
            annotations=dict(spec.get("annotations") or {}),
            labels=dict(spec.get("labels") or {}),
            scheduler_name=spec.get("scheduler_name", "volcano"),
            requests=dict(self.requests),
            deleting=self.deleting,
            resource_version=str(self.resource_version),
            owner=OwnerReference.from_dict(owner) if owner else None,
            priority_class_name=spec.get("priority_class_name", ""),
            created_at=self.created_at,
            started_at=self.started_at,
            finished_at=self.finished_at,
            restart_count=self.restart_count,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PodRecord:
        return cls(**data)


#: The fields of a pod record, in order (the database store's columns have the same names).
POD_FIELDS = tuple(f.name for f in dataclasses.fields(PodRecord))


@dataclass(slots=True)
class NodeRecord:
    """A simulated node: its ``NodeInfo`` dict, capacity and the resources admitted on it (integers)."""

    name: str
    info: dict[str, Any]
    capacity: dict[str, int]
    used: dict[str, int] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return bool(self.info.get("ready", True))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeRecord:
        return cls(**data)


NODE_FIELDS = tuple(f.name for f in dataclasses.fields(NodeRecord))


@dataclass(frozen=True, slots=True)
class SimSettings:
    """What a simulated cluster was created with (the database store keeps the first process's)."""

    pool: str = ""
    speed: float = 0.0
    default_duration: float = 60.0
    startup_delay: float = 0.0
    delete_grace: float = 0.0


# ---------------------------------------------------------------- store interface


def _due(pod: PodRecord, now: float) -> bool:
    return any(at is not None and at <= now for at in (pod.start_at, pod.finish_at, pod.remove_at))


class SimTx:
    """One locked change of the simulated cluster, opened by a store.

    The records it loads are its own copies, kept in an identity map (one record per pod or node, so
    every transition of the change sees the others'). A store implements the four ``fetch_*`` methods
    (fresh records from its storage) and :meth:`commit`, which writes back what changed, what was added
    or removed, the events, the counters and the time; the store calls it when the change ends without
    an error, and nothing is written otherwise.
    """

    def __init__(self, now: float, settings: SimSettings, rv: int, seq: int) -> None:
        self.now = now
        self.settings = settings
        self.rv = rv
        self.seq = seq
        self.events: list[BackendEvent] = []
        self.pod_map: dict[PodKey, PodRecord] = {}  # loaded or added
        self.gone_pods: set[PodKey] = set()
        self.node_map: dict[str, NodeRecord] = {}
        self.gone_nodes: set[str] = set()

    # ------------------------------------------------------------ what a store implements

    def fetch_pods(self, keys: Collection[PodKey]) -> Iterable[PodRecord]:
        raise NotImplementedError

    def fetch_pods_on_node(self, node: str) -> Iterable[PodRecord]:
        raise NotImplementedError

    def fetch_due_pods(self, now: float) -> Iterable[PodRecord]:
        raise NotImplementedError

    def fetch_nodes(self, names: Collection[str], lock: bool = True) -> Iterable[NodeRecord]:
        """Nodes by name; ``lock=False``: the change only reads them (a store may then leave them unlocked)."""
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ what the engine uses

    def next_rv(self) -> int:
        """The next resourceVersion (one counter for pods and nodes)."""
        self.rv += 1
        return self.rv

    def next_seq(self) -> int:
        """The next number of the sequence that makes pod uids unique."""
        self.seq += 1
        return self.seq

    def emit(self, event: BackendEvent) -> None:
        self.events.append(event)

    def _remember(self, fetched: Iterable[PodRecord]) -> None:
        for pod in fetched:
            if pod.key not in self.gone_pods:
                self.pod_map.setdefault(pod.key, pod)

    def pod(self, key: PodKey) -> PodRecord | None:
        return self.pods([key]).get(key)

    def pods(self, keys: Collection[PodKey]) -> dict[PodKey, PodRecord]:
        missing = [k for k in keys if k not in self.pod_map and k not in self.gone_pods]
        if missing:
            self._remember(self.fetch_pods(missing))
        return {key: self.pod_map[key] for key in keys if key in self.pod_map}

    def _matching(self, fetched: Iterable[PodRecord], keep: Callable[[PodRecord], bool]) -> list[PodRecord]:
        self._remember(fetched)
        return [self.pod_map[key] for key in sorted(self.pod_map) if keep(self.pod_map[key])]

    def pods_on_node(self, node: str) -> list[PodRecord]:
        """The pods bound to ``node``, by key."""
        return self._matching(self.fetch_pods_on_node(node), lambda p: p.node_name == node)

    def due_pods(self, now: float) -> list[PodRecord]:
        """The pods with a timer at or before ``now``, by key."""
        return self._matching(self.fetch_due_pods(now), lambda p: _due(p, now))

    def add_pod(self, pod: PodRecord) -> None:
        self.gone_pods.discard(pod.key)
        self.pod_map[pod.key] = pod

    def remove_pod(self, pod: PodRecord) -> None:
        self.pod_map.pop(pod.key, None)
        self.gone_pods.add(pod.key)

    def node(self, name: str) -> NodeRecord | None:
        return self.nodes([name]).get(name)

    def nodes(self, names: Collection[str], *, lock: bool = True) -> dict[str, NodeRecord]:
        """The nodes by name; ``lock=False`` when the change only reads them (a bind checks Ready)."""
        missing = [n for n in names if n not in self.node_map and n not in self.gone_nodes]
        if missing:
            for node in self.fetch_nodes(missing, lock):
                self.node_map.setdefault(node.name, node)
        return {name: self.node_map[name] for name in names if name in self.node_map}

    def add_node(self, node: NodeRecord) -> None:
        self.gone_nodes.discard(node.name)
        self.node_map[node.name] = node

    def remove_node(self, node: NodeRecord) -> None:
        self.node_map.pop(node.name, None)
        self.gone_nodes.add(node.name)


class SimStore(Protocol):
    """Where a simulated cluster keeps its records, events, time and objects (services etc.)."""

    def transaction(self, *, exclusive: bool = False) -> contextlib.AbstractContextManager[SimTx]:
        """Open a change, read the time, yield a :class:`SimTx`; commit when the block succeeds.

        ``exclusive``: the change runs alone (node-level changes: add, remove, fail, recover, cordon); other
        changes may run at the same time when the store locks per record (each one loads its pods first,
        then its nodes, each kind in one call, which a store can lock in a fixed order).
        """

    def atomic(self) -> contextlib.AbstractContextManager[None]:
        """Group several transactions and event reads (``poll_events``: tick, then take the events)."""

    def settings(self) -> SimSettings: ...

    def now(self) -> float:
        """The simulated time of the last transaction."""

    def clock_now(self) -> float:
        """The clock's time now (never before the stored time)."""

    def get_pod(self, key: PodKey) -> PodRecord | None: ...

    def list_pods(self, namespace: str | None) -> list[PodRecord]:
        """Pods (copies), by key."""

    def get_node(self, name: str) -> NodeRecord | None: ...

    def list_nodes(self) -> list[NodeRecord]:
        """Nodes (copies), by name."""

    def take_events(self, limit: int) -> list[BackendEvent]:
        """Remove and return the oldest queued events."""

    def pending_events(self) -> int: ...

    def wait(self, seconds: float) -> None:
        """Wait for news (at most ``seconds``)."""

    def ensure_object(self, kind: str, namespace: str, name: str, data: dict[str, Any]) -> bool: ...

    def delete_object(self, kind: str, namespace: str, name: str) -> bool: ...

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...


# ---------------------------------------------------------------- transitions


def pod_event(tx: SimTx, type_: EventType, pod: PodRecord) -> None:
    pod.resource_version = tx.next_rv()
    tx.emit(BackendEvent("pod", type_, pod.info()))


def node_event(tx: SimTx, type_: EventType, node: NodeRecord) -> None:
    node.info = {**node.info, "resource_version": str(tx.next_rv())}
    tx.emit(BackendEvent("node", type_, NodeInfo.from_dict(node.info)))


def new_pod(tx: SimTx, spec: PodSpec) -> PodRecord:
    """A new pod (ADDED); the caller checked that its name is free."""
    uid = str(uuid.uuid5(_UID_NAMESPACE, f"{spec.namespace}/{spec.name}/{tx.next_seq()}"))
    pod = PodRecord(spec.namespace, spec.name, uid, spec.to_dict(), spec.requests(), created_at=tx.now)
    pod_event(tx, "ADDED", pod)
    tx.add_pod(pod)
    return pod


def bind_pod(tx: SimTx, pod: PodRecord | None, key: PodKey, node_name: str) -> BackendError | None:
    """Bind a pod to a node (its start timer is armed when the node is Ready); the error otherwise."""
    namespace, name = key
    if pod is None:
        return NotFound(f"pod {namespace}/{name} not found")
    if pod.node_name:
        return Conflict(f"pod {namespace}/{name} is already assigned to node {pod.node_name!r}")
    if pod.deleting:
        return Conflict(f"pod {namespace}/{name} is being deleted")
    node = tx.node(node_name)
    if node is None:
        return NotFound(f"node {node_name} not found")
    pod.node_name = node_name
    if node.ready:
        pod.start_at = tx.now + tx.settings.startup_delay
    pod_event(tx, "MODIFIED", pod)
    return None


def start(tx: SimTx, pod: PodRecord, at: float) -> None:
    """The simulated kubelet admits and starts a bound pod."""
    node = tx.node(pod.node_name) if pod.node_name else None
    if node is None or not node.ready or pod.phase != "Pending" or pod.deleting:
        return
    labels = node.info.get("labels") or {}
    for key, value in (pod.spec.get("node_selector") or {}).items():
        if labels.get(key) != value:
            end(tx, pod, "Failed", None, "NodeAffinity", "node selector mismatch", at)
            return
    usage = integer_resources(pod.requests, pod_slot=True)
    for resource, amount in usage.items():
        if amount > node.capacity.get(resource, 0) - node.used.get(resource, 0):
            end(tx, pod, "Failed", None, f"OutOf{resource}", f"Node didn't have enough resource: {resource}", at)
            return
    pod.usage, pod.admitted = usage, True
    node.used = {k: node.used.get(k, 0) + usage.get(k, 0) for k in {*node.used, *usage}}
    pod.phase, pod.started_at = "Running", at
    pod.finish_at = at + duration(tx, pod)
    pod_event(tx, "MODIFIED", pod)


def duration(tx: SimTx, pod: PodRecord) -> float:
    """The simulated run time: the duration annotation, else the default."""
    annotations = pod.spec.get("annotations") or {}
    if SIM_DURATION_ANNOTATION in annotations:
        with contextlib.suppress(ValueError):
            return parse_duration(annotations[SIM_DURATION_ANNOTATION], plain_seconds=True)
    return tx.settings.default_duration


def finish(tx: SimTx, pod: PodRecord, at: float) -> None:
    """The run ends with the exit code from the annotation (not a number: 1)."""
    if pod.phase != "Running":
        return
    try:
        code = int((pod.spec.get("annotations") or {}).get(SIM_EXIT_CODE_ANNOTATION, "0"))
    except ValueError:
        code = 1
    if code == 0:
        end(tx, pod, "Succeeded", 0, "Completed", "", at)
    else:
        end(tx, pod, "Failed", code, "Error", "", at)


def end(tx: SimTx, pod: PodRecord, phase: str, code: int | None, reason: str, message: str, at: float) -> None:
    release(tx, pod)
    pod.phase, pod.exit_code, pod.reason, pod.message, pod.finished_at = phase, code, reason, message, at
    pod_event(tx, "MODIFIED", pod)


def release(tx: SimTx, pod: PodRecord) -> None:
    """Give back what an admitted pod holds on its node."""
    if pod.admitted:
        node = tx.node(pod.node_name)
        if node is not None:
            node.used = {k: v - pod.usage.get(k, 0) for k, v in node.used.items()}
        pod.admitted, pod.usage = False, {}


def delete(tx: SimTx, pod: PodRecord, grace: float) -> None:
    """Delete a pod: gracefully (``deleting``, removed after ``grace``) when bound and unfinished."""
    if pod.deleting:
        return
    running = pod.node_name and pod.phase in ("Pending", "Running")
    if grace <= 0 or not running:
        remove(tx, pod)
        return
    pod.deleting, pod.start_at, pod.remove_at = True, None, tx.now + grace
    pod_event(tx, "MODIFIED", pod)


def remove(tx: SimTx, pod: PodRecord) -> None:
    """Release a pod's resources, record its DELETED event and drop it."""
    release(tx, pod)
    pod.deleting = True
    pod_event(tx, "DELETED", pod)
    tx.remove_pod(pod)


def stop(tx: SimTx, pod: PodRecord, exit_code: int, reason: str) -> None:
    """End an unfinished pod now with an exit code (0: Succeeded)."""
    pod.start_at = pod.finish_at = None
    end(tx, pod, "Succeeded" if exit_code == 0 else "Failed", exit_code, reason, "", tx.now)


def lose_pods(tx: SimTx, node: str, evict: bool) -> None:
    """A node failed: its unfinished pods are evicted (deleted) or failed, with reason NodeLost."""
    for pod in tx.pods_on_node(node):
        if pod.finished:
            continue
        if evict:
            pod.reason, pod.message = "NodeLost", f"node {node} failed"
            remove(tx, pod)
        else:
            pod.start_at = pod.finish_at = None
            end(tx, pod, "Failed", None, "NodeLost", f"node {node} failed", tx.now)


def new_node(tx: SimTx, info: NodeInfo) -> NodeRecord:
    """A new node (ADDED); :class:`Conflict` if the name is taken."""
    if tx.node(info.name) is not None:
        raise Conflict(f"node {info.name} already exists")
    node = NodeRecord(info.name, info.to_dict(), node_capacity(info))
    node_event(tx, "ADDED", node)
    tx.add_node(node)
    return node


def tick(tx: SimTx) -> int:
    """Fire every pod timer due at or before now, in time order; return how many fired."""
    now = tx.now
    pods = {p.key: p for p in tx.due_pods(now)}
    if not pods:
        return 0
    tx.nodes({p.node_name for p in pods.values() if p.node_name})
    heap: list[tuple[float, int, TimerKind, PodKey]] = []
    seq = 0
    for pod in pods.values():
        for kind in _TIMERS:
            at = pod.timer(kind)
            if at is not None and at <= now:
                seq += 1
                heap.append((at, seq, kind, pod.key))
    heapq.heapify(heap)
    fired = 0
    removed: set[PodKey] = set()
    while heap:
        at, _, kind, key = heapq.heappop(heap)
        pod = pods[key]
        if key in removed or pod.timer(kind) != at:
            continue
        setattr(pod, f"{kind}_at", None)
        fired += 1
        if kind == "start":
            start(tx, pod, at)
            if pod.finish_at is not None and pod.finish_at <= now:
                seq += 1
                heapq.heappush(heap, (pod.finish_at, seq, "finish", key))
        elif kind == "finish":
            finish(tx, pod, at)
        else:
            remove(tx, pod)
            removed.add(key)
    return fired


def _without_unreachable(info: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in info.get("taints") or [] if t["key"] != UNREACHABLE_TAINT]


# ---------------------------------------------------------------- the backend


class SimEngine(ClusterBackend):
    """The simulated cluster behind the :class:`ClusterBackend` interface, over a :class:`SimStore`."""

    name = "sim"

    def __init__(self, store: SimStore) -> None:
        self.store = store

    @contextlib.contextmanager
    def _tx(self, *, exclusive: bool = False) -> Iterator[SimTx]:
        with self.store.transaction(exclusive=exclusive) as tx:
            yield tx

    # ------------------------------------------------------------ time and settings

    def now(self) -> float:
        """Simulated time of the last change."""
        return self.store.now()

    def settings(self) -> dict[str, Any]:
        """Return the clock speed, durations and pool the cluster was created with, and its time."""
        settings = self.store.settings()
        return {
            "speed": settings.speed,
            "now": self.store.now(),
            "default_duration": settings.default_duration,
            "startup_delay": settings.startup_delay,
            "delete_grace": settings.delete_grace,
            "pool": settings.pool,
        }

    # ------------------------------------------------------------ reads

    def list_nodes(self) -> list[NodeInfo]:
        return [NodeInfo.from_dict(n.info) for n in self.store.list_nodes()]

    def node_metrics(self) -> list[NodeMetrics]:
        """The usage model: each node uses its pool's usage factor (the ``sim.volcanoweb.io/usage-factor`` label,
        default 1) times the cpu and memory requests of the pods admitted on it, measured now (wall time)."""
        now = time.time()
        out = []
        for n in self.store.list_nodes():
            labels = n.info.get("labels") or {}
            try:
                factor = float(labels.get(USAGE_FACTOR_LABEL, "1"))
            except ValueError:
                factor = 1.0
            cpu, memory = n.used.get("cpu", 0), n.used.get("memory", 0)
            out.append(NodeMetrics(n.name, round(cpu * factor), round(memory * factor), now))
        return out

    def node_usage(self, name: str) -> dict[str, int]:
        """Resources admitted on a node (integers: cpu millicores, memory bytes, pod count)."""
        node = self.store.get_node(name)
        if node is None:
            raise NotFound(f"node {name} not found")
        return dict(node.used)

    def list_pods(self, scheduler_name: str | None = None, namespace: str | None = None) -> list[PodInfo]:
        pods = [p.info() for p in self.store.list_pods(namespace)]
        return [p for p in pods if scheduler_name is None or p.scheduler_name == scheduler_name]

    def get_pod(self, namespace: str, name: str) -> PodInfo:
        return self._stored_pod(namespace, name).info()

    def _stored_pod(self, namespace: str, name: str) -> PodRecord:
        pod = self.store.get_pod((namespace, name))
        if pod is None:
            raise NotFound(f"pod {namespace}/{name} not found")
        return pod

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
        pod = self._stored_pod(namespace, name)
        return simulated_pod_log(
            pod.info(),
            self.store.clock_now(),  # the clock's time now, not only the last change's
            container=container,
            tail_lines=tail_lines,
            previous=previous,
            planned_finish=pod.finish_at,
        )

    def log_wall_time(self, line: str) -> float | None:
        """Map a log line's simulated time to the wall clock through the clock's speed (now, for a still clock)."""
        at = simulated_log_time(line)
        if at is None:
            return None
        speed = self.store.settings().speed
        wall = time.time()
        return wall if speed <= 0 else wall - max(0.0, self.store.clock_now() - at) / speed

    # ------------------------------------------------------------ pods

    def create_pod(self, spec: PodSpec) -> PodInfo:
        with self._tx() as tx:
            if tx.pod((spec.namespace, spec.name)) is not None:
                raise Conflict(f"pod {spec.namespace}/{spec.name} already exists")
            return new_pod(tx, spec).info()

    def create_pods(self, specs: Iterable[PodSpec]) -> dict[PodKey, PodInfo | BackendError]:
        """Create many pods in one transaction; return each pod's info, or :class:`Conflict`."""
        out: dict[PodKey, PodInfo | BackendError] = {}
        wanted = list(specs)
        if not wanted:
            return out
        with self._tx() as tx:
            taken = set(tx.pods({(s.namespace, s.name) for s in wanted}))
            for spec in wanted:
                key = (spec.namespace, spec.name)
                if key in taken:
                    out[key] = Conflict(f"pod {spec.namespace}/{spec.name} already exists")
                    continue
                taken.add(key)
                out[key] = new_pod(tx, spec).info()
        return out

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        with self._tx() as tx:
            pod = tx.pod((namespace, name))
            if pod is None:
                return False
            grace = tx.settings.delete_grace if grace_period_seconds is None else float(grace_period_seconds)
            delete(tx, pod, grace)
            return True

    def bind(self, namespace: str, name: str, node: str) -> None:
        error = self.bind_many([(namespace, name, node)])[(namespace, name)]
        if error is not None:
            raise error

    def bind_many(self, binds: Iterable[tuple[str, str, str]]) -> dict[PodKey, BackendError | None]:
        """Bind many pods in one transaction; return each pod's error (None when bound).

        Errors are those of :meth:`bind`: :class:`NotFound` (pod or node) and :class:`Conflict`
        (already bound: the message names the node, see the message).
        """
        wanted = list(binds)
        results: dict[PodKey, BackendError | None] = {}
        if not wanted:
            return results
        with self._tx() as tx:
            pods = tx.pods({(ns, name) for ns, name, _ in wanted})
            tx.nodes({node for _, _, node in wanted}, lock=False)  # a bind reads its node (Ready), never changes it
            for ns, name, node in wanted:
                results[(ns, name)] = bind_pod(tx, pods.get((ns, name)), (ns, name), node)
        return results

    def evict(self, namespace: str, name: str) -> None:
        with self._tx() as tx:
            pod = self._pod(tx, namespace, name)
            if pod.deleting:
                return
            if not pod.finished:
                pod.reason, pod.message = "Evicted", "Evicted through the Eviction API"
            delete(tx, pod, tx.settings.delete_grace)

    def patch_pod_annotations(self, namespace: str, name: str, annotations: dict[str, str | None]) -> PodInfo:
        with self._tx() as tx:
            pod = self._pod(tx, namespace, name)
            current = dict(pod.spec.get("annotations") or {})
            for key, value in annotations.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            pod.spec = {**pod.spec, "annotations": current}
            pod_event(tx, "MODIFIED", pod)
            return pod.info()

    def fail_pod(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> None:
        """End an unfinished pod now with an exit code (137: killed; 0: Succeeded)."""
        with self._tx() as tx:
            pod = self._pod(tx, namespace, name)
            if pod.finished:
                raise Conflict(f"pod {namespace}/{name} already finished ({pod.phase})")
            stop(tx, pod, exit_code, reason)

    def restart_container(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> PodInfo:
        """The running pod's main container exits with ``exit_code``: restarted in place (restartCount + 1,
        still Running, its simulated run starts again) under restartPolicy OnFailure (non-zero code) or
        Always, else the pod ends as with :meth:`fail_pod`."""
        with self._tx() as tx:
            pod = self._pod(tx, namespace, name)
            if pod.phase != "Running":
                raise Conflict(f"pod {namespace}/{name} is not running ({pod.phase})")
            if restarts_in_place(pod.spec.get("restart_policy") or "Never", exit_code):
                pod.restart_count += 1
                pod.reason, pod.message = reason, f"container restarted after exit code {exit_code}"
                pod.finish_at = tx.now + duration(tx, pod)
                pod_event(tx, "MODIFIED", pod)
            else:
                stop(tx, pod, exit_code, reason if exit_code else "Completed")
            return pod.info()

    @staticmethod
    def _pod(tx: SimTx, namespace: str, name: str) -> PodRecord:
        pod = tx.pod((namespace, name))
        if pod is None:
            raise NotFound(f"pod {namespace}/{name} not found")
        return pod

    # ------------------------------------------------------------ nodes

    def add_node(self, info: NodeInfo) -> None:
        """Add a node (ADDED event); :class:`Conflict` if the name is taken."""
        with self._tx(exclusive=True) as tx:
            new_node(tx, info)

    def remove_node(self, name: str) -> None:
        """Delete a node; its unfinished pods fail with reason NodeLost."""
        with self._tx(exclusive=True) as tx:
            node = self._node(tx, name)
            lose_pods(tx, name, evict=False)
            node_event(tx, "DELETED", node)
            tx.remove_node(node)

    def fail_node(self, name: str, evict_pods: bool = True) -> None:
        """Make a node NotReady and unreachable-tainted; its unfinished pods are evicted (deleted, reason
        NodeLost), or with ``evict_pods=False`` marked Failed with reason NodeLost."""
        with self._tx(exclusive=True) as tx:
            node = self._node(tx, name)
            unreachable = [Taint(UNREACHABLE_TAINT, "", effect).to_dict() for effect in ("NoSchedule", "NoExecute")]
            taints = [*_without_unreachable(node.info), *unreachable]
            node.info = {**node.info, "ready": False, "taints": taints}
            node_event(tx, "MODIFIED", node)
            lose_pods(tx, name, evict=evict_pods)

    def recover_node(self, name: str) -> None:
        """Make a failed node Ready again; pods bound to it start."""
        with self._tx(exclusive=True) as tx:
            node = self._node(tx, name)
            node.info = {**node.info, "ready": True, "taints": _without_unreachable(node.info)}
            node_event(tx, "MODIFIED", node)
            for pod in tx.pods_on_node(name):
                if pod.phase == "Pending" and not pod.admitted and pod.start_at is None:
                    pod.start_at = tx.now + tx.settings.startup_delay

    def cordon(self, name: str, unschedulable: bool = True) -> None:
        """Set ``spec.unschedulable`` on a node."""
        with self._tx(exclusive=True) as tx:
            node = self._node(tx, name)
            node.info = {**node.info, "unschedulable": unschedulable}
            node_event(tx, "MODIFIED", node)

    @staticmethod
    def _node(tx: SimTx, name: str) -> NodeRecord:
        node = tx.node(name)
        if node is None:
            raise NotFound(f"node {name} not found")
        return node

    # ------------------------------------------------------------ services, config maps, secrets

    def ensure_service(self, spec: ServiceSpec) -> bool:
        data = {
            "selector": dict(spec.selector),
            "ports": list(spec.ports),
            "labels": dict(spec.labels),
            "owner": spec.owner.to_dict() if spec.owner else None,
            "headless": spec.headless,
        }
        return self.store.ensure_object("service", spec.namespace, spec.name, data)

    def delete_service(self, namespace: str, name: str) -> bool:
        return self.store.delete_object("service", namespace, name)

    def ensure_config_map(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
    ) -> bool:
        doc = {"data": dict(data), "labels": dict(labels or {}), "owner": owner.to_dict() if owner else None}
        return self.store.ensure_object("configmap", namespace, name, doc)

    def delete_config_map(self, namespace: str, name: str) -> bool:
        return self.store.delete_object("configmap", namespace, name)

    def ensure_secret(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
        type: str = "Opaque",
    ) -> bool:
        doc = {
            "data": dict(data),
            "labels": dict(labels or {}),
            "owner": owner.to_dict() if owner else None,
            "type": type,
        }
        return self.store.ensure_object("secret", namespace, name, doc)

    def delete_secret(self, namespace: str, name: str) -> bool:
        return self.store.delete_object("secret", namespace, name)

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Return a stored service/configmap/secret document (tests and the UI)."""
        return self.store.get_object(kind, namespace, name)

    # ------------------------------------------------------------ kubelet and events

    def tick(self) -> int:
        """Fire every pod timer due at or before now, in time order; return how many fired."""
        with self._tx() as tx:
            return tick(tx)

    def poll_events(self, timeout: float = 0.0) -> list[BackendEvent]:
        """Tick, then take the queued events (with the database store: deleted in the caller's transaction)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            with self.store.atomic():
                self.tick()
                events = self.store.take_events(MAX_EVENTS_PER_POLL)
            if events:
                return events
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            self.store.wait(min(POLL_INTERVAL, remaining))

    def pending_events(self) -> int:
        """Return how many events wait to be polled."""
        return self.store.pending_events()
