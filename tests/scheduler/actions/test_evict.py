"""Scenario tables for enqueue, preempt and reclaim."""

from __future__ import annotations

import pytest

from scheduler.model import JobPhase, QueueState, TaskStatus
from scheduler.testing import Scenario, make_job, make_node, make_queue, make_task

PREEMPT = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
PREEMPT_NO_QUOTA = """
actions: "allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf, enablePreemptable: false}, {name: predicates}, {name: nodeorder}]
"""
RECLAIM = """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
CAPACITY_RECLAIM = """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}]
"""
ENQUEUE = """
actions: "enqueue"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: overcommit}, {name: proportion}]
"""

N4 = [make_node("n1", cpu="4", memory="64Gi")]

# Victims: gang offers the first ``ready - minAvailable`` candidates of the node (in pod-name
# order here; Go map order in Volcano), and they are evicted in reverse task order.


def low(n: int = 4, **kw: object) -> object:
    return make_job(
        "low", replicas=n, min_available=1, cpu="1", running_on=["n1"] * n, priority=1, phase=JobPhase.RUNNING, **kw
    )  # type: ignore[arg-type]


SCENARIOS = [
    Scenario(
        "a high priority job preempts just enough low priority pods",
        nodes=N4,
        jobs=[low(), make_job("high", replicas=1, cpu="2", priority=100)],  # type: ignore[list-item]
        config=PREEMPT_NO_QUOTA,
        evictions=frozenset({"default/low-2", "default/low-1"}),
        pipelined={"default/high-0": "n1"},
        binds={},
    ),
    Scenario(
        "equal priority does not preempt",
        nodes=N4,
        jobs=[
            make_job("a", replicas=4, min_available=1, cpu="1", running_on=["n1"] * 4, priority=5),
            make_job("b", replicas=1, cpu="2", priority=5),
        ],
        config=PREEMPT_NO_QUOTA,
        evictions=frozenset(),
    ),
    Scenario(
        "preemptionPolicy Never never evicts",
        nodes=N4,
        jobs=[low(), make_job("high", replicas=1, cpu="2", priority=100, preemption_policy="Never")],  # type: ignore[list-item]
        config=PREEMPT_NO_QUOTA,
        evictions=frozenset(),
    ),
    Scenario(
        "pods marked not preemptable are not victims",
        nodes=N4,
        jobs=[low(preemptable=False), make_job("high", replicas=1, cpu="2", priority=100)],  # type: ignore[list-item]
        config=PREEMPT_NO_QUOTA,
        evictions=frozenset(),
    ),
    Scenario(
        "gang keeps a victim job at its min available",
        nodes=N4,
        jobs=[
            make_job("low", replicas=4, min_available=3, cpu="1", running_on=["n1"] * 4, priority=1),
            make_job("high", replicas=1, cpu="2", priority=100),
        ],
        config=PREEMPT_NO_QUOTA,
        evictions=frozenset(),
    ),
    Scenario(
        "conformance protects kube-system pods",
        nodes=N4,
        jobs=[
            make_job(
                "sys", namespace="kube-system", replicas=4, min_available=1, cpu="1", running_on=["n1"] * 4, priority=1
            ),
            make_job("high", replicas=1, cpu="2", priority=100),
        ],
        config=PREEMPT_NO_QUOTA,
        evictions=frozenset(),
    ),
    Scenario(
        "preempt stays within a queue",
        nodes=N4,
        queues=[make_queue("qa"), make_queue("qb")],
        jobs=[
            make_job("low", queue="qa", replicas=4, min_available=1, cpu="1", running_on=["n1"] * 4, priority=1),
            make_job("high", queue="qb", replicas=1, cpu="2", priority=100),
        ],
        config=PREEMPT_NO_QUOTA,
        evictions=frozenset(),
    ),
    Scenario(
        "a preemptor is bound in the next cycle once victims are gone",
        nodes=N4,
        jobs=[low(), make_job("high", replicas=1, cpu="2", priority=100)],  # type: ignore[list-item]
        config=PREEMPT_NO_QUOTA,
        cycles=2,
        evictions=frozenset({"default/low-2", "default/low-1"}),
        binds={"default/high-0": "n1"},
    ),
    Scenario(
        "a starving queue reclaims from a queue above its deserved share",
        nodes=N4,
        queues=[make_queue("qa"), make_queue("qb")],
        jobs=[
            make_job(
                "a", queue="qa", replicas=4, min_available=1, cpu="1", running_on=["n1"] * 4, phase=JobPhase.RUNNING
            ),
            make_job("b", queue="qb", replicas=2, min_available=2, cpu="1"),
        ],
        config=RECLAIM,
        evictions=frozenset({"default/a-2", "default/a-1"}),
        pipelined={"default/b-0": "n1", "default/b-1": "n1"},
    ),
    Scenario(
        "a queue that is not reclaimable keeps its pods",
        nodes=N4,
        queues=[make_queue("qa", reclaimable=False), make_queue("qb")],
        jobs=[
            make_job("a", queue="qa", replicas=4, min_available=1, cpu="1", running_on=["n1"] * 4),
            make_job("b", queue="qb", replicas=2, min_available=2, cpu="1"),
        ],
        config=RECLAIM,
        evictions=frozenset(),
    ),
    Scenario(
        "capacity reclaims back a queue's deserved share",
        nodes=N4,
        queues=[make_queue("qa", deserved={"cpu": "2"}), make_queue("qb", deserved={"cpu": "2"})],
        jobs=[
            make_job("a", queue="qa", replicas=4, min_available=1, cpu="1", running_on=["n1"] * 4),
            make_job("b", queue="qb", replicas=1, min_available=1, cpu="1"),
        ],
        config=CAPACITY_RECLAIM,
        evictions=frozenset({"default/a-2"}),
        pipelined={"default/b-0": "n1"},
    ),
    Scenario(
        "capacity never reclaims below a queue's guarantee",
        nodes=N4,
        queues=[
            make_queue("qa", deserved={"cpu": "1"}, guarantee={"cpu": "4"}),
            make_queue("qb", deserved={"cpu": "3"}),
        ],
        jobs=[
            make_job("a", queue="qa", replicas=4, min_available=1, cpu="1", running_on=["n1"] * 4),
            make_job("b", queue="qb", replicas=1, min_available=1, cpu="1"),
        ],
        config=CAPACITY_RECLAIM,
        evictions=frozenset(),
    ),
    Scenario(
        "enqueue admits jobs without minResources",
        nodes=N4,
        jobs=[make_job("a", replicas=100, cpu="1", phase=JobPhase.PENDING)],
        config=ENQUEUE,
        phases={"default/a": "Inqueue"},
    ),
    Scenario(
        "enqueue rejects a job larger than the overcommitted cluster",
        nodes=N4,
        jobs=[make_job("a", replicas=5, cpu="1", phase=JobPhase.PENDING, min_resources="auto")],
        config=ENQUEUE,
        phases={},
        reasons={"default/a": "enqueue-rejected"},
    ),
    Scenario(
        "enqueue rejects beyond the queue capability",
        nodes=[make_node("n1", cpu="100", memory="1000Gi")],
        queues=[make_queue("small", capability={"cpu": "2"})],
        jobs=[make_job("a", queue="small", replicas=3, cpu="1", phase=JobPhase.PENDING, min_resources="auto")],
        config=ENQUEUE,
        reasons={"default/a": "enqueue-rejected"},
    ),
    Scenario(
        "enqueue admits by job priority while room lasts",
        nodes=N4,
        jobs=[
            make_job("low", replicas=4, cpu="1", priority=1, phase=JobPhase.PENDING, min_resources="auto"),
            make_job("high", replicas=4, cpu="1", priority=9, phase=JobPhase.PENDING, min_resources="auto", creation=3),
        ],
        config=ENQUEUE,
        phases={"default/high": "Inqueue"},
        reasons={"default/low": "enqueue-rejected", "default/high": "not-reached"},
    ),
    Scenario(
        "enqueue refuses a closed queue",
        nodes=N4,
        queues=[make_queue("q", state=QueueState.CLOSING)],
        jobs=[make_job("a", queue="q", replicas=1, cpu="1", phase=JobPhase.PENDING, min_resources="auto")],
        config=ENQUEUE,
        reasons={"default/a": "queue-closed"},
    ),
    Scenario(
        "bound pods become Running and the podgroup Running",
        nodes=N4,
        jobs=[make_job("a", replicas=2, cpu="1", phase=JobPhase.PENDING, min_resources="auto")],
        cycles=2,
        bind_count=2,
        phases={"default/a": "Running"},
    ),
    Scenario(
        "a finished gang is Completed",
        nodes=N4,
        jobs=[
            make_job(
                "done", tasks=[make_task("done-0", status=TaskStatus.SUCCEEDED, node="n1")], phase=JobPhase.RUNNING
            )
        ],
        phases={"default/done": "Completed"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_evict_and_enqueue(scenario: Scenario) -> None:
    scenario.check()


_TOPOLOGY_AWARE = """
actions: "preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: proportion}, {name: predicates}]
configurations:
- name: preempt
  arguments: {enableTopologyAwarePreemption: %s}
"""


def _reprieve_scenario(topology_aware: bool, evictions: frozenset[str]) -> Scenario:
    # One 3-CPU node full with a low-priority job's pods: a (1 CPU, task priority 1) and
    # b (2 CPU, priority 5). The preemptor needs 2 CPUs. Victim order takes a first, then b.
    victims = make_job(
        "low",
        priority=1,
        min_available=0,
        tasks=[
            make_task("low-a", cpu="1", memory="1Gi", status=TaskStatus.RUNNING, node="n1", priority=1),
            make_task("low-b", cpu="2", memory="1Gi", status=TaskStatus.RUNNING, node="n1", priority=5),
        ],
    )
    return Scenario(
        id=f"topology-aware={topology_aware}",
        nodes=[make_node("n1", cpu="3", memory="8Gi")],
        jobs=[victims, make_job("high", priority=100, cpu="2", memory="1Gi")],
        config=_TOPOLOGY_AWARE % str(topology_aware).lower(),
        evictions=evictions,
        pipelined={"default/high-0": "n1"},
    )


def test_normal_preemption_evicts_in_victim_order_until_the_preemptor_fits() -> None:
    _reprieve_scenario(False, frozenset({"default/low-a", "default/low-b"})).check()


def test_topology_aware_preemption_reprieves_victims_it_does_not_need() -> None:
    # The dry run removes a, then b; reprieving from the most important down keeps a.
    _reprieve_scenario(True, frozenset({"default/low-b"})).check()


def test_dry_run_forgets_removed_pods_only_for_a_predicates_plugin_that_simulates_removal() -> None:
    """Volcano's TestPodAntiAffinity evicts nothing because predicates has only enablePredicate (its
    SimulateRemoveTask is skipped, so the removed worker-1 still blocks the preemptor); with
    enablePreemptable on, as in a loaded configuration, removing worker-1 clears the conflict."""
    from dataclasses import replace

    from tests.scheduler.volcano_harness import load_cases, run_case

    case = next(c for c in load_cases() if c.id == "predicates:TestPodAntiAffinity:pod-anti-affinity")
    assert not run_case(case).evictions
    tiers = [[{**p, "enablePreemptable": True} if p["name"] == "predicates" else p for p in t] for t in case.tiers]
    result = run_case(replace(case, tiers=tuple(tiers)))
    assert [e.task for e in result.evictions] == ["ns1/worker-1"]
    assert dict(result.pipelined) == {"ns1/worker-3": "n1"}
