"""Sub-groups in the product's cycle, on the database-backed sim: a PodGroup whose subGroupPolicy keeps each
sub-group of two pods inside one rack (a hard tier-1 network topology) while the gang as a whole may span the spine
(tier 2); the pods of each sub-group land in one rack, and the two sub-groups in the two racks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb.clusters.helpers import make_sim
from tests.volcanoweb.scheduling.cycling import cycle_and_sync
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Pod
from volcanoweb.scheduling import services as scheduling_services
from volcanoweb.tenancy.access import SYSTEM

CONFIG = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: network-topology-aware
"""


@pytest.fixture
def racks(db: Any) -> Iterator[Any]:
    """Four 2-GPU nodes in racks of two (gpu-rack-0: gpu-0, gpu-1; gpu-rack-1: gpu-2, gpu-3) under one spine."""
    backend, _clock = make_sim("gpu:4x16c64Gi2gpu{rack=2;spine=2}")
    previous = backend_module.set_backend(backend)
    yield backend
    backend_module.set_backend(previous)


def _apply(sub_group_tier: int) -> None:
    """A PodGroup of four 2-GPU pods (a whole node each), in two sub-groups by their ``part`` label."""
    policy = {
        "name": "part",
        "matchLabelKeys": ["part"],
        "subGroupSize": 2,
        "minSubGroups": 2,
        "networkTopology": {"mode": "hard", "highestTierAllowed": sub_group_tier},
    }
    spec = {
        "minMember": 4,
        "queue": "default",
        "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
        "subGroupPolicy": [policy],
    }
    doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "ring"},
        "spec": spec,
    }
    job_services.apply_podgroup(SYSTEM, doc, "team-a")
    # Pods 0 and 2 form part a, 1 and 3 part b: name order alone would pair them otherwise.
    for i, part in enumerate("abab"):
        resources = {"requests": {"cpu": "1", "nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"ring-{i}",
                "labels": {"part": part},
                "annotations": {"scheduling.k8s.io/group-name": "ring"},
            },
            "spec": {
                "schedulerName": "volcano",
                "containers": [{"name": "c", "image": "busybox", "resources": resources}],
            },
        }
        job_services.apply_pod(SYSTEM, pod, "team-a")


def test_each_sub_group_is_placed_inside_one_rack(racks: Any, cast: Any) -> None:
    scheduling_services.save_config(SYSTEM, CONFIG)
    cluster_services.sync_from_backend()
    _apply(sub_group_tier=1)
    for _ in range(3):
        cycle_and_sync()
    nodes = dict(Pod.objects.filter(namespace="team-a").values_list("name", "node_name"))
    rack = {name: int(node.rsplit("-", 1)[1]) // 2 for name, node in nodes.items() if node}
    assert len(rack) == 4
    assert rack["ring-0"] == rack["ring-2"] != rack["ring-1"] == rack["ring-3"]
