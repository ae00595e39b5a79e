"""The database store on PostgreSQL under concurrent changes (ADR 0017): record locks, not one state row.

Each test holds a change open on the test's connection and makes others from threads (each thread has its
own connection). A thread that must not wait runs under ``lock_timeout``: waiting would fail it with a
lock timeout (a bound on waiting, not a timing assertion). Waiting is observed in ``pg_stat_activity``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from django.db import OperationalError, connection, transaction

from volcanoweb.clusters.backends.base import BackendEvent, Conflict, Container, PodInfo, PodSpec
from volcanoweb.clusters.backends.sim import ManualClock
from volcanoweb.clusters.backends.simdb import POD_LOCK_BUCKETS, DatabaseSimCluster, LockOrderError, pod_lock_id
from volcanoweb.clusters.backends.simtransitions import pod_event
from volcanoweb.clusters.models import SimNode

pytestmark = [pytest.mark.postgresql_only, pytest.mark.django_db(transaction=True)]

T = TypeVar("T")


def spec(name: str, cpu: str = "1") -> PodSpec:
    return PodSpec("ns", name, [Container("main", "img", requests={"cpu": cpu, "memory": "64Mi"})])


@pytest.fixture
def sim(transactional_db: Any) -> DatabaseSimCluster:
    backend = DatabaseSimCluster("cpu:2x4c8Gi", clock=ManualClock(0.0))
    backend.ensure_state()
    return backend


def in_thread(fn: Callable[[], T], *, lock_timeout: str | None = "2s") -> T:
    """Run ``fn`` in a thread (its own connection) in one transaction; its result, or raise its error."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            with transaction.atomic():
                if lock_timeout:
                    with connection.cursor() as cursor:
                        cursor.execute(f"SET LOCAL lock_timeout = '{lock_timeout}'")
                out["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            out["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    assert not thread.is_alive()
    if "error" in out:
        raise out["error"]
    return out["value"]  # type: ignore[no-any-return]


def waiting_backends() -> int:
    """Backends of this database waiting for a lock (heavyweight: advisory, row or transaction id)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # else a transaction sees its first snapshot
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


def start_waiting(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Start ``fn`` in a thread and return once it waits for a lock (seen in pg_stat_activity)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            with transaction.atomic():
                out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc
        finally:
            connection.close()

    before = waiting_backends()
    thread = threading.Thread(target=run)
    thread.start()
    for _ in range(20_000):  # until it waits (each look is a query; no clock involved)
        if waiting_backends() > before or not thread.is_alive():
            break
    assert thread.is_alive(), out
    assert "error" not in out, out
    return thread, out


def test_creations_of_unrelated_pods_do_not_wait_for_each_other(sim: DatabaseSimCluster) -> None:
    with transaction.atomic():
        mine = sim.create_pods([spec("a-0"), spec("a-1")])  # held until this block ends
        assert all(isinstance(info, PodInfo) for info in mine.values())
        other = in_thread(lambda: sim.create_pods([spec("b-0"), spec("b-1")]))
        assert all(isinstance(info, PodInfo) for info in other.values())
        # the same name does wait: two creations of one pod serialise (then the second is a Conflict)
        with pytest.raises(OperationalError, match="lock timeout"):
            in_thread(lambda: sim.create_pods([spec("a-1")]))
        # a pod that is not changed is read without waiting
        assert in_thread(lambda: sim.get_pod("ns", "b-0").name) == "b-0"
    with pytest.raises(Conflict):
        sim.create_pod(spec("a-1"))
    assert sorted(p.name for p in sim.list_pods()) == ["a-0", "a-1", "b-0", "b-1"]


def test_admissions_on_one_node_serialise_and_never_overcommit(sim: DatabaseSimCluster) -> None:
    sim.create_pods([spec("p", cpu="3"), spec("q", cpu="2"), spec("r", cpu="1")])
    with transaction.atomic():
        sim.bind("ns", "p", "cpu-0")
        assert sim.tick() == 1  # p admitted on cpu-0 (3 of 4 CPUs); p and cpu-0 held until the block ends
        # a bind reads its node and does not wait for the kubelet holding it
        in_thread(lambda: sim.bind("ns", "q", "cpu-0"))
        # a tick does not wait for a held pod (p) and admits on another node
        in_thread(lambda: sim.bind("ns", "r", "cpu-1"))
        with pytest.raises(OperationalError, match="lock timeout"):
            in_thread(sim.tick)  # q's admission waits for cpu-0 (held by p's)
    sim.tick()
    phases = {p.name: (p.phase, p.reason, p.node_name) for p in sim.list_pods()}
    assert phases == {
        "p": ("Running", "", "cpu-0"),
        "q": ("Failed", "OutOfcpu", "cpu-0"),  # saw p's 3 CPUs: never 5 of 4
        "r": ("Running", "", "cpu-1"),
    }
    assert sim.node_usage("cpu-0")["cpu"] == 3000
    assert sim.node_usage("cpu-1")["cpu"] == 1000


def test_a_tick_skips_pods_another_change_holds(sim: DatabaseSimCluster) -> None:
    sim.create_pods([spec("p"), spec("r")])
    sim.bind_many([("ns", "p", "cpu-0"), ("ns", "r", "cpu-1")])
    with transaction.atomic():
        sim.patch_pod_annotations("ns", "p", {"held": "yes"})  # p held, its start timer due
        assert in_thread(sim.tick) == 1  # r starts; p is left to a later tick (no wait)
        assert in_thread(lambda: sim.get_pod("ns", "r").phase) == "Running"
    assert sim.get_pod("ns", "p").phase == "Pending"
    assert sim.tick() == 1
    assert sim.get_pod("ns", "p").phase == "Running"


def test_concurrent_binds_and_ticks_on_one_node_never_overcommit(sim: DatabaseSimCluster) -> None:
    names = [f"p-{i}" for i in range(24)]
    sim.create_pods([spec(name) for name in names])
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def worker(mine: list[str]) -> None:
        try:
            start.wait()
            for name in mine:
                sim.bind("ns", name, "cpu-0")
                sim.tick()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(names[i::6],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors
    sim.tick()
    pods = sim.list_pods()
    running = [p for p in pods if p.phase == "Running"]
    assert len(running) == 4  # 4 CPUs, 1 CPU each
    assert {p.reason for p in pods if p.phase != "Running"} == {"OutOfcpu"}
    node = SimNode.objects.get(name="cpu-0")
    assert node.used["cpu"] == 4000 == sum(int(p.requests["cpu"]) * 1000 for p in running)
    assert node.used["pods"] == 4


def test_no_event_lost_or_out_of_order_under_concurrent_changes(sim: DatabaseSimCluster) -> None:
    sim.poll_events()  # the nodes' ADDED
    consumed: list[BackendEvent] = []
    writers_done = threading.Event()
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(8):
                a, b = f"w{w}-{i}-a", f"w{w}-{i}-b"
                sim.create_pods([spec(a, cpu="100m"), spec(b, cpu="100m")])
                sim.bind_many([("ns", a, f"cpu-{w % 2}"), ("ns", b, f"cpu-{(w + 1) % 2}")])
                sim.tick()
                sim.patch_pod_annotations("ns", b, {"round": str(i)})
                sim.delete_pod("ns", a)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    def consumer() -> None:
        try:
            while True:
                last = writers_done.is_set()
                with transaction.atomic():
                    events = sim.poll_events()
                    consumed.extend(events)  # before the commit: the next consumer waits for it
                if last and not events:
                    return
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    consumers = [threading.Thread(target=consumer) for _ in range(2)]
    for thread in [*writers, *consumers]:
        thread.start()
    for thread in writers:
        thread.join(300)
    writers_done.set()
    for thread in consumers:
        thread.join(300)
    assert not errors
    assert sim.pending_events() == 0

    by_pod: dict[str, list[BackendEvent]] = defaultdict(list)
    for event in consumed:
        assert isinstance(event.object, PodInfo)
        by_pod[event.object.name].append(event)
    assert len(by_pod) == 64
    for name, events in by_pod.items():
        versions = [int(e.object.resource_version) for e in events]
        assert versions == sorted(set(versions)), name  # each object's versions increase, none twice
        assert events[0].type == "ADDED", name
        last = events[-1]
        stored = sim.store.get_pod(("ns", name))
        if name.endswith("-a"):
            assert stored is None, name
            assert last.type == "DELETED", name
        else:  # the last event consumed is the pod as stored: nothing lost, nothing applied stale
            assert stored is not None, name
            assert last.object == stored.info(), name
            assert last.object.annotations.get("round") is not None, name


def test_events_committed_out_of_id_order_are_taken_later(sim: DatabaseSimCluster) -> None:
    sim.poll_events()
    with transaction.atomic():
        sim.create_pod(spec("late"))  # its event has the lower id, committed last
        in_thread(lambda: sim.create_pod(spec("early")))
        seen = in_thread(sim.poll_events)
        assert [e.object.name for e in seen] == ["early"]
    assert [e.object.name for e in sim.poll_events()] == ["late"]
    assert sim.poll_events() == []


def test_a_change_waiting_for_a_pod_numbers_it_after_the_holder(sim: DatabaseSimCluster) -> None:
    sim.create_pod(spec("p"))
    with transaction.atomic(), sim.store.transaction() as tx:
        pod = tx.pod(("ns", "p"))  # p held; nothing numbered yet
        assert pod is not None
        thread, out = start_waiting(lambda: sim.patch_pod_annotations("ns", "p", {"by": "second"}))
        pod_event(tx, "MODIFIED", pod)  # numbered after the other change began (and waits for p)
        first = pod.resource_version
    thread.join(120)
    assert "error" not in out, out
    second = out["value"]
    assert int(second.resource_version) > first  # numbered under p's lock, after this change committed
    stored = sim.get_pod("ns", "p")
    assert stored.annotations["by"] == "second"
    assert stored.resource_version == second.resource_version


def test_node_level_changes_run_alone(sim: DatabaseSimCluster) -> None:
    with transaction.atomic():
        sim.create_pod(spec("p"))  # a change in progress
        with pytest.raises(OperationalError, match="lock timeout"):
            in_thread(lambda: sim.fail_node("cpu-1"))  # waits for it (the cluster lock, exclusively)
    in_thread(lambda: sim.fail_node("cpu-1"))
    assert not next(n for n in sim.list_nodes() if n.name == "cpu-1").ready


def test_locks_out_of_order_are_refused(sim: DatabaseSimCluster) -> None:
    sim.create_pods([spec("p"), spec("q")])
    low, high = sorted([("ns", "p"), ("ns", "q")], key=pod_lock_id)
    with transaction.atomic(), sim.store.transaction() as tx:
        tx.nodes(["cpu-0"])
        with pytest.raises(LockOrderError):
            tx.pods([low])  # pods after nodes
    with transaction.atomic(), sim.store.transaction() as tx:
        tx.pods([high])
        with pytest.raises(LockOrderError):
            tx.pods([low])  # a lower pod lock after a higher one
    with transaction.atomic(), sim.store.transaction() as tx:  # the order the engine keeps
        assert set(tx.pods([low, high])) == {low, high}
        assert set(tx.nodes(["cpu-0", "cpu-1"])) == {"cpu-0", "cpu-1"}


def advisory_locks_held() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_a_change_of_thousands_of_pods_holds_a_bounded_number_of_locks(sim: DatabaseSimCluster) -> None:
    # Advisory locks fill PostgreSQL's shared lock table (64 per connection by default, shared by the
    # server): one per pod made a 48,000-pod tick fail with "out of shared memory".
    with transaction.atomic():
        sim.create_pods([spec(f"big-{i}", cpu="1m") for i in range(3000)])
        assert advisory_locks_held() <= POD_LOCK_BUCKETS + 2  # + the cluster lock (and the event consumers')
    with transaction.atomic():
        sim.bind_many([("ns", f"big-{i}", "cpu-0") for i in range(3000)])
        assert advisory_locks_held() <= POD_LOCK_BUCKETS + 2  # + the cluster lock (and the event consumers')
    assert len(sim.list_pods()) == 3000
