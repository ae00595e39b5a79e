"""Scenario tables for nodeorder, binpack and capacity (flat and hierarchical)."""

from __future__ import annotations

import pytest

from scheduler.model import JobPhase, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm, Taint
from scheduler.testing import Scenario, make_job, make_node, make_queue

BINPACK = """
actions: "allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder, arguments: {leastrequested.weight: 0, balancedresource.weight: 0}},
            {name: binpack, arguments: {binpack.weight: 10}}]
"""
MOST = """
actions: "allocate"
tiers:
- plugins: [{name: gang}, {name: predicates},
            {name: nodeorder, arguments: {leastrequested.weight: 0, mostrequested.weight: 5,
                                          balancedresource.weight: 0}}]
"""
GPU_BINPACK = """
actions: "allocate"
tiers:
- plugins: [{name: gang}, {name: predicates},
            {name: nodeorder, arguments: {leastrequested.weight: 0, balancedresource.weight: 0}},
            {name: binpack, arguments: {binpack.cpu: 0, binpack.memory: 0, binpack.resources: nvidia.com/gpu,
                                        binpack.resources.nvidia.com/gpu: 5}}]
"""
CAPACITY = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: capacity}, {name: nodeorder}]
"""
HCAPACITY = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""
PREFERRED = PreferredSchedulingTerm(10, NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("b",)),)))

BUSY = make_job("busy", replicas=1, cpu="4", running_on=["n1"], phase=JobPhase.RUNNING)

SCENARIOS = [
    Scenario(
        "binpack prefers the fuller node",
        nodes=[make_node("n1", cpu="8"), make_node("n2", cpu="8")],
        jobs=[BUSY, make_job("a", replicas=1, cpu="1")],
        config=BINPACK,
        binds={"default/a-0": "n1"},
    ),
    Scenario(
        "least requested spreads to the emptier node",
        nodes=[make_node("n1", cpu="8"), make_node("n2", cpu="8")],
        jobs=[BUSY, make_job("a", replicas=1, cpu="1")],
        binds={"default/a-0": "n2"},
    ),
    Scenario(
        "most requested packs like binpack",
        nodes=[make_node("n1", cpu="8"), make_node("n2", cpu="8")],
        jobs=[BUSY, make_job("a", replicas=1, cpu="1")],
        config=MOST,
        binds={"default/a-0": "n1"},
    ),
    Scenario(
        "binpack weighs scalar resources such as GPUs",
        nodes=[
            make_node("n1", cpu="64", **{"nvidia.com/gpu": 8}),
            make_node("n2", cpu="64", **{"nvidia.com/gpu": 8}),
        ],
        jobs=[
            make_job("g0", replicas=1, cpu="1", running_on=["n2"], phase=JobPhase.RUNNING, **{"nvidia.com/gpu": 4}),
            make_job("g1", replicas=1, cpu="1", **{"nvidia.com/gpu": 2}),
        ],
        config=GPU_BINPACK,
        binds={"default/g1-0": "n2"},
    ),
    Scenario(
        "preferred node affinity attracts the pod",
        nodes=[make_node("n1", labels={"zone": "a"}), make_node("n2", labels={"zone": "b"})],
        jobs=[make_job("p", replicas=1, cpu="1", preferred_affinity=[PREFERRED])],
        binds={"default/p-0": "n2"},
    ),
    Scenario(
        "PreferNoSchedule taints repel but do not forbid",
        nodes=[make_node("n1", taints=[Taint("soft", "x", "PreferNoSchedule")]), make_node("n2")],
        jobs=[make_job("p", replicas=1, cpu="1")],
        binds={"default/p-0": "n2"},
    ),
    Scenario(
        "capacity lets a queue borrow up to its capability beyond deserved",
        nodes=[make_node("n1", cpu="8")],
        queues=[make_queue("q", deserved={"cpu": "2"}, capability={"cpu": "6"})],
        jobs=[make_job("a", queue="q", replicas=8, min_available=1, cpu="1")],
        config=CAPACITY,
        bind_count=6,
        reasons={"default/a": "capability-exceeded"},
    ),
    Scenario(
        "hierarchical capacity caps children by their parent",
        nodes=[make_node("n1", cpu="16", memory="64Gi")],
        queues=[
            make_queue("root"),
            make_queue("eng", parent="root", capability={"cpu": "4"}),
            make_queue("ml", parent="eng"),
            make_queue("infra", parent="eng"),
        ],
        jobs=[
            make_job("m", queue="ml", replicas=3, min_available=1, cpu="1"),
            make_job("i", queue="infra", replicas=3, min_available=1, cpu="1"),
        ],
        config=HCAPACITY,
        bind_count=4,
    ),
    Scenario(
        "hierarchical capacity refuses jobs in non-leaf queues",
        nodes=[make_node("n1")],
        queues=[make_queue("root"), make_queue("eng", parent="root"), make_queue("ml", parent="eng")],
        jobs=[make_job("bad", queue="eng", replicas=1, cpu="1", phase=JobPhase.PENDING, min_resources="auto")],
        config=HCAPACITY,
        binds={},
        reasons={"default/bad": "capability-exceeded"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_placement_and_capacity(scenario: Scenario) -> None:
    scenario.check()
