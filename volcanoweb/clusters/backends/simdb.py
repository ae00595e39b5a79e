"""DatabaseSimCluster: the simulated cluster with its state in the database, shared by all processes.

The simulation engine (:mod:`.simengine`, the same one ``SimCluster`` runs
in memory) over a :class:`DatabaseStore`: the ``Sim*`` tables of :mod:`volcanoweb.clusters.models`, so the
web process, Celery workers and beat see ONE cluster.

A transaction loads only the pods and nodes it touches (the kubelet's tick: pods whose timers are due,
through indexed columns), so its cost follows the number of changes, not the number of pods; on commit it
writes what changed with one statement per kind of write. Events are rows consumed (deleted) by
``poll_events`` in the caller's transaction: when the caller mirrors them in the same transaction, a crash
loses nothing. See ``docs/adr/0014-one-simulated-cluster-engine.md`` and ``docs/adr/0017-sim-record-locks.md``.

Locking (what makes the store one cluster for every process):

* **PostgreSQL: per record.** A change takes the cluster lock *shared* (node-level changes, which the
  engine opens ``exclusive``, take it exclusively and run alone), then the locks of the pods it loads (one
  transaction-scoped advisory lock per pod key, so a pod that does not exist yet is locked too: two
  creations of one name serialise, two of different names do not), then the rows of the nodes it changes
  (``SELECT … ORDER BY name FOR UPDATE``). The engine loads a change's pods in one call, then its nodes
  in one call, and each call locks in one statement in a fixed order (pod lock ids ascending, node names
  ascending): the locks of one change are always taken in one global order, so two changes cannot wait
  for each other in a cycle (:class:`LockOrderError` if a future engine change breaks that). The kubelet's
  tick *tries* the locks of its due pods and skips those another change holds (they fire at a later
  tick). resourceVersions and uid numbers come from the sequence ``clusters_sim_counter`` (``nextval``
  never waits and is not rolled back: numbers may have gaps), drawn only after the change holds the locks
  of what it numbers, so an object's versions increase in the order its changes commit. The stored clock
  (``SimState.now``) is written only when it moved forward by a wall second's worth of simulated time,
  and never waited for (``FOR UPDATE SKIP LOCKED``). Consumers of events (``poll_events``) serialise on
  their own lock, and take the lowest ids visible, deleting exactly those: an event committed late with
  a lower id is taken by the next poll, and one object's events are committed in the order of their ids.
* **SQLite: the state row.** Its writers are serialised anyway: every change locks the :class:`SimState`
  row first, and it holds the counters and the time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import zlib
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.clusters.models import SimEvent, SimNode, SimObject, SimPod, SimState
from volcanoweb.core.idlist import one_of

from .base import BackendEvent
from .sim import Clock, ScaledClock, parse_pool_spec
from .simengine import SimEngine
from .simrecords import NODE_FIELDS, POD_FIELDS, NodeRecord, PodKey, PodRecord, SimSettings
from .simstore import SimTx
from .simtransitions import new_node

__all__ = [
    "DatabaseSimCluster",
    "DatabaseStore",
    "LockOrderError",
    "pod_lock_id",
]

STATE_PK = 1
#: The sequence resourceVersions and uid numbers come from on PostgreSQL (migration 0003).
COUNTER_SEQUENCE = "clusters_sim_counter"
#: Advisory lock space (the two-integer form) of the simulated cluster: ``(SIM_LOCKS, CLUSTER_LOCK)`` is
#: taken shared by every change and exclusively by node-level ones; ``(SIM_LOCKS, CONSUMER_LOCK)`` by the
#: consumers of events.
SIM_LOCKS = 0x51D0
CLUSTER_LOCK = 0
CONSUMER_LOCK = 1
#: Advisory lock space of the pod keys: ``(POD_LOCKS, pod_lock_id(key))``.
POD_LOCKS = 0x51D1
#: The stored time is written when it moved forward by this many wall seconds (times the clock speed).
NOW_WRITE_WALL_SECONDS = 1.0
#: resourceVersions drawn from the sequence at least at once (more when the change loaded more records).
MIN_NUMBERS = 16
MAX_NUMBERS = 10_000

DUE = ("start_at", "finish_at", "remove_at")


class LockOrderError(RuntimeError):
    """A change asked for locks out of the store's order (a deadlock would be possible): a bug in the engine."""


#: Pod keys hash into this many advisory locks. Advisory locks live in PostgreSQL's shared lock table
#: (``max_locks_per_transaction`` times ``max_connections`` slots for the whole server, 6,400 by default), so
#: one lock per pod let a tick with thousands of due pods, or a bind of thousands, fail with "out of
#: shared memory". With buckets a change holds at most this many, whatever its size; two keys of one
#: bucket only wait for each other (a big bind then serialises with the creations it overlaps).
POD_LOCK_BUCKETS = 1024


def pod_lock_id(key: PodKey) -> int:
    """The advisory lock id of a pod key: its bucket (a CRC modulo :data:`POD_LOCK_BUCKETS`)."""
    return zlib.crc32(f"{key[0]}/{key[1]}".encode()) % POD_LOCK_BUCKETS


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def _due_q(now: float) -> Q:
    return Q(start_at__lte=now) | Q(finish_at__lte=now) | Q(remove_at__lte=now)


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
    """A transaction of the :class:`DatabaseStore`: records read from rows; on commit, each loaded record is
    compared with its values as loaded and only changed columns are written.

    ``per_record`` (PostgreSQL): the change locks what it loads (see the module docstring) unless it is
    ``exclusive`` (it holds the cluster lock alone, or seeds the cluster), and numbers come from the
    sequence. Otherwise (SQLite) the state row is locked and holds the counters.
    """

    def __init__(self, state: SimState, now: float, *, per_record: bool, exclusive: bool) -> None:
        super().__init__(now, _settings(state), state.resource_version, state.seq)
        self.state = state
        self.per_record = per_record
        self.locking = per_record and not exclusive
        self._pod_rows: dict[PodKey, tuple[int, tuple[Any, ...]]] = {}  # pk and the values as loaded
        self._node_rows: dict[str, tuple[int, tuple[Any, ...]]] = {}
        self._asked_pods: set[PodKey] = set()  # keys fetched (and locked), found or not
        self._pod_locks: set[int] = set()
        self._asked_nodes: dict[str, bool] = {}  # name -> locked
        self._last_node_lock: str | None = None
        self._numbers: list[int] = []  # drawn from the sequence, highest first
        self._drawn = 0

    # ------------------------------------------------------------ numbers

    def next_rv(self) -> int:
        if not self.per_record:
            return super().next_rv()
        self.rv = self._number()
        return self.rv

    def next_seq(self) -> int:
        if not self.per_record:
            return super().next_seq()
        self.seq = self._number()
        return self.seq

    def _number(self) -> int:
        if not self._numbers:
            wanted = max(MIN_NUMBERS, 2 * self._drawn, 2 * len(self._asked_pods) + len(self._asked_nodes))
            count = min(wanted, MAX_NUMBERS)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT nextval('{COUNTER_SEQUENCE}') FROM generate_series(1, %s)", [count])
                self._numbers = sorted((row[0] for row in cursor.fetchall()), reverse=True)
            self._drawn += count
        return self._numbers.pop()

    def _locked_more(self) -> None:
        """Numbers drawn before this lock are not used after it: an object's versions are drawn under its lock."""
        self._numbers.clear()

    # ------------------------------------------------------------ locks

    def _lock_pods(self, ids: Iterable[int]) -> None:
        wanted = sorted(set(ids) - self._pod_locks)
        if not wanted:
            return
        if self._last_node_lock is not None or (self._pod_locks and wanted[0] < max(self._pod_locks)):
            raise LockOrderError("pod locks asked for after node locks or below a pod lock held")
        with connection.cursor() as cursor:  # unnest yields the array in order: the locks are taken ascending
            cursor.execute(
                "SELECT count(pg_advisory_xact_lock(%s, k)) FROM unnest(%s::int[]) AS k", [POD_LOCKS, wanted]
            )
        self._pod_locks.update(wanted)
        self._locked_more()

    def _try_lock_pods(self, ids: Iterable[int]) -> set[int]:
        """Take the locks that are free now (never waits); return the ids held afterwards."""
        wanted = sorted(set(ids) - self._pod_locks)
        if wanted:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT k FROM unnest(%s::int[]) AS k WHERE pg_try_advisory_xact_lock(%s, k)", [wanted, POD_LOCKS]
                )
                got = {row[0] for row in cursor.fetchall()}
            if got:
                self._pod_locks.update(got)
                self._locked_more()
        return self._pod_locks

    # ------------------------------------------------------------ fetching

    def _pods_of(self, rows: Any) -> list[PodRecord]:
        out = []
        for row in rows:
            record = _pod_record(row)
            self._pod_rows.setdefault(record.key, (row.pk, _values(record, POD_FIELDS)))
            out.append(record)
        return out

    def fetch_pods(self, keys: Collection[PodKey]) -> Iterable[PodRecord]:
        # a key asked before is held (and was missing, or the engine has its record): nobody created it since
        wanted = [key for key in keys if key not in self._asked_pods]
        if not wanted:
            return []
        if self.locking:
            self._lock_pods(pod_lock_id(key) for key in wanted)
        self._asked_pods.update(wanted)
        by_namespace: dict[str, set[str]] = {}
        for ns, name in wanted:
            by_namespace.setdefault(ns, set()).add(name)
        return [
            pod
            for ns, names in by_namespace.items()
            for pod in self._pods_of(SimPod.objects.filter(one_of("name", names), namespace=ns))
        ]

    def _locked_rows(self, query: Any, keep: Q) -> list[PodRecord]:
        """The pods ``query`` finds, their locks taken (waiting), read again under them and still ``keep``."""
        found = {(ns, name): pk for pk, ns, name in query.values_list("pk", "namespace", "name")}
        wanted = [key for key in found if key not in self._asked_pods]
        self._lock_pods(pod_lock_id(key) for key in wanted)
        self._asked_pods.update(wanted)
        return self._pods_of(SimPod.objects.filter(pk__in=[found[key] for key in wanted]).filter(keep))

    def fetch_pods_on_node(self, node: str) -> Iterable[PodRecord]:
        if not self.locking:
            return self._pods_of(SimPod.objects.filter(node_name=node))
        return self._locked_rows(SimPod.objects.filter(node_name=node), Q(node_name=node))

    def fetch_due_pods(self, now: float) -> Iterable[PodRecord]:
        if not self.locking:
            return self._pods_of(SimPod.objects.filter(_due_q(now)))
        # SKIP LOCKED: a due pod another change holds fires at a later tick; the tick never waits for pods
        found = {
            (ns, name): pk for pk, ns, name in SimPod.objects.filter(_due_q(now)).values_list("pk", "namespace", "name")
        }
        held = self._try_lock_pods({pod_lock_id(key) for key in found})
        wanted = [key for key in found if key not in self._asked_pods and pod_lock_id(key) in held]
        self._asked_pods.update(wanted)
        return self._pods_of(SimPod.objects.filter(pk__in=[found[key] for key in wanted]).filter(_due_q(now)))

    def fetch_nodes(self, names: Collection[str], lock: bool = True) -> Iterable[NodeRecord]:
        # a name asked before is not read again: a node found is in the engine's map, one missing stays missing
        # (nodes come and go in exclusive changes only); commit refuses to write a node read without its lock
        wanted = sorted(n for n in names if n not in self._asked_nodes)
        if not wanted:
            return []
        rows = SimNode.objects.filter(one_of("name", wanted))
        if self.locking and lock:
            if self._last_node_lock is not None and wanted[0] <= self._last_node_lock:
                raise LockOrderError("node locks asked for below a node lock held")
            rows = rows.select_for_update(no_key=True).order_by("name")  # locked in name order
            self._last_node_lock = wanted[-1]
            self._locked_more()
        for name in wanted:
            self._asked_nodes[name] = lock or not self.locking
        out = []
        for row in rows:
            record = _node_record(row)
            self._node_rows.setdefault(record.name, (row.pk, _values(record, NODE_FIELDS)))
            out.append(record)
        return out

    # ------------------------------------------------------------ commit

    def commit(self) -> None:
        """Write what changed: deleted, new and changed rows (changed columns only), events, the state."""
        gone = [self._pod_rows[k][0] for k in self.gone_pods if k in self._pod_rows]
        if gone:
            SimPod.objects.filter(pk__in=gone).delete()
        new_pods, changed_pods, pod_columns = [], [], set()
        for key in sorted(self.pod_map):
            record = self.pod_map[key]
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
                if not self._asked_nodes.get(name, True):
                    raise LockOrderError(f"node {name} changed by a change that read it without its lock")
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
        if not self.per_record:
            state.now, state.resource_version, state.seq = self.now, self.rv, self.seq
            state.save(update_fields=["now", "resource_version", "seq"])
        elif self.now >= state.now + NOW_WRITE_WALL_SECONDS * max(state.speed, 1.0):
            # never waited for: a change that finds the row being written leaves the time to that one
            table = SimState._meta.db_table
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET now = GREATEST(now, %s) WHERE id = "
                    f"(SELECT id FROM {table} WHERE id = %s AND now < %s FOR UPDATE SKIP LOCKED)",
                    [self.now, STATE_PK, self.now],
                )


class DatabaseStore:
    """The simulated cluster's records in the ``Sim*`` tables (see :class:`.simstore.SimStore`).

    ``seed`` is what the first process to touch the sim stores; afterwards the stored values win, so
    every process agrees. ``clock`` overrides the stored scaled clock (tests pass a ManualClock).
    """

    def __init__(self, seed: SimSettings, clock: Clock | None = None) -> None:
        parse_pool_spec(seed.pool)  # fail early on a bad spec
        self.seed = seed
        self.clock = clock
        self._scaled: ScaledClock | None = None
        self._last_now = 0.0  # the time of this process's last change (PostgreSQL: the stored one may lag)

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
                tx = _DatabaseTx(state, now, per_record=_postgres(), exclusive=True)
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

    def _locked_state(self, exclusive: bool) -> SimState:
        """PostgreSQL: take the cluster lock (shared, or exclusive) and read the state row, in one statement."""
        function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        query = f"SELECT s.*, {function}(%s, %s)::text AS cluster_lock FROM {SimState._meta.db_table} s WHERE s.id = %s"
        for _ in range(2):
            found = list(SimState.objects.raw(query, [SIM_LOCKS, CLUSTER_LOCK, STATE_PK]))
            if found:
                return found[0]
            self.ensure_state()
        raise SimState.DoesNotExist("the simulated cluster's state row vanished")

    @contextlib.contextmanager
    def transaction(self, *, exclusive: bool = False) -> Iterator[_DatabaseTx]:
        with transaction.atomic():
            if _postgres():
                state = self._locked_state(exclusive)
                now = max(self._clock_now(state), state.now, self._last_now)
                tx = _DatabaseTx(state, now, per_record=True, exclusive=exclusive)
            else:
                self.ensure_state()
                state = SimState.objects.select_for_update(no_key=True).get(pk=STATE_PK)
                tx = _DatabaseTx(state, max(self._clock_now(state), state.now), per_record=False, exclusive=True)
            yield tx
            tx.commit()
        self._last_now = max(self._last_now, tx.now)

    def _consumer_lock(self) -> None:
        if _postgres():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [SIM_LOCKS, CONSUMER_LOCK])

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """A block of changes and event reads; on PostgreSQL the consumers of events run it one at a time."""
        with transaction.atomic():
            self._consumer_lock()
            yield

    def settings(self) -> SimSettings:
        return _settings(self.ensure_state())

    def now(self) -> float:
        return max(self.ensure_state().now, self._last_now)

    def clock_now(self) -> float:
        state = self.ensure_state()
        return max(self._clock_now(state), state.now, self._last_now)

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
        """The lowest ``limit`` event ids visible, deleted (exactly those: one committed later with a lower id
        stays for the next call); on PostgreSQL under the consumers' lock, until the caller's commit."""
        with transaction.atomic():
            self._consumer_lock()
            rows = list(SimEvent.objects.order_by("id")[:limit])
            if not rows:
                return []
            if _postgres():
                SimEvent.objects.filter(id__in=[r.id for r in rows]).delete()
            else:  # SQLite's writers are serialised: ids are in commit order
                SimEvent.objects.filter(id__lte=rows[-1].id).delete()
        return [BackendEvent.from_dict({"kind": r.kind, "type": r.type, "object": r.object}) for r in rows]

    def pending_events(self) -> int:
        return SimEvent.objects.count()

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def ensure_object(self, kind: str, namespace: str, name: str, data: dict[str, Any]) -> bool:
        if SimObject.objects.filter(kind=kind, namespace=namespace, name=name).exists():
            return False
        try:  # a concurrent creation of the same object: the unique constraint decides
            with transaction.atomic():
                SimObject.objects.create(kind=kind, namespace=namespace, name=name, data=data)
        except IntegrityError:
            return False
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
