"""Scenario table for the gangpreempt and gangreclaim actions (whole-job victim bundles)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler.config import ConfigError, parse_config
from scheduler.cycle import run_cycle
from scheduler.model import HyperNode, HyperNodeMember, JobPhase, NetworkTopology
from scheduler.snapshot import Snapshot
from scheduler.testing import Scenario, make_job, make_node, make_queue, make_snapshot

GANG_PREEMPT = """
actions: "allocate, gangpreempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""
GANG_RECLAIM = """
actions: "allocate, gangreclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: capacity}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""
#: capacity in the second tier: the first tier's plugins permit every candidate, so they decide.
GANG_RECLAIM_TIER2 = """
actions: "allocate, gangreclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: capacity}, {name: nodeorder}]
"""
RUNNING = JobPhase.RUNNING


def _victims() -> list:
    # a: 3 running pods, minAvailable 2 (one pod to spare); b: 1 running pod, minAvailable 1.
    return [
        make_job("a", replicas=3, min_available=2, running_on=["n1"] * 3, phase=RUNNING),
        make_job("b", replicas=1, min_available=1, running_on=["n1"], phase=RUNNING),
    ]


SCENARIOS = [
    Scenario(
        "a victim job's spare pod goes before any gang is broken",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        jobs=[*_victims(), make_job("p", replicas=1, cpu="1", priority=100)],
        config=GANG_PREEMPT,
        evictions=frozenset({"default/a-0"}),
        pipelined={"default/p-0": "n1"},
    ),
    Scenario(
        # Bundles: a's safe pod first, then whole bundles by reverse job order (b before a).
        "a whole gang is broken when the spare pods are not enough",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        jobs=[*_victims(), make_job("p", replicas=1, cpu="2", priority=100)],
        config=GANG_PREEMPT,
        evictions=frozenset({"default/a-0", "default/b-0"}),
        pipelined={"default/p-0": "n1"},
    ),
    Scenario(
        "allowWholeBundle false keeps every gang whole",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        jobs=[*_victims(), make_job("p", replicas=1, cpu="2", priority=100)],
        config=GANG_PREEMPT + "configurations: [{name: gangpreempt, arguments: {allowWholeBundle: false}}]\n",
        evictions=frozenset(),
        pipelined={},
    ),
    Scenario(
        "a two-pod gang takes its victims on two nodes at once",
        nodes=[make_node("n1", cpu="1", memory="64Gi"), make_node("n2", cpu="1", memory="64Gi")],
        jobs=[
            make_job("v", replicas=2, min_available=0, running_on=["n1", "n2"], phase=RUNNING),
            make_job("p", replicas=2, cpu="1", priority=100),
        ],
        config=GANG_PREEMPT,
        evictions=frozenset({"default/v-0", "default/v-1"}),
        pipelined={"default/p-0": "*", "default/p-1": "*"},
    ),
    Scenario(
        "nothing is evicted when even every victim leaves too little room",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        jobs=[*_victims(), make_job("p", replicas=1, cpu="5", priority=100)],
        config=GANG_PREEMPT,
        evictions=frozenset(),
    ),
    Scenario(
        "victims of equal or higher job priority are never taken",
        nodes=[make_node("n1", cpu="1", memory="64Gi")],
        jobs=[
            make_job("v", replicas=1, min_available=0, running_on=["n1"], phase=RUNNING, priority=100),
            make_job("p", replicas=1, cpu="1", priority=100),
        ],
        config=GANG_PREEMPT,
        evictions=frozenset(),
    ),
    Scenario(
        "gangreclaim takes from a queue above its deserved share down to its guarantee",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        queues=[
            make_queue("qa", deserved={"cpu": "1"}, guarantee={"cpu": "3"}),
            make_queue("qb", deserved={"cpu": "3"}),
        ],
        jobs=[
            make_job("a", queue="qa", replicas=4, min_available=1, running_on=["n1"] * 4, phase=RUNNING),
            make_job("r", queue="qb", replicas=1, cpu="1"),
        ],
        config=GANG_RECLAIM,
        evictions=frozenset({"default/a-0"}),
        pipelined={"default/r-0": "n1"},
    ),
    Scenario(
        # As Volcano: the first tier with a non-empty answer decides, and a bundle's pods are
        # evicted together (a's three spare pods for a one-CPU reclaimer).
        "gangreclaim evicts a whole bundle and asks capacity only if no earlier tier answers",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        queues=[
            make_queue("qa", deserved={"cpu": "1"}, guarantee={"cpu": "3"}),
            make_queue("qb", deserved={"cpu": "3"}),
        ],
        jobs=[
            make_job("a", queue="qa", replicas=4, min_available=1, running_on=["n1"] * 4, phase=RUNNING),
            make_job("r", queue="qb", replicas=1, cpu="1"),
        ],
        config=GANG_RECLAIM_TIER2,
        evictions=frozenset({"default/a-0", "default/a-1", "default/a-2"}),
        pipelined={"default/r-0": "n1"},
    ),
    Scenario(
        "gangreclaim evicts nothing when the guarantee leaves too little",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        queues=[
            make_queue("qa", deserved={"cpu": "1"}, guarantee={"cpu": "3"}),
            make_queue("qb", deserved={"cpu": "3"}),
        ],
        jobs=[
            make_job("a", queue="qa", replicas=4, min_available=1, running_on=["n1"] * 4, phase=RUNNING),
            make_job("r", queue="qb", replicas=1, cpu="2"),
        ],
        config=GANG_RECLAIM,
        evictions=frozenset(),
    ),
    Scenario(
        "gangreclaim leaves its own queue alone",
        nodes=[make_node("n1", cpu="1", memory="64Gi")],
        queues=[make_queue("qa", deserved={"cpu": "1"})],
        jobs=[
            make_job("a", queue="qa", replicas=1, min_available=0, running_on=["n1"], phase=RUNNING),
            make_job("r", queue="qa", replicas=1, cpu="1", priority=100),
        ],
        config=GANG_RECLAIM,
        evictions=frozenset(),
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_gang_eviction(scenario: Scenario) -> None:
    scenario.check()


@pytest.mark.parametrize("action", ["gangpreempt", "gangreclaim"])
def test_arguments_are_validated(action: str) -> None:
    raw = {"actions": action, "tiers": [{"plugins": [{"name": "gang"}]}]}
    with pytest.raises(ConfigError, match="allowWholeBundle"):
        parse_config({**raw, "configurations": [{"name": action, "arguments": {"allowWholeBundle": "often"}}]})
    with pytest.raises(ConfigError, match="maxDomains"):
        parse_config({**raw, "configurations": [{"name": action, "arguments": {"maxDomains": "many"}}]})
    with pytest.raises(ConfigError, match="nope"):
        parse_config({**raw, "configurations": [{"name": action, "arguments": {"nope": 1}}]})


def test_pick_domains_from_gradients_max_domains_and_dedup() -> None:
    """gangpreempt's and gangreclaim's TestPickDomainsFromGradients_MaxDomainsAndDedup: d2 once,
    cut at 2 domains; and the Fallback case's helper form: no gradients give the fallback."""
    from scheduler.actions.gang import pick_domains

    assert pick_domains([["d1", "d2"], ["d2", "d3"]], 2, "") == ["d1", "d2"]
    assert pick_domains([["d1", "d2"], ["d2", "d3"]], 0, "") == ["d1", "d2", "d3"]
    assert pick_domains([], 8, "top") == ["top"]
    assert pick_domains([], 8, "") == []


def _racks_snapshot(highest: int) -> Snapshot:
    """Two racks of two 1-CPU nodes, each full of a low-priority job's pods; a starving 2-pod gang
    of high priority with a hard topology of tier ``highest``."""
    nodes = [make_node(n, cpu="1", memory="4Gi") for n in ("r1-n1", "r1-n2", "r2-n1", "r2-n2")]
    victims = [
        make_job(
            "low-a", replicas=2, min_available=0, cpu="1", running_on=["r1-n1", "r2-n1"], phase=RUNNING, priority=1
        ),
        make_job(
            "low-b", replicas=2, min_available=0, cpu="1", running_on=["r1-n2", "r2-n2"], phase=RUNNING, priority=1
        ),
    ]
    gang = make_job("hi", replicas=2, min_available=2, cpu="1", priority=100)
    gang = replace(gang, job=replace(gang.job, network_topology=NetworkTopology("hard", highest)))
    racks = [
        HyperNode(r, 1, (HyperNodeMember("Node", exact=f"{r}-n1"), HyperNodeMember("Node", exact=f"{r}-n2")))
        for r in ("r1", "r2")
    ]
    racks.append(
        HyperNode("spine", 2, (HyperNodeMember("HyperNode", exact="r1"), HyperNodeMember("HyperNode", exact="r2")))
    )
    snap = make_snapshot(nodes, [*victims, gang])
    return replace(snap, hyper_nodes=tuple(racks))


TOPOLOGY_PREEMPT = """
actions: "allocate, gangpreempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: network-topology-aware}]
"""


@pytest.mark.parametrize(("highest", "one_rack"), [(1, True), (2, False)])
def test_a_hard_topology_gang_takes_its_victims_inside_one_domain(highest: int, one_rack: bool) -> None:
    """The victims of a gang whose topology is hard come from one HyperNode of an allowed tier, the
    widest allowed first (Volcano's eviction gradients are reversed): tier 1 allowed, both victims
    are on one rack; tier 2 allowed, the spine is the first domain, so the victims (bundle order:
    low-b's pods) may sit on both of its racks."""
    result = run_cycle(_racks_snapshot(highest), parse_config(TOPOLOGY_PREEMPT))
    evicted = {e.task for e in result.evictions}
    assert len(evicted) == 2
    nodes = {
        "default/low-a-0": "r1-n1",
        "default/low-a-1": "r2-n1",
        "default/low-b-0": "r1-n2",
        "default/low-b-1": "r2-n2",
    }
    racks = {nodes[t].split("-")[0] for t in evicted}
    assert (len(racks) == 1) is one_rack, evicted
    assert {n.split("-")[0] for n in result.pipelined.values()} == racks


def test_without_topology_the_gang_takes_victims_across_racks() -> None:
    """The same gang without a topology: the one domain is the whole cluster (the Fallback), so its
    victims may sit on both racks (the first two victims in bundle order)."""
    snap = _racks_snapshot(1)
    jobs = tuple(replace(j, network_topology=None) for j in snap.jobs)
    result = run_cycle(replace(snap, jobs=jobs), parse_config(TOPOLOGY_PREEMPT))
    assert len(result.evictions) == 2
