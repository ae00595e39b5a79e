"""A simulated node pool with a topology (``{rack=N;spine=M}``) and Volcano's label-based HyperNode
discovery: racks and spines become HyperNodes, which the scheduler's snapshot reads; people's HyperNodes
are never touched, and discovered ones whose nodes are gone go."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb.clusters.helpers import make_sim
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.sim import parse_pool_spec
from volcanoweb.clusters.models import Node
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import HyperNode
from volcanoweb.scheduling.snapshots import build_snapshot

pytestmark = pytest.mark.django_db


def test_a_pool_topology_labels_nodes_as_volcanos_label_discovery_reads_them() -> None:
    nodes = parse_pool_spec("gpu:6x32c256Gi8gpu{rack=2;spine=2}")
    racks = [n.labels["volcano.sh/hypernode"] for n in nodes]
    spines = [n.labels["volcano.sh/hypercluster"] for n in nodes]
    assert racks == ["gpu-rack-0", "gpu-rack-0", "gpu-rack-1", "gpu-rack-1", "gpu-rack-2", "gpu-rack-2"]
    assert spines == ["gpu-spine-0"] * 4 + ["gpu-spine-1"] * 2
    assert "volcano.sh/hypernode" not in parse_pool_spec("cpu:2x8c16Gi")[0].labels


@pytest.mark.parametrize("spec", ["gpu:2x8c{rack=0}", "gpu:2x8c{spine=2}", "gpu:2x8c{pod=2}", "gpu:2x8c{rack=x}"])
def test_a_bad_pool_topology_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=r"topology|rack"):
        parse_pool_spec(spec)


@pytest.fixture
def topology_sim(db: Any) -> Any:
    backend, _clock = make_sim("gpu:8x32c256Gi8gpu{rack=2;spine=2},cpu:2x8c32Gi")
    previous = backend_module.set_backend(backend)
    yield backend
    backend_module.set_backend(previous)


def test_discovery_makes_racks_and_spines_that_reach_the_scheduler(topology_sim: Any) -> None:
    cluster_services.sync_from_backend()
    rows = {h.name: h for h in HyperNode.objects.all()}
    assert sorted(rows) == [f"gpu-rack-{i}" for i in range(4)] + ["gpu-spine-0", "gpu-spine-1"]
    assert rows["gpu-rack-0"].tier == 1
    assert rows["gpu-spine-1"].tier == 2
    assert [m["selector"]["exactMatch"]["name"] for m in rows["gpu-spine-1"].members] == ["gpu-rack-2", "gpu-rack-3"]
    assert rows["gpu-rack-0"].labels == {"volcano.sh/network-topology-source": "label"}
    snap = build_snapshot().snapshot
    from scheduler.topology import Topology

    topo = Topology(snap.hyper_nodes, sorted(snap.nodes, key=lambda n: n.name))
    names = [n.name for n in sorted(snap.nodes, key=lambda n: n.name)]
    assert sorted(names[i] for i in topo.nodes["gpu-rack-1"]) == ["gpu-2", "gpu-3"]
    assert sorted(names[i] for i in topo.nodes["gpu-spine-0"]) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert job_services.discover_hypernodes() == 0  # nothing changed: nothing written


def test_discovery_keeps_peoples_hypernodes_and_drops_its_own_stale_ones(topology_sim: Any) -> None:
    HyperNode.objects.create(
        name="gpu-rack-0", tier=1, members=[{"type": "Node", "selector": {"exactMatch": {"name": "gpu-0"}}}]
    )
    HyperNode.objects.create(
        name="old-rack", tier=1, members=[], labels={"volcano.sh/network-topology-source": "label"}
    )
    cluster_services.sync_from_backend()
    mine = HyperNode.objects.get(name="gpu-rack-0")
    assert mine.labels == {}
    assert len(mine.members) == 1
    assert not HyperNode.objects.filter(name="old-rack").exists()
    Node.objects.filter(name__in=["gpu-6", "gpu-7"]).update(labels={})
    job_services.discover_hypernodes()
    assert not HyperNode.objects.filter(name="gpu-rack-3").exists()
    spine = HyperNode.objects.get(name="gpu-spine-1")
    assert [m["selector"]["exactMatch"]["name"] for m in spine.members] == ["gpu-rack-2"]
