"""SimCluster: the embedded, KWOK-like simulated cluster kept in memory (unit tests and tools).

``SimCluster`` is the simulation engine (:mod:`.simengine`, the same kubelet state machine as the
product's database-backed ``DatabaseSimCluster``) over a :class:`MemoryStore`. This module also holds
what both share: the pool spec and duration parsers and the clocks.

Pool spec format
================

``pools := pool ("," pool)*`` where ``pool := NAME ":" [COUNT "x"] SHAPE [LABELS] [TOPOLOGY]``:

* ``NAME``: pool name (``[a-z0-9-]+``); nodes are named ``<NAME>-<i>`` (i from 0)
  and labelled ``sim.volcanoweb.io/pool=<NAME>``, ``kubernetes.io/hostname=<node name>``,
  ``kubernetes.io/os=linux`` and ``kubernetes.io/arch=amd64``, with 100Gi of ``ephemeral-storage``;
* ``COUNT``: number of nodes (default 1);
* ``SHAPE``: one or more ``<number><unit>`` terms, units ``c`` (CPU cores,
  decimals allowed: ``0.5c``), ``Ki``/``Mi``/``Gi``/``Ti`` (memory), ``gpu``
  (``nvidia.com/gpu``) and ``pods`` (max pods, default 110);
* ``LABELS``: optional extra node labels in brackets, ``[k=v;k2=v2]``;
* ``TOPOLOGY``: optional network topology in braces, ``{rack=16}`` or ``{rack=16;spine=4}``: nodes in
  racks of 16 consecutive nodes, racks in spines of 4, labelled as Volcano's label-based HyperNode
  auto-discovery reads them (``volcano.sh/hypernode=<pool>-rack-<i>``, tier 1, and
  ``volcano.sh/hypercluster=<pool>-spine-<j>``, tier 2; see ``jobs.services.discover_hypernodes``).
* ``HARDWARE``: optional, in parentheses, ``;``-separated (the simulated cluster has no hardware to measure):

  * ``usage=F``: the usage model's factor (default 1; label ``sim.volcanoweb.io/usage-factor``): a node's
    measured cpu and memory use is F times the requests of the pods running on it (what
    ``ClusterBackend.node_metrics`` reports, for the usage and rescheduling plugins);
  * ``numa=SxNxCxT``: sockets x NUMA nodes per socket x cores per NUMA node x threads per core (label
    ``sim.volcanoweb.io/numa``), with ``topology=<policy>`` (``none``, ``best-effort``, ``restricted``,
    ``single-numa-node``; label ``sim.volcanoweb.io/topology-manager-policy``, CPU manager ``static``): the
    NUMA layout the numa-aware plugin reads (Volcano's Numatopology);
  * ``gpumem=M``: GPU memory per card (in the device plugin's unit, MiB): the node's allocatable gets
    ``volcano.sh/gpu-number`` = its ``gpu`` count and ``volcano.sh/gpu-memory`` = count x M, the cards
    deviceshare shares.
  * ``vgpu=M[xS]``: HAMi virtual GPUs (Volcano's vGPU device): each of the ``gpu`` cards has M MiB and is
    shared by up to S pods (the device plugin's split count, default 10); the node's allocatable gets
    ``volcano.sh/vgpu-number`` = count x S, ``volcano.sh/vgpu-memory`` = count x M and
    ``volcano.sh/vgpu-cores`` = count x 100, and it registers the cards (label ``sim.volcanoweb.io/vgpu``:
    ``COUNTxMxS``; its Node shows the ``volcano.sh/node-vgpu-register`` annotation Volcano reads).

Example: ``"cpu:8x16c64Gi,gpu:4x32c256Gi4gpu[accelerator=a100]"`` is 8 nodes
with 16 CPUs and 64 GiB each, and 4 nodes with 32 CPUs, 256 GiB and 4 GPUs;
``"gpu:64x32c256Gi8gpu{rack=16;spine=2}"`` is 4 racks of 16 GPU nodes in 2 spines;
``"cpu:4x16c64Gi(usage=0.8;numa=2x1x4x2;topology=single-numa-node),gpu:2x32c256Gi4gpu(gpumem=40960)"`` declares
usage factors, a NUMA layout and shareable GPU memory; ``"vgpu:2x32c256Gi4gpu(vgpu=40960x4)"`` vGPU cards.

Pod lifecycle
=============

See :mod:`.simengine`: bound pods start after ``startup_delay`` (admitted by the simulated kubelet,
or Failed with ``OutOf<resource>`` / ``NodeAffinity``), run for the duration of the pod annotation
``sim.volcanoweb.io/duration`` (Go-style "30s", "5m", "1h30m", "250ms" or plain seconds; else
``default_duration``) and end with the exit code of ``sim.volcanoweb.io/exit-code`` (default 0).
Time moves in :meth:`SimCluster.tick` (also called by :meth:`SimCluster.poll_events` and
:meth:`SimCluster.advance`). The whole state is a JSON-ready dict (:meth:`SimCluster.to_state` /
:meth:`SimCluster.from_state`).
"""

from __future__ import annotations

import contextlib
import copy
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, Protocol

from .base import NUMA_LABEL, TOPOLOGY_POLICY_LABEL, USAGE_FACTOR_LABEL, VGPU_LABEL, BackendEvent, NodeInfo
from .simengine import UNREACHABLE_TAINT, SimEngine
from .simrecords import DEFAULT_MAX_PODS, NodeRecord, PodKey, PodRecord, SimSettings
from .simstore import SimTx
from .simtransitions import new_node

__all__ = [
    "DEFAULT_MAX_PODS",
    "UNREACHABLE_TAINT",
    "Clock",
    "ManualClock",
    "MemoryStore",
    "ScaledClock",
    "SimCluster",
    "parse_pool_spec",
]

POOL_LABEL = "sim.volcanoweb.io/pool"
#: The node labels of a pool's topology (Volcano's label discovery example: tor-level HyperNode, hypercluster).
RACK_LABEL = "volcano.sh/hypernode"
SPINE_LABEL = "volcano.sh/hypercluster"
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: The well-known labels every simulated node has, as a kubelet sets them (examples select on them).
OS_LABEL, ARCH_LABEL = "kubernetes.io/os", "kubernetes.io/arch"
#: The local disk every simulated node offers unless its shape says otherwise.
DEFAULT_EPHEMERAL_STORAGE = "100Gi"
STATE_VERSION = 2
OBJECT_KINDS = ("service", "configmap", "secret")


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
    r"(?P<shape>[^\[\]{}()]+)(?:\[(?P<labels>[^\]]*)\])?(?:\{(?P<topology>[^}]*)\})?(?:\((?P<hardware>[^)]*)\))?$"
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
        rack, spine = _parse_topology(match["topology"] or "", text)
        hardware = _parse_hardware(match["hardware"] or "", text, allocatable)
        for index in range(count):
            node = f"{name}-{index}"
            labels = {
                POOL_LABEL: name,
                HOSTNAME_LABEL: node,
                OS_LABEL: "linux",
                ARCH_LABEL: "amd64",
                **hardware,
                **extra,
            }
            if rack:
                labels[RACK_LABEL] = f"{name}-rack-{index // rack}"
                if spine:
                    labels[SPINE_LABEL] = f"{name}-spine-{index // (rack * spine)}"
            nodes.append(NodeInfo(name=node, allocatable=dict(allocatable), labels=labels))
    return nodes


def _parse_topology(text: str, pool: str) -> tuple[int, int]:
    """``rack=N[;spine=M]``: nodes per rack and racks per spine (0: none)."""
    sizes = {"rack": 0, "spine": 0}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition("=")
        if not sep or key not in sizes or not value.isdigit() or int(value) < 1:
            raise ValueError(f"pool {pool!r}: invalid topology term {item!r} (rack=N, spine=M, positive)")
        sizes[key] = int(value)
    if sizes["spine"] and not sizes["rack"]:
        raise ValueError(f"pool {pool!r}: spine=M needs rack=N")
    return sizes["rack"], sizes["spine"]


_NUMA_RE = re.compile(r"^[1-9]\d*x[1-9]\d*x[1-9]\d*x[1-9]\d*$")
_TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")


def _parse_hardware(text: str, pool: str, allocatable: dict[str, str]) -> dict[str, str]:
    """``usage=F;numa=SxNxCxT;topology=P;gpumem=M;vgpu=M[xS]``: the node labels they become (``gpumem`` and
    ``vgpu`` add the GPU sharing resources to ``allocatable``)."""
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition("=")
        if key == "usage" and sep and re.fullmatch(r"\d+(\.\d+)?", value):
            labels[USAGE_FACTOR_LABEL] = value
        elif key == "numa" and sep and _NUMA_RE.match(value):
            labels[NUMA_LABEL] = value
        elif key == "topology" and value in _TOPOLOGY_POLICIES:
            labels[TOPOLOGY_POLICY_LABEL] = value
        elif key == "gpumem" and value.isdigit() and int(value) > 0:
            cards = _gpu_count(pool, allocatable, key)
            allocatable["volcano.sh/gpu-number"] = str(cards)
            allocatable["volcano.sh/gpu-memory"] = str(cards * int(value))
        elif key == "vgpu" and _VGPU_RE.match(value):
            labels[VGPU_LABEL] = _vgpu(pool, allocatable, value)
        else:
            raise ValueError(
                f"pool {pool!r}: invalid hardware term {item!r} (usage=F, numa=SxNxCxT, "
                "topology=none|best-effort|restricted|single-numa-node, gpumem=MiB, vgpu=MiB[xSPLIT])"
            )
    if TOPOLOGY_POLICY_LABEL in labels and NUMA_LABEL not in labels:
        raise ValueError(f"pool {pool!r}: topology=... needs numa=SxNxCxT")
    return labels


_VGPU_RE = re.compile(r"^[1-9]\d*(x[1-9]\d*)?$")
#: The vGPU device plugin's default split count (pods sharing a card).
DEFAULT_VGPU_SPLIT = 10


def _gpu_count(pool: str, allocatable: dict[str, str], term: str) -> int:
    cards = int(float(allocatable.get("nvidia.com/gpu", "0")))
    if not cards:
        raise ValueError(f"pool {pool!r}: {term} needs a gpu count in the shape")
    return cards


def _vgpu(pool: str, allocatable: dict[str, str], value: str) -> str:
    """``vgpu=M[xS]``: the node's vGPU resources (added to ``allocatable``) and its ``COUNTxMxS`` label."""
    cards = _gpu_count(pool, allocatable, "vgpu")
    memory, _, split = value.partition("x")
    share = int(split) if split else DEFAULT_VGPU_SPLIT
    allocatable["volcano.sh/vgpu-number"] = str(cards * share)
    allocatable["volcano.sh/vgpu-memory"] = str(cards * int(memory))
    allocatable["volcano.sh/vgpu-cores"] = str(cards * 100)
    return f"{cards}x{memory}x{share}"


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
    allocatable.setdefault("ephemeral-storage", DEFAULT_EPHEMERAL_STORAGE)
    return allocatable


def _parse_labels(text: str, pool: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"pool {pool!r}: invalid label {item!r}")
        labels[key] = value
    return labels


# ---------------------------------------------------------------- the in-memory store


class _MemoryTx(SimTx):
    """A transaction of the :class:`MemoryStore`: copies of the stored records, written back on commit."""

    def __init__(self, store: MemoryStore, now: float) -> None:
        super().__init__(now, store.sim_settings, store.rv, store.seq)
        self.store = store

    def fetch_pods(self, keys: Collection[PodKey]) -> Iterable[PodRecord]:
        pods = self.store.pods
        return [copy.copy(pods[key]) for key in keys if key in pods]

    def fetch_pods_on_node(self, node: str) -> Iterable[PodRecord]:
        return [copy.copy(p) for p in self.store.pods.values() if p.node_name == node]

    def fetch_due_pods(self, now: float) -> Iterable[PodRecord]:
        return [
            copy.copy(p)
            for p in self.store.pods.values()
            if any(at is not None and at <= now for at in (p.start_at, p.finish_at, p.remove_at))
        ]

    def fetch_nodes(self, names: Collection[str], lock: bool = True) -> Iterable[NodeRecord]:
        nodes = self.store.nodes
        return [copy.copy(nodes[name]) for name in names if name in nodes]

    def commit(self) -> None:
        store = self.store
        for key in self.gone_pods:
            store.pods.pop(key, None)
        store.pods.update(self.pod_map)
        for name in self.gone_nodes:
            store.nodes.pop(name, None)
        store.nodes.update(self.node_map)
        store.events.extend(self.events)
        store.rv, store.seq, store.last_now = self.rv, self.seq, self.now


class MemoryStore:
    """The simulated cluster's records in dicts, under one re-entrant lock (see :class:`.simstore.SimStore`).

    A transaction works on copies and writes them back when it ends without an error, so a failed call
    changes nothing, as with the database store.
    """

    def __init__(self, clock: Clock, settings: SimSettings) -> None:
        self.clock = clock
        self.sim_settings = settings
        self.pods: dict[PodKey, PodRecord] = {}
        self.nodes: dict[str, NodeRecord] = {}
        self.events: list[BackendEvent] = []
        self.objects: dict[str, dict[PodKey, dict[str, Any]]] = {kind: {} for kind in OBJECT_KINDS}
        self.rv = 0
        self.seq = 0
        self.last_now = clock.now()
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)

    @contextlib.contextmanager
    def transaction(self, *, exclusive: bool = False) -> Iterator[_MemoryTx]:
        with self._lock:  # every change is exclusive here
            tx = _MemoryTx(self, max(self.clock.now(), self.last_now))
            yield tx
            tx.commit()
            if tx.events:
                self._changed.notify_all()

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        with self._lock:
            yield

    def settings(self) -> SimSettings:
        return self.sim_settings

    def now(self) -> float:
        return self.last_now

    def clock_now(self) -> float:
        with self._lock:
            return max(self.clock.now(), self.last_now)

    def get_pod(self, key: PodKey) -> PodRecord | None:
        with self._lock:
            pod = self.pods.get(key)
            return None if pod is None else copy.copy(pod)

    def list_pods(self, namespace: str | None) -> list[PodRecord]:
        with self._lock:
            return [copy.copy(p) for k, p in sorted(self.pods.items()) if namespace is None or k[0] == namespace]

    def get_node(self, name: str) -> NodeRecord | None:
        with self._lock:
            node = self.nodes.get(name)
            return None if node is None else copy.copy(node)

    def list_nodes(self) -> list[NodeRecord]:
        with self._lock:
            return [copy.copy(self.nodes[name]) for name in sorted(self.nodes)]

    def take_events(self, limit: int) -> list[BackendEvent]:
        with self._lock:
            events, self.events = self.events[:limit], self.events[limit:]
            return events

    def pending_events(self) -> int:
        with self._lock:
            return len(self.events)

    def wait(self, seconds: float) -> None:
        with self._changed:
            self._changed.wait(seconds)

    def ensure_object(self, kind: str, namespace: str, name: str, data: dict[str, Any]) -> bool:
        with self._lock:
            store = self.objects[kind]
            if (namespace, name) in store:
                return False
            store[(namespace, name)] = data
            return True

    def delete_object(self, kind: str, namespace: str, name: str) -> bool:
        with self._lock:
            return self.objects[kind].pop((namespace, name), None) is not None

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            found = self.objects[kind].get((namespace, name))
            return None if found is None else dict(found)

    def to_state(self) -> dict[str, Any]:
        with self._lock:
            settings = self.sim_settings
            return {
                "version": STATE_VERSION,
                "now": self.last_now,
                "rv": self.rv,
                "seq": self.seq,
                "default_duration": settings.default_duration,
                "startup_delay": settings.startup_delay,
                "delete_grace": settings.delete_grace,
                "nodes": [self.nodes[name].to_dict() for name in sorted(self.nodes)],
                "pods": [self.pods[key].to_dict() for key in sorted(self.pods)],
                **{kind: _objects_to_list(self.objects[kind]) for kind in OBJECT_KINDS},
                "events": [event.to_dict() for event in self.events],
            }

    def load_state(self, state: dict[str, Any]) -> None:
        with self._lock:
            self.last_now = float(state["now"])
            self.rv, self.seq = state["rv"], state["seq"]
            self.nodes = {n["name"]: NodeRecord.from_dict(n) for n in state["nodes"]}
            self.pods = {(p["namespace"], p["name"]): PodRecord.from_dict(p) for p in state["pods"]}
            for kind in OBJECT_KINDS:
                self.objects[kind] = _objects_from_list(state[kind])
            self.events = [BackendEvent.from_dict(e) for e in state["events"]]


# ---------------------------------------------------------------- the backend


class SimCluster(SimEngine):
    """The simulated cluster in memory: :class:`.simengine.SimEngine` over a :class:`MemoryStore`."""

    store: MemoryStore

    def __init__(
        self,
        pools: str | Iterable[NodeInfo] = "",
        clock: Clock | None = None,
        default_duration: float = 60.0,
        startup_delay: float = 0.0,
        delete_grace: float = 0.0,
    ) -> None:
        self.clock: Clock = clock if clock is not None else ManualClock()
        settings = SimSettings(
            pool=pools if isinstance(pools, str) else "",
            speed=self.clock.speed,
            default_duration=float(default_duration),
            startup_delay=float(startup_delay),
            delete_grace=float(delete_grace),
        )
        super().__init__(MemoryStore(self.clock, settings))
        nodes = parse_pool_spec(pools) if isinstance(pools, str) else list(pools)
        if nodes:
            with self.store.transaction() as tx:
                for node in nodes:
                    new_node(tx, node)

    @property
    def services(self) -> dict[PodKey, dict[str, Any]]:
        """Services by (namespace, name) (the stored documents)."""
        return self.store.objects["service"]

    @property
    def config_maps(self) -> dict[PodKey, dict[str, Any]]:
        """ConfigMaps by (namespace, name) (the stored documents)."""
        return self.store.objects["configmap"]

    @property
    def secrets(self) -> dict[PodKey, dict[str, Any]]:
        """Secrets by (namespace, name) (the stored documents)."""
        return self.store.objects["secret"]

    def advance(self, seconds: float) -> int:
        """Move a :class:`ManualClock` forward and tick."""
        if not isinstance(self.clock, ManualClock):
            raise TypeError("advance() needs a ManualClock")
        self.clock.advance(seconds)
        return self.tick()

    def to_state(self) -> dict[str, Any]:
        """The whole simulation as a JSON-ready dict (events not yet polled included)."""
        return self.store.to_state()

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
        sim.store.load_state(state)
        return sim


def _objects_to_list(store: dict[PodKey, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"namespace": ns, "name": name, **value} for (ns, name), value in sorted(store.items())]


def _objects_from_list(items: list[dict[str, Any]]) -> dict[PodKey, dict[str, Any]]:
    store: dict[PodKey, dict[str, Any]] = {}
    for item in items:
        values = dict(item)
        key = (values.pop("namespace"), values.pop("name"))
        store[key] = values
    return store
