"""DatabaseSimCluster: the simulated cluster with its state in the database, shared by all processes.

The simulation engine (:mod:`volcanoweb.clusters.backends.simengine`, the same one ``SimCluster`` runs
in memory) over a :class:`DatabaseStore`: the ``Sim*`` tables of :mod:`volcanoweb.clusters.models`, so the
web process, Celery workers and beat see ONE cluster.

Every transaction first locks the :class:`SimState` row; that row is the cluster's lock, clock anchor
and resourceVersion counter. A transaction loads only the pods and nodes it touches (the kubelet's tick:
pods whose timers are due, through indexed columns), so its cost follows the number of changes, not the
number of pods; on commit it writes what changed with one statement per kind of write. Events are rows
consumed (deleted) by ``poll_events`` in the caller's transaction: when the caller mirrors them in the
same transaction, a crash loses nothing. See ``docs/adr/0014-one-simulated-cluster-engine.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Collection, Iterator
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from volcanoweb.clusters.backends.base import BackendEvent
from volcanoweb.clusters.backends.sim import Clock, ScaledClock, parse_pool_spec
from volcanoweb.clusters.backends.simengine import (
    NODE_FIELDS,
    POD_FIELDS,
    NodeRecord,
    PodKey,
    PodRecord,
    SimEngine,
    SimSettings,
    integer_resources,
    new_node,
    node_capacity,
)
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.clusters.models import SimEvent, SimNode, SimObject, SimPod, SimState

__all__ = ["DatabaseSimCluster", "DatabaseStore", "integer_resources", "node_capacity"]

STATE_PK = 1


def _pod_record(row: SimPod) -> PodRecord:
    return PodRecord(**{name: getattr(row, name) for name in POD_FIELDS})


def _values(record: PodRecord | NodeRecord, fields: tuple[str, ...]) -> tuple[Any, ...]:
    """The record's values (shallow: the engine replaces a record's dicts, never changes them)."""
    return tuple(getattr(record, name) for name in fields)


def _node_record(row: SimNode) -> NodeRecord:
    return NodeRecord(name=row.name, info=row.info, capacity=row.capacity, used=row.used)


def _settings(state: SimState) -> SimSettings:
    return SimSettings(
        pool=state.pool,
        speed=state.speed,
        default_duration=state.default_duration,
        startup_delay=state.startup_delay,
        delete_grace=state.delete_grace,
    )


class _DatabaseTx:
    """A transaction of the :class:`DatabaseStore` (the state row locked): records loaded from rows,
    compared with what was loaded on commit, and written back in bulk."""

    def __init__(self, state: SimState, now: float) -> None:
        self.state = state
        self.now = now
        self.settings = _settings(state)
        self._events: list[SimEvent] = []
        self._pods: dict[PodKey, PodRecord] = {}
        self._pod_rows: dict[PodKey, tuple[int, tuple[Any, ...]]] = {}  # pk and the values as loaded
        self._gone_pods: set[PodKey] = set()
        self._nodes: dict[str, NodeRecord] = {}
        self._node_rows: dict[str, tuple[int, tuple[Any, ...]]] = {}
        self._gone_nodes: set[str] = set()

    def next_rv(self) -> int:
        self.state.resource_version += 1
        return self.state.resource_version

    def next_seq(self) -> int:
        self.state.seq += 1
        return self.state.seq

    def emit(self, event: BackendEvent) -> None:
        self._events.append(SimEvent(kind=event.kind, type=event.type, object=event.object.to_dict()))

    # ------------------------------------------------------------ pods

    def _load_pods(self, rows: Any) -> list[PodRecord]:
        out = []
        for row in rows:
            key = (row.namespace, row.name)
            if key in self._gone_pods:
                continue
            if key not in self._pods:
                record = _pod_record(row)
                self._pods[key] = record
                self._pod_rows[key] = (row.pk, _values(record, POD_FIELDS))
            out.append(self._pods[key])
        return out

    def pod(self, key: PodKey) -> PodRecord | None:
        if key in self._gone_pods:
            return None
        if key not in self._pods:
            self._load_pods(SimPod.objects.filter(namespace=key[0], name=key[1]))
        return self._pods.get(key)

    def pods(self, keys: Collection[PodKey]) -> dict[PodKey, PodRecord]:
        by_namespace: dict[str, set[str]] = {}
        for ns, name in keys:
            if (ns, name) not in self._pods and (ns, name) not in self._gone_pods:
                by_namespace.setdefault(ns, set()).add(name)
        for ns, names in by_namespace.items():
            self._load_pods(SimPod.objects.filter(namespace=ns, name__in=names))
        return {key: self._pods[key] for key in keys if key in self._pods}

    def _with_cached(self, loaded: list[PodRecord], keep: Any) -> list[PodRecord]:
        found = {p.key: p for p in loaded if keep(p)}
        found.update((key, p) for key, p in self._pods.items() if keep(p))
        return [found[key] for key in sorted(found)]

    def pods_on_node(self, node: str) -> list[PodRecord]:
        loaded = self._load_pods(SimPod.objects.filter(node_name=node).order_by("namespace", "name"))
        return self._with_cached(loaded, lambda p: p.node_name == node)

    def due_pods(self, now: float) -> list[PodRecord]:
        rows = SimPod.objects.filter(Q(start_at__lte=now) | Q(finish_at__lte=now) | Q(remove_at__lte=now))
        loaded = self._load_pods(rows.order_by("namespace", "name"))
        return self._with_cached(
            loaded, lambda p: any(at is not None and at <= now for at in (p.start_at, p.finish_at, p.remove_at))
        )

    def add_pod(self, pod: PodRecord) -> None:
        self._gone_pods.discard(pod.key)
        self._pods[pod.key] = pod

    def remove_pod(self, pod: PodRecord) -> None:
        self._pods.pop(pod.key, None)
        self._gone_pods.add(pod.key)

    # ------------------------------------------------------------ nodes

    def _load_nodes(self, rows: Any) -> None:
        for row in rows:
            if row.name not in self._nodes and row.name not in self._gone_nodes:
                record = _node_record(row)
                self._nodes[row.name] = record
                self._node_rows[row.name] = (row.pk, _values(record, NODE_FIELDS))

    def node(self, name: str) -> NodeRecord | None:
        if name in self._gone_nodes:
            return None
        if name not in self._nodes:
            self._load_nodes(SimNode.objects.filter(name=name))
        return self._nodes.get(name)

    def nodes(self, names: Collection[str]) -> dict[str, NodeRecord]:
        missing = {n for n in names if n not in self._nodes and n not in self._gone_nodes}
        if missing:
            self._load_nodes(SimNode.objects.filter(name__in=missing))
        return {name: self._nodes[name] for name in names if name in self._nodes}

    def add_node(self, node: NodeRecord) -> None:
        self._gone_nodes.discard(node.name)
        self._nodes[node.name] = node

    def remove_node(self, node: NodeRecord) -> None:
        self._nodes.pop(node.name, None)
        self._gone_nodes.add(node.name)

    # ------------------------------------------------------------ commit

    def commit(self) -> None:
        """Write what changed: deleted, new and changed rows (changed columns only), events, the state."""
        gone = [self._pod_rows[k][0] for k in self._gone_pods if k in self._pod_rows]
        if gone:
            SimPod.objects.filter(pk__in=gone).delete()
        new_pods, changed_pods, pod_columns = [], [], set()
        for key, record in self._pods.items():
            values = _values(record, POD_FIELDS)
            if key not in self._pod_rows:
                new_pods.append(SimPod(**dict(zip(POD_FIELDS, values, strict=True))))
                continue
            pk, loaded = self._pod_rows[key]
            changed = {f for f, now, then in zip(POD_FIELDS, values, loaded, strict=True) if now != then}
            if changed:
                changed_pods.append(SimPod(pk=pk, **dict(zip(POD_FIELDS, values, strict=True))))
                pod_columns |= changed
        if new_pods:
            SimPod.objects.bulk_create(new_pods, batch_size=1000)
        bulk_update_rows(SimPod, changed_pods, [f for f in POD_FIELDS if f in pod_columns])
        gone_nodes = [self._node_rows[n][0] for n in self._gone_nodes if n in self._node_rows]
        if gone_nodes:
            SimNode.objects.filter(pk__in=gone_nodes).delete()
        new_nodes, changed_nodes = [], []
        for name in sorted(self._nodes):
            node = self._nodes[name]
            row = SimNode(name=name, info=node.info, capacity=node.capacity, used=node.used)
            if name not in self._node_rows:
                new_nodes.append(row)
            elif _values(node, NODE_FIELDS) != self._node_rows[name][1]:
                row.pk = self._node_rows[name][0]
                changed_nodes.append(row)
        if new_nodes:
            SimNode.objects.bulk_create(new_nodes)
        bulk_update_rows(SimNode, changed_nodes, ["info", "capacity", "used"])
        if self._events:
            SimEvent.objects.bulk_create(self._events)
        self.state.now = self.now
        self.state.save(update_fields=["now", "resource_version", "seq"])


class DatabaseStore:
    """The simulated cluster's records in the ``Sim*`` tables (see :class:`.simengine.SimStore`).

    ``seed`` is what the first process to touch the sim stores; afterwards the stored values win, so
    every process agrees. ``clock`` overrides the stored scaled clock (tests pass a ManualClock).
    """

    def __init__(self, seed: SimSettings, clock: Clock | None = None) -> None:
        parse_pool_spec(seed.pool)  # fail early on a bad spec
        self.seed = seed
        self.clock = clock
        self._scaled: ScaledClock | None = None

    def ensure_state(self) -> SimState:
        """Create the state row and the pool's nodes unless they exist (idempotent, race-safe)."""
        state = SimState.objects.filter(pk=STATE_PK).first()
        if state is not None:
            return state
        seed = self.seed
        now = self.clock.now() if self.clock is not None else 0.0
        try:
            with transaction.atomic():
                state = SimState.objects.create(
                    pk=STATE_PK,
                    speed=seed.speed,
                    sim_start=now,
                    wall_start=time.time(),
                    now=now,
                    default_duration=seed.default_duration,
                    startup_delay=seed.startup_delay,
                    delete_grace=seed.delete_grace,
                    pool=seed.pool,
                )
                tx = _DatabaseTx(state, now)
                for info in parse_pool_spec(seed.pool):
                    new_node(tx, info)
                tx.commit()
        except IntegrityError:  # another process seeded it first
            state = SimState.objects.get(pk=STATE_PK)
        return state

    def _clock_now(self, state: SimState) -> float:
        if self.clock is not None:
            return self.clock.now()
        scaled = self._scaled
        if scaled is None or scaled.to_dict() != {
            "speed": state.speed,
            "start": state.sim_start,
            "wall_start": state.wall_start,
        }:
            scaled = self._scaled = ScaledClock(state.speed, state.sim_start, state.wall_start)
        return scaled.now()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_DatabaseTx]:
        with transaction.atomic():
            self.ensure_state()
            state = SimState.objects.select_for_update().get(pk=STATE_PK)
            tx = _DatabaseTx(state, max(self._clock_now(state), state.now))
            yield tx
            tx.commit()

    def atomic(self) -> contextlib.AbstractContextManager[None]:
        return transaction.atomic()

    def settings(self) -> SimSettings:
        return _settings(self.ensure_state())

    def now(self) -> float:
        return self.ensure_state().now

    def clock_now(self) -> float:
        state = self.ensure_state()
        return max(self._clock_now(state), state.now)

    def get_pod(self, key: PodKey) -> PodRecord | None:
        row = SimPod.objects.filter(namespace=key[0], name=key[1]).first()
        return None if row is None else _pod_record(row)

    def list_pods(self, namespace: str | None) -> list[PodRecord]:
        self.ensure_state()
        query = SimPod.objects.order_by("namespace", "name")
        if namespace is not None:
            query = query.filter(namespace=namespace)
        return [_pod_record(row) for row in query]

    def get_node(self, name: str) -> NodeRecord | None:
        row = SimNode.objects.filter(name=name).first()
        return None if row is None else _node_record(row)

    def list_nodes(self) -> list[NodeRecord]:
        self.ensure_state()
        return [_node_record(row) for row in SimNode.objects.order_by("name")]

    def take_events(self, limit: int) -> list[BackendEvent]:
        rows = list(SimEvent.objects.order_by("id")[:limit])
        if not rows:
            return []
        SimEvent.objects.filter(id__lte=rows[-1].id).delete()
        return [BackendEvent.from_dict({"kind": r.kind, "type": r.type, "object": r.object}) for r in rows]

    def pending_events(self) -> int:
        return SimEvent.objects.count()

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def ensure_object(self, kind: str, namespace: str, name: str, data: dict[str, Any]) -> bool:
        with self.transaction():
            if SimObject.objects.filter(kind=kind, namespace=namespace, name=name).exists():
                return False
            SimObject.objects.create(kind=kind, namespace=namespace, name=name, data=data)
            return True

    def delete_object(self, kind: str, namespace: str, name: str) -> bool:
        deleted, _ = SimObject.objects.filter(kind=kind, namespace=namespace, name=name).delete()
        return bool(deleted)

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = SimObject.objects.filter(kind=kind, namespace=namespace, name=name).first()
        return None if found is None else dict(found.data)


class DatabaseSimCluster(SimEngine):
    """The simulated cluster of the product: :class:`.simengine.SimEngine` over a :class:`DatabaseStore`.

    ``pool``, ``speed``, ``default_duration``, ``startup_delay`` and ``delete_grace`` seed the state row
    the first time any process touches the sim; afterwards the stored values win, so every process
    agrees. ``clock`` overrides the stored scaled clock (tests pass a ManualClock).
    """

    store: DatabaseStore

    def __init__(
        self,
        pool: str = "",
        *,
        speed: float = 1.0,
        default_duration: float = 60.0,
        startup_delay: float = 0.0,
        delete_grace: float = 0.0,
        clock: Clock | None = None,
    ) -> None:
        seed = SimSettings(
            pool=pool,
            speed=speed,
            default_duration=default_duration,
            startup_delay=startup_delay,
            delete_grace=delete_grace,
        )
        super().__init__(DatabaseStore(seed, clock))

    @property
    def speed(self) -> float:
        """The clock speed this instance seeds the sim with (the stored one: ``settings()["speed"]``)."""
        return self.store.seed.speed

    @speed.setter
    def speed(self, value: float) -> None:
        self.store.seed = dataclasses.replace(self.store.seed, speed=value)

    def ensure_state(self) -> SimState:
        """Create the state row and the pool's nodes unless they exist (idempotent, race-safe)."""
        return self.store.ensure_state()
