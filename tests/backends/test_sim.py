"""Tests of the in-memory simulated cluster (SimCluster) driven by a ManualClock.

The engine's transitions are also one table run against both stores in
``tests/volcanoweb/clusters/test_sim_engine.py``; this file adds what the in-memory sim has of its own:
pool specs, durations, clocks, the JSON state, waiting polls and scale.
"""

from __future__ import annotations

import json

import pytest

from volcanoweb.clusters.backends.base import (
    GROUP_NAME_ANNOTATION,
    SIM_DURATION_ANNOTATION,
    SIM_EXIT_CODE_ANNOTATION,
    BackendEvent,
    Conflict,
    Container,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
)
from volcanoweb.clusters.backends.grouping import group_pods, podgroup_name_for
from volcanoweb.clusters.backends.sim import (
    ManualClock,
    ScaledClock,
    SimCluster,
    parse_pool_spec,
)
from volcanoweb.clusters.backends.simengine import MAX_EVENTS_PER_POLL


def make_pod(
    name: str,
    cpu: str = "1",
    memory: str = "1Gi",
    namespace: str = "default",
    **annotations: str,
) -> PodSpec:
    return PodSpec(
        namespace=namespace,
        name=name,
        containers=[Container("main", "busybox", requests={"cpu": cpu, "memory": memory})],
        annotations=dict(annotations),
    )


def pod_events(events: list[BackendEvent], name: str) -> list[tuple[str, str]]:
    return [(e.type, e.object.phase) for e in events if isinstance(e.object, PodInfo) and e.object.name == name]


def drain(sim: SimCluster) -> list[BackendEvent]:
    """Poll until no event is left (one poll returns at most MAX_EVENTS_PER_POLL)."""
    events: list[BackendEvent] = []
    while batch := sim.poll_events():
        assert len(batch) <= MAX_EVENTS_PER_POLL
        events += batch
    return events


@pytest.fixture
def sim() -> SimCluster:
    return SimCluster("cpu:2x4c8Gi,gpu:1x8c32Gi2gpu", clock=ManualClock())


def test_pool_spec_parses_nodes_and_labels() -> None:
    nodes = parse_pool_spec("cpu:8x16c64Gi, gpu:4x32c256Gi4gpu[accelerator=a100;zone=z1],big:1.5c")
    assert [n.name for n in nodes][:2] == ["cpu-0", "cpu-1"]
    assert len(nodes) == 13
    gpu = nodes[8]
    assert gpu.name == "gpu-0"
    assert gpu.allocatable == {
        "cpu": "32",
        "memory": "256Gi",
        "nvidia.com/gpu": "4",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }
    assert gpu.labels["accelerator"] == "a100"
    assert (gpu.labels["kubernetes.io/os"], gpu.labels["kubernetes.io/arch"]) == ("linux", "amd64")
    assert gpu.labels["sim.volcanoweb.io/pool"] == "gpu"
    assert gpu.labels["kubernetes.io/hostname"] == "gpu-0"
    assert nodes[-1].allocatable["cpu"] == "1.5"


@pytest.mark.parametrize("bad", ["cpu", "cpu:4x", "cpu:4x16q", "cpu:2c2c", "a:1c,a:2c", "X:1c"])
def test_pool_spec_rejects_garbage(bad: str) -> None:
    with pytest.raises(ValueError, match="pool"):
        parse_pool_spec(bad)


def test_bound_pod_runs_then_succeeds_after_duration(sim: SimCluster) -> None:
    sim.create_pod(make_pod("p1", **{SIM_DURATION_ANNOTATION: "30s"}))
    sim.bind("default", "p1", "cpu-0")
    events = sim.poll_events()
    assert pod_events(events, "p1") == [
        ("ADDED", "Pending"),
        ("MODIFIED", "Pending"),
        ("MODIFIED", "Running"),
    ]
    assert sim.get_pod("default", "p1").node_name == "cpu-0"
    assert sim.node_usage("cpu-0")["cpu"] == 1000  # millicores, as the scheduler counts
    sim.advance(29)
    assert sim.poll_events() == []
    sim.advance(1)
    pod = sim.get_pod("default", "p1")
    assert (pod.phase, pod.exit_code, pod.reason) == ("Succeeded", 0, "Completed")
    assert pod.started_at == 0
    assert pod.finished_at == 30
    assert sim.node_usage("cpu-0")["cpu"] == 0


def test_unbound_pod_stays_pending(sim: SimCluster) -> None:
    sim.create_pod(make_pod("p1"))
    sim.advance(3600)
    assert sim.get_pod("default", "p1").phase == "Pending"


def test_default_duration_and_startup_delay() -> None:
    sim = SimCluster("n:1x4c4Gi", default_duration=10, startup_delay=2)
    sim.create_pod(make_pod("p"))
    sim.bind("default", "p", "n-0")
    sim.advance(1.9)
    assert sim.get_pod("default", "p").phase == "Pending"
    sim.advance(0.1)
    assert sim.get_pod("default", "p").phase == "Running"
    sim.advance(10)
    assert sim.get_pod("default", "p").finished_at == 12


def test_exit_code_annotation_fails_pod(sim: SimCluster) -> None:
    sim.create_pod(make_pod("p", **{SIM_DURATION_ANNOTATION: "5m", SIM_EXIT_CODE_ANNOTATION: "3"}))
    sim.bind("default", "p", "cpu-1")
    sim.advance(300)
    pod = sim.get_pod("default", "p")
    assert (pod.phase, pod.exit_code, pod.reason) == ("Failed", 3, "Error")


def test_fail_pod_with_137(sim: SimCluster) -> None:
    sim.create_pod(make_pod("p"))
    sim.bind("default", "p", "cpu-0")
    sim.tick()
    sim.poll_events()
    sim.fail_pod("default", "p", exit_code=137, reason="OOMKilled")
    events = sim.poll_events()
    assert pod_events(events, "p") == [("MODIFIED", "Failed")]
    pod = sim.get_pod("default", "p")
    assert (pod.exit_code, pod.reason) == (137, "OOMKilled")
    sim.advance(3600)  # the original finish timer must not fire
    assert sim.poll_events() == []
    with pytest.raises(Conflict):
        sim.fail_pod("default", "p", exit_code=1)


def test_double_bind_conflicts_and_unknowns(sim: SimCluster) -> None:
    sim.create_pod(make_pod("p"))
    sim.bind("default", "p", "cpu-0")
    with pytest.raises(Conflict):
        sim.bind("default", "p", "cpu-1")
    with pytest.raises(Conflict):
        sim.create_pod(make_pod("p"))
    with pytest.raises(NotFound):
        sim.bind("default", "missing", "cpu-0")
    sim.create_pod(make_pod("q"))
    with pytest.raises(NotFound):
        sim.bind("default", "q", "no-such-node")


def test_eviction_deletes_with_reason(sim: SimCluster) -> None:
    sim.create_pod(make_pod("p"))
    sim.bind("default", "p", "cpu-0")
    sim.tick()
    sim.poll_events()
    sim.evict("default", "p")
    events = sim.poll_events()
    assert [(e.type, e.object.reason) for e in events] == [("DELETED", "Evicted")]
    with pytest.raises(NotFound):
        sim.get_pod("default", "p")
    assert sim.node_usage("cpu-0")["cpu"] == 0
    with pytest.raises(NotFound):
        sim.evict("default", "p")


def test_graceful_delete_keeps_resources_until_removed() -> None:
    sim = SimCluster("n:1x4c4Gi", delete_grace=30)
    sim.create_pod(make_pod("p"))
    sim.bind("default", "p", "n-0")
    sim.tick()
    assert sim.delete_pod("default", "p") is True
    pod = sim.get_pod("default", "p")
    assert pod.deleting
    assert pod.phase == "Running"
    assert sim.node_usage("n-0")["cpu"] == 1000
    sim.advance(30)
    assert sim.list_pods() == []
    assert sim.node_usage("n-0")["cpu"] == 0
    assert sim.delete_pod("default", "p") is False


def test_node_failure_evicts_pods_and_recovery(sim: SimCluster) -> None:
    for name in ("a", "b"):
        sim.create_pod(make_pod(name))
        sim.bind("default", name, "cpu-0")
    sim.create_pod(make_pod("other"))
    sim.bind("default", "other", "cpu-1")
    sim.tick()
    sim.poll_events()
    sim.fail_node("cpu-0")
    events = sim.poll_events()
    assert [(e.kind, e.type) for e in events] == [
        ("node", "MODIFIED"),
        ("pod", "DELETED"),
        ("pod", "DELETED"),
    ]
    node = events[0].object
    assert not node.ready
    assert any(t.effect == "NoExecute" for t in node.taints)
    assert {e.object.reason for e in events[1:]} == {"NodeLost"}
    assert sim.get_pod("default", "other").phase == "Running"
    # A pod bound to a NotReady node waits for the node to recover.
    sim.create_pod(make_pod("late"))
    sim.bind("default", "late", "cpu-0")
    sim.advance(5)
    assert sim.get_pod("default", "late").phase == "Pending"
    sim.recover_node("cpu-0")
    sim.tick()
    assert sim.get_pod("default", "late").phase == "Running"
    assert sim.list_nodes()[0].ready
    assert sim.list_nodes()[0].taints == []


def test_node_failure_can_fail_pods_instead(sim: SimCluster) -> None:
    sim.create_pod(make_pod("a"))
    sim.bind("default", "a", "cpu-0")
    sim.tick()
    sim.fail_node("cpu-0", evict_pods=False)
    pod = sim.get_pod("default", "a")
    assert (pod.phase, pod.reason) == ("Failed", "NodeLost")


def test_kubelet_rejects_overcommit_and_selector_mismatch(sim: SimCluster) -> None:
    sim.create_pod(make_pod("big", cpu="3"))
    sim.create_pod(make_pod("big2", cpu="2"))
    sim.bind("default", "big", "cpu-0")
    sim.bind("default", "big2", "cpu-0")
    sim.tick()
    assert sim.get_pod("default", "big").phase == "Running"
    pod = sim.get_pod("default", "big2")
    assert (pod.phase, pod.reason) == ("Failed", "OutOfcpu")
    spec = make_pod("gpuonly")
    spec.node_selector = {"sim.volcanoweb.io/pool": "gpu"}
    sim.create_pod(spec)
    sim.bind("default", "gpuonly", "cpu-1")
    sim.tick()
    assert sim.get_pod("default", "gpuonly").reason == "NodeAffinity"


def test_events_are_ordered_by_simulated_time(sim: SimCluster) -> None:
    for name, duration in (("slow", "20s"), ("fast", "10s")):
        sim.create_pod(make_pod(name, **{SIM_DURATION_ANNOTATION: duration}))
        sim.bind("default", name, "cpu-0")
    sim.poll_events()
    sim.advance(60)
    finished = [e.object for e in sim.poll_events() if e.object.phase == "Succeeded"]
    assert [(p.name, p.finished_at) for p in finished] == [("fast", 10), ("slow", 20)]


def test_resource_versions_increase_and_annotations_patch(sim: SimCluster) -> None:
    first = sim.create_pod(make_pod("p"))
    patched = sim.patch_pod_annotations("default", "p", {GROUP_NAME_ANNOTATION: "pg1"})
    assert int(patched.resource_version) > int(first.resource_version)
    assert patched.group_name == "pg1"
    sim.patch_pod_annotations("default", "p", {GROUP_NAME_ANNOTATION: None})
    assert sim.get_pod("default", "p").group_name is None


def test_grouping_by_annotation_and_podgroup_names(sim: SimCluster) -> None:
    sim.create_pod(make_pod("spark-driver", **{GROUP_NAME_ANNOTATION: "spark-pg"}))
    sim.create_pod(make_pod("spark-exec-1", **{GROUP_NAME_ANNOTATION: "spark-pg"}))
    bare = sim.create_pod(make_pod("bare"))
    owned = make_pod("owned")
    owned.owner = OwnerReference(kind="ReplicaSet", name="rs", uid="rs-uid", api_version="apps/v1")
    sim.create_pod(owned)
    other = make_pod("not-volcano")
    other.scheduler_name = "default-scheduler"
    sim.create_pod(other)
    groups = group_pods(sim.list_pods(scheduler_name="volcano"))
    assert sorted(groups) == [
        ("default", f"podgroup-{bare.uid}"),
        ("default", "podgroup-rs-uid"),
        ("default", "spark-pg"),
    ]
    assert [p.name for p in groups[("default", "spark-pg")]] == ["spark-driver", "spark-exec-1"]
    assert podgroup_name_for(bare) == f"podgroup-{bare.uid}"


def test_services_configmaps_secrets_are_idempotent(sim: SimCluster) -> None:
    assert sim.ensure_service(ServiceSpec("default", "job", selector={"a": "b"})) is True
    assert sim.ensure_service(ServiceSpec("default", "job")) is False
    assert sim.ensure_config_map("default", "job-svc", {"worker.host": "w-0"}) is True
    assert sim.ensure_config_map("default", "job-svc", {}) is False
    assert sim.ensure_secret("default", "job-ssh", {"id_rsa": "k"}) is True
    assert sim.ensure_secret("default", "job-ssh", {}) is False
    assert sim.config_maps[("default", "job-svc")]["data"] == {"worker.host": "w-0"}
    assert sim.delete_service("default", "job") is True
    assert sim.delete_service("default", "job") is False
    assert sim.delete_config_map("default", "job-svc") is True
    assert sim.delete_secret("default", "job-ssh") is True


def test_state_round_trip_through_json(sim: SimCluster) -> None:
    sim.create_pod(make_pod("done", **{SIM_DURATION_ANNOTATION: "5s"}))
    sim.bind("default", "done", "cpu-0")
    sim.create_pod(make_pod("running", **{SIM_DURATION_ANNOTATION: "100s"}))
    sim.bind("default", "running", "cpu-0")
    sim.create_pod(make_pod("pending"))
    sim.ensure_config_map("default", "cm", {"k": "v"})
    sim.fail_node("gpu-0")
    sim.advance(10)
    state = json.loads(json.dumps(sim.to_state()))
    copy = SimCluster.from_state(state)
    assert copy.to_state() == sim.to_state()
    assert copy.list_pods() == sim.list_pods()
    assert copy.poll_events() == sim.poll_events()
    assert copy.node_usage("cpu-0") == sim.node_usage("cpu-0")
    # Timers survive: the running pod still finishes at t=100.
    copy.advance(90)
    assert copy.get_pod("default", "running").phase == "Succeeded"
    assert copy.get_pod("default", "running").finished_at == 100
    copy.create_pod(make_pod("new"))
    assert copy.get_pod("default", "new").uid not in {p.uid for p in sim.list_pods()}


def test_scaled_clock_runs_faster_and_resumes() -> None:
    wall = [1000.0]
    clock = ScaledClock(speed=60, start=5, wall=lambda: wall[0])
    assert clock.now() == 5
    wall[0] += 2
    assert clock.now() == 125
    again = ScaledClock.from_dict(clock.to_dict(), wall=lambda: wall[0])
    assert again.now() == 125
    wall[0] += 1
    assert again.now() == clock.now() == 185


def test_poll_events_waits_for_a_scaled_clock() -> None:
    sim = SimCluster("n:1x4c4Gi", clock=ScaledClock(speed=1000))
    sim.create_pod(make_pod("p", **{SIM_DURATION_ANNOTATION: "20s"}))
    sim.bind("default", "p", "n-0")
    seen: list[str] = []
    for _ in range(50):
        seen += [e.object.phase for e in sim.poll_events(timeout=0.2) if e.kind == "pod"]
        if "Succeeded" in seen:
            break
    assert seen[-1] == "Succeeded"


def test_ten_thousand_pods_on_a_thousand_nodes() -> None:
    sim = SimCluster("cpu:1000x16c64Gi", default_duration=60)
    nodes = [n.name for n in sim.list_nodes()]
    for i in range(10_000):
        duration = f"{30 + i % 60}s"
        sim.create_pod(make_pod(f"p{i}", cpu="1", **{SIM_DURATION_ANNOTATION: duration}))
        sim.bind("default", f"p{i}", nodes[i % 1000])
    sim.tick()
    assert len(drain(sim)) == 1_000 + 30_000  # nodes ADDED; pods ADDED, bound, Running
    for _ in range(10):
        sim.advance(10)
    phases = {p.phase for p in sim.list_pods()}
    assert phases == {"Succeeded"}
    assert len(drain(sim)) == 10_000
    assert sim.node_usage("cpu-0")["cpu"] == 0


@pytest.mark.parametrize(
    ("policy", "code", "restarted"),
    [("OnFailure", 1, True), ("OnFailure", 0, False), ("Always", 0, True), ("Never", 137, False)],
)
def test_container_exit_follows_the_restart_policy(sim: SimCluster, policy: str, code: int, restarted: bool) -> None:
    spec = make_pod("p", **{SIM_DURATION_ANNOTATION: "100s"})
    spec.restart_policy = policy
    sim.create_pod(spec)
    sim.bind("default", "p", "cpu-0")
    sim.tick()
    sim.advance(60)
    sim.poll_events()
    info = sim.restart_container("default", "p", exit_code=code)
    assert pod_events(sim.poll_events(), "p") == [("MODIFIED", info.phase)]
    if not restarted:
        assert (info.phase, info.exit_code, info.restart_count) == ("Failed" if code else "Succeeded", code, 0)
        return
    assert (info.phase, info.restart_count, info.exit_code) == ("Running", 1, None)
    assert "exit code" in info.message
    sim.advance(60)  # the first run's finish time (100 s) has passed: the restarted container runs on
    assert sim.get_pod("default", "p").phase == "Running"
    sim.restart_container("default", "p", exit_code=2)
    assert sim.get_pod("default", "p").restart_count == 2
    sim.advance(100)
    assert sim.get_pod("default", "p").phase == "Succeeded"


def test_container_exit_of_a_pod_that_is_not_running_conflicts(sim: SimCluster) -> None:
    sim.create_pod(make_pod("p"))
    with pytest.raises(Conflict):
        sim.restart_container("default", "p", exit_code=1)
    with pytest.raises(NotFound):
        sim.restart_container("default", "nope", exit_code=1)


def test_simulated_log_tells_start_progress_restarts_and_exit(sim: SimCluster) -> None:
    spec = make_pod("logged", **{SIM_DURATION_ANNOTATION: "20s", SIM_EXIT_CODE_ANNOTATION: "3"})
    spec.restart_policy = "OnFailure"
    sim.create_pod(spec)
    assert "waiting to start" in sim.pod_log("default", "logged")
    sim.bind("default", "logged", "cpu-0")
    sim.advance(11)
    running = sim.pod_log("default", "logged", container="main")
    assert "scheduled to node cpu-0" in running
    assert "container main started" in running
    assert "running: 10s" in running  # progress lines appear while the simulated container runs
    sim.advance(5)
    assert "running: 15s" in sim.pod_log("default", "logged")
    assert sim.pod_log("default", "logged", tail_lines=1).count("\n") == 1
    with pytest.raises(NotFound):  # no earlier instance yet
        sim.pod_log("default", "logged", previous=True)
    sim.restart_container("default", "logged", exit_code=1)
    assert "(restart 1)" in sim.pod_log("default", "logged")
    assert "restart 1" in sim.pod_log("default", "logged", previous=True)
    sim.advance(25)
    done = sim.pod_log("default", "logged")
    assert "exited with code 3" in done
    with pytest.raises(NotFound):
        sim.pod_log("default", "missing")


def test_pool_spec_hardware_section_declares_usage_numa_and_gpu_memory() -> None:
    nodes = parse_pool_spec(
        "cpu:1x16c64Gi(usage=0.5;numa=2x1x4x2;topology=single-numa-node),gpu:1x32c256Gi4gpu(gpumem=40960)"
    )
    cpu, gpu = nodes
    assert cpu.labels["sim.volcanoweb.io/usage-factor"] == "0.5"
    assert cpu.labels["sim.volcanoweb.io/numa"] == "2x1x4x2"
    assert cpu.labels["sim.volcanoweb.io/topology-manager-policy"] == "single-numa-node"
    assert gpu.allocatable["volcano.sh/gpu-number"] == "4"
    assert gpu.allocatable["volcano.sh/gpu-memory"] == str(4 * 40960)


def test_pool_spec_hardware_section_declares_vgpu_cards() -> None:
    """vgpu=M[xS]: each gpu card of M MiB shared by S pods (10 by default), registered by a label."""
    split, default = parse_pool_spec("a:1x8c32Gi2gpu(vgpu=16384x4),b:1x8c32Gi4gpu(vgpu=1000)")
    assert split.labels["sim.volcanoweb.io/vgpu"] == "2x16384x4"
    assert {k: v for k, v in split.allocatable.items() if k.startswith("volcano.sh/")} == {
        "volcano.sh/vgpu-number": "8",
        "volcano.sh/vgpu-memory": "32768",
        "volcano.sh/vgpu-cores": "200",
    }
    assert default.labels["sim.volcanoweb.io/vgpu"] == "4x1000x10"
    assert default.allocatable["volcano.sh/vgpu-number"] == "40"


@pytest.mark.parametrize(
    "bad",
    [
        "a:1c(usage=x)",
        "a:1c(numa=2x1)",
        "a:1c(topology=single-numa-node)",
        "a:1c(gpumem=10)",
        "a:1c(cores=2)",
        "a:1c(vgpu=1000)",
        "a:1c1gpu(vgpu=0)",
        "a:1c1gpu(vgpu=1000x)",
    ],
)
def test_pool_spec_rejects_bad_hardware_terms(bad: str) -> None:
    with pytest.raises(ValueError, match="pool"):
        parse_pool_spec(bad)


def test_usage_model_follows_the_running_pods_times_the_pool_factor() -> None:
    """A node of a pool with usage=0.5 uses half its running pods' requests; nothing before they start or after
    they end; another pool's default factor is 1."""
    sim = SimCluster("half:1x4c8Gi(usage=0.5),full:1x4c8Gi", clock=ManualClock())
    assert {m.name: (m.cpu, m.memory) for m in sim.node_metrics()} == {"full-0": (0, 0), "half-0": (0, 0)}
    sim.create_pod(make_pod("p1", **{SIM_DURATION_ANNOTATION: "30s"}))
    sim.create_pod(make_pod("p2", **{SIM_DURATION_ANNOTATION: "30s"}))
    sim.bind("default", "p1", "half-0")
    sim.bind("default", "p2", "full-0")
    sim.poll_events()
    got = {m.name: m.cpu for m in sim.node_metrics()}
    assert got == {"full-0": 1000, "half-0": 500}
    sim.advance(30)
    sim.poll_events()
    assert {m.name: m.cpu for m in sim.node_metrics()} == {"full-0": 0, "half-0": 0}
