"""The database-backed simulated cluster: one cluster for every process, driven by a kubelet tick.

The engine's transitions are one table run against both stores in ``test_sim_engine.py``; this file adds
what the database store has of its own (sharing between instances, events consumed in the caller's
transaction).
"""

from __future__ import annotations

from typing import Any

import pytest

from volcanoweb.clusters.backends.base import Conflict, Container, NotFound, PodSpec
from volcanoweb.clusters.backends.sim import ManualClock
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster

pytestmark = pytest.mark.django_db


def spec(name: str, cpu: str = "1", **annotations: str) -> PodSpec:
    return PodSpec(
        "ns", name, [Container("main", "img", requests={"cpu": cpu, "memory": "1Gi"})], annotations=annotations
    )


def test_seeds_pool_once_and_other_instances_share_it(sim: Any) -> None:
    backend, clock = sim
    assert [n.name for n in backend.list_nodes()] == ["cpu-0", "cpu-1", "cpu-2", "cpu-3"]
    other = DatabaseSimCluster("gpu:1x4c8Gi1gpu", clock=clock)  # another process: the stored state wins
    other.create_pod(spec("a"))
    assert [p.name for p in backend.list_pods()] == ["a"]
    assert len(other.list_nodes()) == 4


def test_pod_lifecycle_bind_start_finish(sim: Any) -> None:
    backend, clock = sim
    backend.create_pod(spec("a", **{"sim.volcanoweb.io/duration": "30s"}))
    backend.bind("ns", "a", "cpu-0")
    with pytest.raises(Conflict):
        backend.bind("ns", "a", "cpu-1")
    backend.tick()
    pod = backend.get_pod("ns", "a")
    assert (pod.phase, pod.node_name) == ("Running", "cpu-0")
    assert backend.node_usage("cpu-0")["cpu"] == 1000
    clock.advance(29)
    backend.tick()
    assert backend.get_pod("ns", "a").phase == "Running"
    clock.advance(1)
    backend.tick()
    pod = backend.get_pod("ns", "a")
    assert (pod.phase, pod.exit_code, pod.reason) == ("Succeeded", 0, "Completed")
    assert backend.node_usage("cpu-0")["cpu"] == 0


def test_exit_code_annotation_and_injected_failure(sim: Any) -> None:
    backend, clock = sim
    backend.create_pod(spec("bad", **{"sim.volcanoweb.io/exit-code": "3", "sim.volcanoweb.io/duration": "5s"}))
    backend.create_pod(spec("killed"))
    backend.bind_many([("ns", "bad", "cpu-0"), ("ns", "killed", "cpu-1")])
    clock.advance(5)
    backend.tick()
    assert (backend.get_pod("ns", "bad").phase, backend.get_pod("ns", "bad").exit_code) == ("Failed", 3)
    backend.fail_pod("ns", "killed", exit_code=137)
    assert backend.get_pod("ns", "killed").exit_code == 137


def test_admission_rejects_an_overfull_node(sim: Any) -> None:
    backend, _ = sim
    backend.create_pod(spec("big", cpu="6"))
    backend.create_pod(spec("big2", cpu="6"))
    backend.bind_many([("ns", "big", "cpu-0"), ("ns", "big2", "cpu-0")])
    backend.tick()
    phases = {p.name: (p.phase, p.reason) for p in backend.list_pods()}
    assert phases == {"big": ("Running", ""), "big2": ("Failed", "OutOfcpu")}


def test_node_failure_evicts_and_recovery(sim: Any) -> None:
    backend, _ = sim
    backend.create_pod(spec("a"))
    backend.bind("ns", "a", "cpu-2")
    backend.tick()
    backend.poll_events()
    backend.fail_node("cpu-2")
    events = backend.poll_events()
    assert [(e.kind, e.type) for e in events] == [("node", "MODIFIED"), ("pod", "DELETED")]
    assert events[1].object.reason == "NodeLost"
    assert not next(n for n in backend.list_nodes() if n.name == "cpu-2").ready
    backend.recover_node("cpu-2")
    assert next(n for n in backend.list_nodes() if n.name == "cpu-2").ready


def test_events_are_consumed_once_and_come_back_on_rollback(sim: Any) -> None:
    from django.db import transaction

    backend, _ = sim
    backend.poll_events()
    backend.create_pod(spec("a"))

    seen: list[int] = []

    def consume_then_fail() -> None:
        with transaction.atomic():
            seen.append(len(backend.poll_events()))
            raise RuntimeError("mirror failed")

    with pytest.raises(RuntimeError):
        consume_then_fail()
    assert seen == [1]
    assert [e.object.name for e in backend.poll_events()] == ["a"]
    assert backend.poll_events() == []


def test_errors(sim: Any) -> None:
    backend, _ = sim
    with pytest.raises(NotFound):
        backend.bind("ns", "missing", "cpu-0")
    backend.create_pod(spec("a"))
    with pytest.raises(Conflict):
        backend.create_pod(spec("a"))
    with pytest.raises(NotFound):
        backend.bind("ns", "a", "no-such-node")
    assert backend.delete_pod("ns", "a") is True
    assert backend.delete_pod("ns", "a") is False


def test_services_configmaps_secrets(sim: Any) -> None:
    backend, _ = sim
    assert backend.ensure_config_map("ns", "cm", {"k": "v"}) is True
    assert backend.ensure_config_map("ns", "cm", {"k": "v"}) is False
    assert backend.get_object("configmap", "ns", "cm")["data"] == {"k": "v"}
    assert backend.delete_config_map("ns", "cm") is True


def test_manual_clock_never_goes_back(sim: Any) -> None:
    backend, clock = sim
    clock.advance(10)
    backend.tick()
    assert backend.now() == 10
    assert isinstance(clock, ManualClock)


def test_container_exit_restarts_in_place_under_on_failure(sim: Any) -> None:
    backend, clock = sim
    restarting = spec("restarting", **{"sim.volcanoweb.io/duration": "100s"})
    restarting.restart_policy = "OnFailure"
    backend.create_pod(restarting)
    backend.create_pod(spec("once", **{"sim.volcanoweb.io/duration": "1h"}))  # restartPolicy Never
    backend.bind_many([("ns", "restarting", "cpu-0"), ("ns", "once", "cpu-1")])
    backend.tick()
    clock.advance(60)
    backend.tick()
    backend.poll_events()
    info = backend.restart_container("ns", "restarting", exit_code=137)
    assert (info.phase, info.restart_count) == ("Running", 1)
    assert [e.object.restart_count for e in backend.poll_events() if e.kind == "pod"] == [1]
    assert backend.node_usage("cpu-0")["cpu"] == 1000  # still holds its node
    clock.advance(60)  # past the first run's end: the restarted run goes on
    backend.tick()
    assert backend.get_pod("ns", "restarting").phase == "Running"
    clock.advance(40)
    backend.tick()
    assert backend.get_pod("ns", "restarting").phase == "Succeeded"
    assert backend.restart_container("ns", "once", exit_code=1).phase == "Failed"
    with pytest.raises(Conflict):
        backend.restart_container("ns", "once", exit_code=1)
