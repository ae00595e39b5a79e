"""The scheduling cycle service: gangs, reasons, idempotent apply, the claim, crash recovery, status."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

import scheduler
from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import make_gang, make_sim
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster
from volcanoweb.feed import log
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Event, Pod
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.queues.models import Queue
from volcanoweb.scheduling import cycles, decisions, intents, lease
from volcanoweb.scheduling.models import PodIntent, RunStatus, SchedulerLease, SchedulingRun
from volcanoweb.scheduling.services import run_cycle
from volcanoweb.scheduling.snapshots import build_snapshot
from volcanoweb.tenancy.access import SYSTEM


class CountingSim(DatabaseSimCluster):
    """A sim that records every successful bind (to prove nothing is bound twice)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bound: list[tuple[str, str, str]] = []

    def bind_many(self, binds: Any) -> Any:
        binds = list(binds)
        results = super().bind_many(binds)
        self.bound += [b for b in binds if results[(b[0], b[1])] is None]
        return results


@pytest.fixture
def cluster(sim: Any, cast: Any) -> Any:
    cluster_services.sync_from_backend()
    return sim


def test_gang_of_four_bound_in_one_cycle(cluster: Any, cast: Any) -> None:
    backend, _ = cluster
    group, _pods = make_gang("pytorch", 4, tenant=cast.team_a, cpu=6000)  # 6 CPUs each: one per node
    cluster_services.sync_from_backend()
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.binds == 4
    nodes = {p.name: p.node_name for p in Pod.objects.filter(podgroup=group)}
    assert all(nodes.values())
    assert len(set(nodes.values())) == 4
    assert {p.name: p.node_name for p in backend.list_pods()} == nodes  # the cluster agrees
    assert not PodIntent.objects.exists()  # every bind acknowledged
    group.refresh_from_db()
    assert group.phase == "Inqueue"  # Allocated/Binding tasks are not yet "scheduled" (A.9)
    cluster_services.sync_from_backend()  # the kubelet starts them
    assert set(Pod.objects.filter(podgroup=group).values_list("phase", flat=True)) == {"Running"}
    run_cycle()
    group.refresh_from_db()
    assert group.phase == "Running"
    assert Event.objects.filter(involved_name="pytorch", reason="Scheduled").exists()


def test_gang_that_does_not_fit_binds_nothing(cluster: Any, cast: Any) -> None:
    group, _ = make_gang("huge", 5, tenant=cast.team_a, cpu=6000)  # 5 x 6 CPUs on 4 nodes of 8
    cluster_services.sync_from_backend()
    run = run_cycle()
    assert run is not None
    assert run.binds == 0
    assert not Pod.objects.filter(podgroup=group).exclude(node_name="").exists()
    assert "team-a/huge" in run.unschedulable


def test_job_over_queue_capability_stays_pending_with_reason(cluster: Any, cast: Any) -> None:
    builders.make_queue("small", capability={"cpu": "2", "memory": "8Gi"})
    group, _ = make_gang("big", 4, tenant=cast.team_a, queue="small", min_resources={"cpu": "4", "memory": "4Gi"})
    cluster_services.sync_from_backend()
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED
    group.refresh_from_db()
    assert group.phase == "Pending"
    reason = run.unschedulable["team-a/big"]
    assert reason["message"]
    condition = next(c for c in group.status["conditions"] if c["type"] == "Unschedulable")
    assert condition["status"] == "True"
    assert condition["message"] == reason["message"]
    assert group.status["unschedulableReason"]["kind"] == reason["kind"]
    event = Event.objects.get(involved_kind="PodGroup", involved_name="big", reason="Unschedulable")
    assert event.type == "Warning"
    assert event.message == reason["message"]
    run_cycle()  # the same reason again: no duplicate event row
    assert Event.objects.filter(involved_kind="PodGroup", involved_name="big", reason="Unschedulable").count() == 1
    assert not Pod.objects.filter(podgroup=group).exclude(node_name="").exists()


def test_applying_the_same_result_twice_binds_nothing_twice(sim: Any, cast: Any) -> None:
    backend = CountingSim("cpu:4x8c32Gi", clock=sim[1])
    backend_module.set_backend(backend)
    cluster_services.sync_from_backend(backend)
    make_gang("g", 4, tenant=cast.team_a)
    cluster_services.sync_from_backend(backend)
    info = build_snapshot()
    config, _ = cycles.active_config()
    result = scheduler.run_cycle(info.snapshot, config)
    assert len(result.binds) == 4
    run = SchedulingRun.objects.create()
    first = decisions.apply_result(info, result, run)
    second = decisions.apply_result(info, result, run)
    assert len(first.binds) == 4
    assert second.binds == []
    assert second.skipped_binds == 4
    assert PodIntent.objects.count() == 4
    recorded = list(PodIntent.objects.all())
    assert intents.execute_intents(backend, recorded).bound == 4
    assert intents.execute_intents(backend, recorded).bound == 4  # "already bound there" counts as done
    assert len(backend.bound) == 4
    assert len({b[1] for b in backend.bound}) == 4
    assert not PodIntent.objects.exists()


class Killed(BaseException):
    """Stands for the worker process dying (not an Exception: nothing catches it)."""


def test_crash_between_commit_and_binds_is_recovered_without_duplicates(
    sim: Any, cast: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = CountingSim("cpu:4x8c32Gi", clock=sim[1])
    backend_module.set_backend(backend)
    cluster_services.sync_from_backend(backend)
    group, _ = make_gang("g", 4, tenant=cast.team_a)
    cluster_services.sync_from_backend(backend)
    real = intents.execute_intents

    def die(backend: Any, intents: Any) -> Any:
        intents = list(intents)
        if not intents:  # the recovery step of this cycle: nothing to recover yet
            return real(backend, intents)
        raise Killed  # the worker dies right after committing its decisions

    monkeypatch.setattr(intents, "execute_intents", die)
    with pytest.raises(Killed):
        run_cycle()
    # committed: the gang is placed in the database, nothing sent to the cluster yet
    placed = dict(Pod.objects.filter(podgroup=group).values_list("name", "node_name"))
    assert all(placed.values())
    assert PodIntent.objects.count() == 4
    assert backend.bound == []
    assert all(not p.node_name for p in backend.list_pods())
    # a killed process runs no `finally`: its lease stays held until it expires
    SchedulerLease.objects.update(holder="dead-worker", expires_at=timezone.now() + timedelta(seconds=60))
    monkeypatch.setattr(intents, "execute_intents", real)
    assert run_cycle() is None
    SchedulerLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.recovered == 4
    assert run.binds == 0
    assert sorted(backend.bound) == sorted(("team-a", n, node) for n, node in placed.items())
    assert {p.name: p.node_name for p in backend.list_pods()} == placed
    assert not PodIntent.objects.exists()
    run_cycle()
    assert len(backend.bound) == 4


def test_queue_status_counts_and_allocated(cluster: Any, cast: Any) -> None:
    make_gang("a", 2, tenant=cast.team_a, cpu=2000)
    builders.make_queue("small", capability={"cpu": "1"})
    make_gang("b", 2, tenant=cast.team_a, queue="small", min_resources={"cpu": "2"})
    cluster_services.sync_from_backend()
    run_cycle()
    default, small = Queue.objects.get(name="default"), Queue.objects.get(name="small")
    assert (default.inqueue, default.pending, default.running) == (1, 0, 0)
    assert default.allocated["cpu"] == "4"
    assert (small.pending, small.inqueue) == (1, 0)
    cluster_services.sync_from_backend()
    run_cycle()
    default.refresh_from_db()
    assert (default.running, default.inqueue) == (1, 0)


@pytest.mark.django_db(transaction=True)
def test_two_cycles_racing_only_one_runs(cast: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_builtin_queues()  # the flush between transactional tests removed them
    backend, _ = make_sim()
    backend_module.set_backend(backend)
    try:
        cluster_services.sync_from_backend(backend)
        make_gang("g", 4, tenant=cast.team_a)
        cluster_services.sync_from_backend(backend)
        slow_build = cycles.build_snapshot

        def slow(*args: Any) -> Any:
            time.sleep(0.5)
            return slow_build(*args)

        monkeypatch.setattr(cycles, "build_snapshot", slow)
        barrier = threading.Barrier(4)
        outcomes: list[Any] = []

        def worker(i: int) -> None:
            try:
                barrier.wait()
                run = run_cycle(holder=f"worker-{i}")
                outcomes.append(run.pk if run else None)
            finally:
                connection.close()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        ran = [o for o in outcomes if o is not None]
        assert len(outcomes) == 4
        assert len(ran) == 1
        assert SchedulingRun.objects.count() == 1
        assert Pod.objects.exclude(node_name="").count() == 4
        assert len([p for p in backend.list_pods() if p.node_name]) == 4
    finally:
        backend_module.set_backend(None)


def test_claim_is_exclusive_until_released_or_expired(db: Any) -> None:
    token = lease.claim_cycle("a")
    assert token is not None
    assert lease.claim_cycle("b") is None
    lease.release_cycle("a", token)
    second = lease.claim_cycle("b")
    assert second == token + 1
    SchedulerLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert lease.claim_cycle("c") == token + 2


def test_stale_lease_holder_cannot_apply(cluster: Any, cast: Any) -> None:
    make_gang("g", 1, tenant=cast.team_a)
    cluster_services.sync_from_backend()
    token = lease.claim_cycle("old")
    assert token is not None
    SchedulerLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert lease.claim_cycle("new") == token + 1
    info = build_snapshot()
    result = scheduler.run_cycle(info.snapshot, cycles.active_config()[0])
    with pytest.raises(lease.LeaseLost):
        decisions.apply_result(info, result, SchedulingRun.objects.create(), token)
    assert not Pod.objects.exclude(node_name="").exists()


def test_readyz_reports_cycle_age(cluster: Any, client: Any, settings: Any) -> None:
    body = client.get("/readyz").json()
    assert body["checks"]["scheduling"]["ok"] is True
    assert body["checks"]["scheduling"]["lastCycle"] is None
    run = run_cycle()
    assert run is not None
    body = client.get("/readyz").json()
    assert body["checks"]["scheduling"]["lastCycle"] == run.pk
    assert body["checks"]["scheduling"]["ok"]
    SchedulingRun.objects.update(finished_at=timezone.now() - timedelta(seconds=10 * settings.SCHEDULE_PERIOD + 31))
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["scheduling"]["ok"] is False


def test_metrics_after_a_cycle(cluster: Any, cast: Any, client: Any) -> None:
    make_gang("g", 2, tenant=cast.team_a)
    builders.make_queue("capped", capability={"cpu": "1"}, deserved={"cpu": "1"})
    make_gang("blocked", 1, tenant=cast.team_a, queue="capped", cpu=2000, min_resources={"cpu": "2"})
    cluster_services.sync_from_backend()
    run_cycle()
    text = client.get("/metrics").content.decode()
    assert "volcano_e2e_scheduling_latency_milliseconds_count" in text
    assert 'volcano_action_scheduling_latency_microseconds_count{action="allocate"}' in text
    assert "volcanoweb_pods_bound_total" in text
    assert 'volcano_queue_allocated_milli_cpu{queue_name="default"} 2000.0' in text
    assert 'volcano_queue_deserved_milli_cpu{queue_name="capped"} 1000.0' in text
    # default has no spec deserved: the gauge shows proportion's computed share (its 2 one-CPU pods)
    assert 'volcano_queue_deserved_milli_cpu{queue_name="default"} 2000.0' in text
    assert 'volcano_queue_pod_group_pending_count{queue_name="capped"} 1.0' in text
    assert 'volcano_queue_pod_group_inqueue_count{queue_name="default"} 1.0' in text
    assert "volcanoweb_scheduling_last_cycle_age_seconds" in text


@pytest.mark.django_db(transaction=True)
def test_cycle_summary_is_broadcast(cluster: Any, cast: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Transactional: messages go out when the real commits happen, as in production.
    ensure_builtin_queues()  # the flush between transactional tests removed them
    sent: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr("volcanoweb.live.broadcast.send_many", lambda messages: sent.extend(messages))
    make_gang("g", 1, tenant=cast.team_a)
    cluster_services.sync_from_backend()
    before = log.head()[0]
    run = run_cycle()
    assert run is not None
    # Only the summary goes over the channel layer: the pods and queues the cycle wrote reach the sockets from
    # the change log (ADR 0024).
    assert {payload["kind"] for _, payload in sent} == {"cycle"}
    assert {"pods", "queues"} <= {change.kind for change in log.changes(before)}
    cycle = next(p for _, p in sent if p["kind"] == "cycle")
    assert cycle["binds"] == 1
    assert cycle["id"] == str(run.pk)


def test_a_completed_podgroup_with_a_late_pod_is_still_scheduled(cluster: Any, cast: Any) -> None:
    """A dependsOn task's pod arrives after every earlier pod finished (PodGroup Completed): it still runs."""
    _group, pods = make_gang("ci-pipeline", 2, tenant=cast.team_a, min_member=1, phase="Completed")
    Pod.objects.filter(pk=pods[0].pk).update(phase="Succeeded", node_name="n1")  # lint: done
    assert "team-a/ci-pipeline" in build_snapshot().podgroup_ids  # the late pod keeps it in
    cluster_services.sync_from_backend()
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert Pod.objects.get(pk=pods[1].pk).node_name  # build-image: bound
    Pod.objects.filter(pk=pods[1].pk).update(phase="Succeeded")
    assert "team-a/ci-pipeline" not in build_snapshot().podgroup_ids  # all finished: left out again


def test_deleting_a_plain_pod_deletes_it_in_the_cluster(cluster: Any, cast: Any) -> None:
    """DELETE of a bound plain pod removes it from the cluster too (it held its node's CPUs)."""
    backend, clock = cluster
    _group, pods = make_gang("spark", 1, tenant=cast.team_a, cpu=6000)
    cluster_services.sync_from_backend()
    run_cycle()
    cluster_services.sync_from_backend()
    assert Pod.objects.get(pk=pods[0].pk).node_name
    job_services.delete_pod(SYSTEM, "team-a", "spark-0")
    clock.advance(60)  # past the deletion grace period
    cluster_services.sync_from_backend()
    assert "spark-0" not in {p.name for p in backend.list_pods()}
    assert not Pod.objects.filter(pk=pods[0].pk).exists()


def test_a_fault_after_apply_leaves_the_decisions_as_intents(cluster: Any, cast: Any) -> None:
    """A cluster that fails the cycle's calls after its commit (the e2e crash test kills the worker there)
    leaves the decisions recorded as intents, and nothing bound."""
    backend, _ = cluster
    make_gang("pytorch", 2, tenant=cast.team_a, cpu=1000)
    cluster_services.sync_from_backend()
    seen: list[list[tuple[str, str, str]]] = []

    class Failing:
        def __getattr__(self, name: str) -> Any:
            return getattr(backend, name)

        def bind_many(self, binds: list[tuple[str, str, str]]) -> Any:
            seen.append(binds)
            raise RuntimeError("injected")

    run = run_cycle(backend=Failing())  # type: ignore[arg-type]
    assert [sorted(name for _, name, _ in binds) for binds in seen] == [["pytorch-0", "pytorch-1"]]
    assert run is not None
    assert run.status == RunStatus.FAILED
    assert "injected" in run.error
    assert PodIntent.objects.filter(run_id=run.pk).count() == 2  # recorded, not yet executed
    assert backend.list_pods()
    assert all(not p.node_name for p in backend.list_pods())  # nothing bound in the cluster yet
