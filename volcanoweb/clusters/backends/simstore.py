"""The store interface of the simulated cluster: one locked change (:class:`SimTx`) and its store.

A :class:`SimStore` keeps the records, events, time and objects (services etc.) of one simulated
cluster; the engine (:mod:`.simengine`) asks it for a :class:`SimTx` per change. Two stores exist:
:class:`~volcanoweb.clusters.backends.sim.MemoryStore` (dicts under a lock) and
:class:`~volcanoweb.clusters.backends.simdb.DatabaseStore` (the ``Sim*`` tables).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol

from .base import BackendEvent
from .simrecords import NodeRecord, PodKey, PodRecord, SimSettings


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
