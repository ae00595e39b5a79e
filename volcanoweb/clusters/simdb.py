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
from collections.abc import Collection, Iterable, Iterator
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
    SimTx,
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


class _DatabaseTx(SimTx):
    """A transaction of the :class:`DatabaseStore` (the state row locked): records read from rows; on
    commit, each loaded record is compared with its values as loaded and only changed columns are written."""

    def __init__(self, state: SimState, now: float) -> None:
        super().__init__(now, _settings(state), state.resource_version, state.seq)
        self.state = state
        self._pod_rows: dict[PodKey, tuple[int, tuple[Any, ...]]] = {}  # pk and the values as loaded
        self._node_rows: dict[str, tuple[int, tuple[Any, ...]]] = {}

    def _pods_of(self, rows: Any) -> list[PodRecord]:
        out = []
        for row in rows:
            record = _pod_record(row)
            self._pod_rows.setdefault(record.key, (row.pk, _values(record, POD_FIELDS)))
            out.append(record)
        return out

    def fetch_pods(self, keys: Collection[PodKey]) -> Iterable[PodRecord]:
        by_namespace: dict[str, set[str]] = {}
        for ns, name in keys:
            by_namespace.setdefault(ns, set()).add(name)
        return [
            pod
            for ns, names in by_namespace.items()
            for pod in self._pods_of(SimPod.objects.filter(namespace=ns, name__in=names))
        ]

    def fetch_pods_on_node(self, node: str) -> Iterable[PodRecord]:
        return self._pods_of(SimPod.objects.filter(node_name=node))

    def fetch_due_pods(self, now: float) -> Iterable[PodRecord]:
        return self._pods_of(
            SimPod.objects.filter(Q(start_at__lte=now) | Q(finish_at__lte=now) | Q(remove_at__lte=now))
        )

    def fetch_nodes(self, names: Collection[str]) -> Iterable[NodeRecord]:
        rows = SimNode.objects.filter(name__in=names)
        out = []
        for row in rows:
            record = _node_record(row)
            self._node_rows.setdefault(record.name, (row.pk, _values(record, NODE_FIELDS)))
            out.append(record)
        return out

    def commit(self) -> None:
        """Write what changed: deleted, new and changed rows (changed columns only), events, the state."""
        gone = [self._pod_rows[k][0] for k in self.gone_pods if k in self._pod_rows]
        if gone:
            SimPod.objects.filter(pk__in=gone).delete()
        new_pods, changed_pods, pod_columns = [], [], set()
        for key, record in self.pod_map.items():
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
        gone_nodes = [self._node_rows[n][0] for n in self.gone_nodes if n in self._node_rows]
        if gone_nodes:
            SimNode.objects.filter(pk__in=gone_nodes).delete()
        new_nodes, changed_nodes = [], []
        for name in sorted(self.node_map):
            node = self.node_map[name]
            row = SimNode(name=name, info=node.info, capacity=node.capacity, used=node.used)
            if name not in self._node_rows:
                new_nodes.append(row)
            elif _values(node, NODE_FIELDS) != self._node_rows[name][1]:
                row.pk = self._node_rows[name][0]
                changed_nodes.append(row)
        if new_nodes:
            SimNode.objects.bulk_create(new_nodes)
        bulk_update_rows(SimNode, changed_nodes, ["info", "capacity", "used"])
        if self.events:
            SimEvent.objects.bulk_create(
                [SimEvent(kind=e.kind, type=e.type, object=e.object.to_dict()) for e in self.events]
            )
        state = self.state
        state.now, state.resource_version, state.seq = self.now, self.rv, self.seq
        state.save(update_fields=["now", "resource_version", "seq"])


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
