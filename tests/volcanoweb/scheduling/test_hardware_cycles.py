"""The hardware plugins in the product's cycle on the database-backed sim: deviceshare's cards written on the pods
(the Pod rows and the cluster's pods), and the usage plugin steering a pod off a node the usage model reports hot."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import make_sim
from tests.volcanoweb.scheduling.cycling import cycle_and_sync
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.base import Container, PodSpec
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Job, Pod
from volcanoweb.runtime import services as runtime
from volcanoweb.scheduling import services as scheduling_services
from volcanoweb.scheduling.services import run_cycle
from volcanoweb.tenancy.access import SYSTEM

GPU_SHARE = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: deviceshare
    arguments: {deviceshare.GPUSharingEnable: true}
"""


def _config(extra: str) -> str:
    return f'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n{extra}'


@pytest.fixture
def pool_sim(db: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    backend, clock = make_sim(request.param)
    previous = backend_module.set_backend(backend)
    yield backend, clock
    backend_module.set_backend(previous)


def _submit(name: str, replicas: int, **requests: str) -> None:
    task = builders.task("t", replicas, cpu="1")
    task["template"]["spec"]["containers"][0]["resources"]["requests"].update(requests)
    doc = builders.job_manifest(name, namespace="team-a", tasks=[task])
    job_services.apply_job(SYSTEM, doc)
    runtime.on_job_submitted(Job.objects.get(namespace="team-a", name=name).pk)


@pytest.mark.parametrize("pool_sim", ["gpu:1x16c64Gi2gpu(gpumem=1000)"], indirect=True)
def test_deviceshare_cards_are_written_on_the_pods(pool_sim: Any, cast: Any) -> None:
    backend, _clock = pool_sim
    scheduling_services.save_config(SYSTEM, GPU_SHARE)
    cluster_services.sync_from_backend()
    _submit("share", 2, **{"volcano.sh/gpu-memory": "600"})
    for _ in range(3):
        cycle_and_sync()
    pods = {p.name: p for p in Pod.objects.filter(namespace="team-a")}
    assert sorted(p.annotations.get("volcano.sh/gpu-index") for p in pods.values()) == ["0", "1"]
    for name, pod in pods.items():
        assert pod.node_name == "gpu-0"
        cluster_pod = backend.get_pod("team-a", name)
        assert cluster_pod.annotations["volcano.sh/gpu-index"] == pod.annotations["volcano.sh/gpu-index"]


VGPU = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true, deviceshare.SchedulePolicy: binpack}
"""


@pytest.mark.parametrize("pool_sim", ["gpu:1x16c64Gi2gpu(vgpu=16384x4)"], indirect=True)
def test_vgpu_cards_of_a_pool_are_shared_by_the_pods(pool_sim: Any, cast: Any, client_for: Any) -> None:
    """A pool's simulated vGPU cards (two of 16384 MiB): a job of two pods of 10000 MiB takes a card each (binpack
    cannot stack the second on the first's 6384 MiB left); each bound pod carries its card
    (volcano.sh/vgpu-ids-new) on its row and in the cluster, and a later job's pod, read against them, waits. The
    node shows its cards as the vGPU device plugin registers them."""
    backend, _clock = pool_sim
    scheduling_services.save_config(SYSTEM, VGPU)
    cluster_services.sync_from_backend()
    node = client_for(cast.victor).get("/api/v1/nodes/gpu-0").json()
    card = "GPU-gpu-0-{},4,16384,NVIDIA,true,hami-core:"
    assert node["metadata"]["annotations"] == {"volcano.sh/node-vgpu-register": card.format(0) + card.format(1)}
    vgpu = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "10000"}
    _submit("first", 2, **vgpu)
    for _ in range(3):
        cycle_and_sync()
    _submit("later", 1, **vgpu)
    for _ in range(3):
        cycle_and_sync()
    pods = {p.name: p for p in Pod.objects.filter(namespace="team-a")}
    held = {name: p.annotations.get("volcano.sh/vgpu-ids-new", "") for name, p in pods.items()}
    assert sorted(v for k, v in held.items() if k.startswith("first-")) == [
        "GPU-gpu-0-0,NVIDIA,10000,0:",
        "GPU-gpu-0-1,NVIDIA,10000,0:",
    ]
    for name, pod in pods.items():
        if name.startswith("first-"):
            assert pod.node_name == "gpu-0"
            assert backend.get_pod("team-a", name).annotations["volcano.sh/vgpu-ids-new"] == held[name]
    assert [(p.node_name, held[n]) for n, p in pods.items() if n.startswith("later-")] == [("", "")]


@pytest.mark.parametrize("pool_sim", ["hot:1x8c32Gi,cool:1x8c32Gi"], indirect=True)
@pytest.mark.parametrize(
    ("plugins", "node"), [("  - name: binpack\n", "hot-0"), ("  - name: binpack\n  - name: usage\n", "cool-0")]
)
def test_usage_keeps_a_pod_off_a_node_the_usage_model_reports_hot(
    pool_sim: Any, cast: Any, plugins: str, node: str
) -> None:
    """A 7-CPU pod of another scheduler runs on hot-0 (87.5 % cpu by the usage model): binpack alone packs the new
    pod there, with usage the node is over its 80 % threshold."""
    backend, clock = pool_sim
    scheduling_services.save_config(SYSTEM, _config(plugins))
    backend.create_pod(
        PodSpec("default", "busy", [Container("main", "busybox", requests={"cpu": "7", "memory": "1Gi"})])
    )
    backend.bind("default", "busy", "hot-0")
    clock.advance(5)
    cluster_services.sync_from_backend()
    assert cluster_services.record_node_usage() == 2
    _submit("light", 1)
    for _ in range(3):
        cycle_and_sync()
    assert list(Pod.objects.filter(namespace="team-a").values_list("node_name", flat=True)) == [node]


NUMA = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: numa-aware
"""


def _submit_pinned(name: str, replicas: int, cpu: str) -> None:
    """A job of Guaranteed pods (limits = requests) with the single-numa-node topology policy."""
    task = builders.task("t", replicas, cpu=cpu, topologyPolicy="single-numa-node")
    resources = task["template"]["spec"]["containers"][0]["resources"]
    resources["limits"] = dict(resources["requests"])
    job_services.apply_job(SYSTEM, builders.job_manifest(name, namespace="team-a", tasks=[task]))
    runtime.on_job_submitted(Job.objects.get(namespace="team-a", name=name).pk)


@pytest.mark.parametrize("pool_sim", ["numa:1x8c32Gi(numa=1x2x2x2;topology=single-numa-node)"], indirect=True)
def test_numa_aware_keeps_a_pod_that_would_span_numa_nodes_pending(pool_sim: Any, cast: Any) -> None:
    """Two NUMA nodes of 4 CPUs: two 3-CPU pods take one each; a 2-CPU pod would find 1 free CPU on each, so it
    stays pending cycle after cycle (the running pods are pinned again as the node's policy admitted them)."""
    scheduling_services.save_config(SYSTEM, NUMA)
    cluster_services.sync_from_backend()
    _submit_pinned("big", 2, "3")
    for _ in range(3):
        cycle_and_sync()
    _submit_pinned("small", 1, "2")
    for _ in range(3):
        cycle_and_sync()
    nodes = dict(Pod.objects.filter(namespace="team-a").values_list("name", "node_name"))
    assert sorted(n for p, n in nodes.items() if p.startswith("big-")) == ["numa-0", "numa-0"]
    assert [n for p, n in nodes.items() if p.startswith("small-")] == [""]


RESCHEDULING = """\
actions: "shuffle"
tiers:
- plugins:
  - name: rescheduling
    arguments:
      strategies:
      - name: lowNodeUtilization
        params:
          thresholds: {cpu: 30, memory: 30}
          targetThresholds: {cpu: 60, memory: 60}
"""


@pytest.mark.parametrize("pool_sim", ["a:1x10c100Gi,b:1x10c100Gi"], indirect=True)
def test_rescheduling_evicts_from_a_node_the_usage_model_reports_hot(pool_sim: Any, cast: Any) -> None:
    """binpack packs eight 1-CPU pods on one node (80 % cpu by the usage model, factor 1); with rescheduling's
    lowNodeUtilization (targets 60 %) the shuffle action evicts pods from it while it is at or above its target."""
    scheduling_services.save_config(SYSTEM, _config("  - name: binpack\n"))
    cluster_services.sync_from_backend()
    _submit("packed", 8)
    for _ in range(3):
        cycle_and_sync()
    placed = set(Pod.objects.filter(namespace="team-a").values_list("node_name", flat=True))
    assert len(placed) == 1
    assert cluster_services.record_node_usage() == 2
    scheduling_services.save_config(SYSTEM, RESCHEDULING)
    run = run_cycle()
    assert run is not None
    assert run.evictions == 3  # 80, 70, 60 % → 50 %
