"""Node usage in the product: the simulated cluster's usage model (the pool's ``usage=F`` factor times the requests
of the pods running on a node) read into the Node rows by ``record_node_usage``, and from there into the scheduler's
snapshot (``Node.usage``, ``usage_time``), where the usage and rescheduling plugins read it; the pool's NUMA layout
reaches ``Node.numa``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb.clusters.helpers import make_sim
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.base import Container, NodeMetrics, PodSpec
from volcanoweb.clusters.models import Node
from volcanoweb.scheduling.snapshots import build_snapshot

pytestmark = pytest.mark.django_db

POOL = "hot:1x4c8Gi(usage=1),cool:1x4c8Gi(usage=0.25;numa=1x2x2x1;topology=single-numa-node)"


@pytest.fixture
def usage_sim(db: Any) -> Any:
    backend, clock = make_sim(POOL)
    previous = backend_module.set_backend(backend)
    yield backend, clock
    backend_module.set_backend(previous)


def _run(backend: Any, name: str, node: str, cpu: str) -> None:
    spec = PodSpec("default", name, [Container("main", "busybox", requests={"cpu": cpu, "memory": "2Gi"})])
    backend.create_pod(spec)
    backend.bind("default", name, node)


def test_running_pods_make_usage_that_reaches_the_snapshot(usage_sim: Any) -> None:
    backend, clock = usage_sim
    cluster_services.sync_from_backend()
    _run(backend, "a", "hot-0", "2")
    _run(backend, "b", "cool-0", "2")
    clock.advance(5)
    cluster_services.sync_from_backend()
    assert cluster_services.record_node_usage() == 2
    rows = {n.name: n for n in Node.objects.all()}
    assert rows["hot-0"].usage == {"5m": {"cpu": 50.0, "memory": 25.0}, "10m": {"cpu": 50.0, "memory": 25.0}}
    assert rows["cool-0"].usage["10m"] == {"cpu": 12.5, "memory": 6.2}
    assert rows["hot-0"].usage_time is not None
    snap = build_snapshot().snapshot
    nodes = {n.name: n for n in snap.nodes}
    assert nodes["hot-0"].usage["10m"]["cpu"] == 50.0
    assert nodes["hot-0"].usage_time == rows["hot-0"].usage_time.timestamp()
    assert nodes["hot-0"].numa is None
    numa = nodes["cool-0"].numa
    assert numa is not None
    assert numa.topology_policy == "single-numa-node"
    assert [c[1] for c in numa.cpus] == [0, 0, 1, 1]


def test_an_unchanged_reading_is_rewritten_only_once_a_minute_old(usage_sim: Any) -> None:
    cluster_services.sync_from_backend()

    class Fixed:
        at = 1_700_000_000.0

        def node_metrics(self) -> list[NodeMetrics]:
            return [NodeMetrics("hot-0", 1000, 0, self.at)]

    fixed = Fixed()
    assert cluster_services.record_node_usage(fixed) == 1  # type: ignore[arg-type]
    fixed.at += 30
    assert cluster_services.record_node_usage(fixed) == 0  # type: ignore[arg-type]  # same reading, still fresh
    fixed.at += 31
    assert cluster_services.record_node_usage(fixed) == 1  # type: ignore[arg-type]  # a minute old: its time moves
    row = Node.objects.get(name="hot-0")
    assert row.usage["5m"] == {"cpu": 25.0, "memory": 0.0}
    assert row.usage_time is not None
    assert row.usage_time.timestamp() == fixed.at
