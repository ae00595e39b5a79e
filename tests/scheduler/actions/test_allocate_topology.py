"""Allocate's HyperNode search: the ranked search over leaf HyperNodes (one dry run until the first that
takes the job) decides as the full search Volcano runs (a dry run in every HyperNode of the gradient, then
the best by HyperNode order), on Volcano's cases and on random racks; and the search's reason text."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from scheduler import parse_config, run_cycle
from scheduler.model import HyperNode, HyperNodeMember, NetworkTopology, TaskStatus
from scheduler.session import Session
from scheduler.snapshot import Snapshot
from scheduler.testing import make_job, make_node, make_queue
from tests.scheduler.volcano_harness import config_of, load_cases, snapshot_of

CASES = [c for c in load_cases() if c.file.endswith("allocate/allocate_test.go") and "hypernodes" in c.data]
CONF = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}, {name: network-topology-aware}]
"""


def _both(snapshot: Snapshot, config: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], dict[str, str]]:
    fast = dict(run_cycle(snapshot, config).binds)
    with monkeypatch.context() as m:
        m.setattr(Session, "hyper_node_rank", lambda self, job, names: None)
        full = dict(run_cycle(snapshot, config).binds)
    return fast, full


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_ranked_search_decides_as_the_full_one_on_volcanos_cases(
    case: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, full = _both(snapshot_of(case.data), config_of(case), monkeypatch)
    assert fast == full


def _random_racks(seed: int) -> Snapshot:
    rng = random.Random(seed)
    racks, per_rack = rng.randint(2, 6), rng.randint(2, 4)
    nodes, hyper, tasks = [], [], []
    for r in range(racks):
        members = []
        for i in range(per_rack):
            name = f"r{r}-n{i}"
            nodes.append(make_node(name, cpu=str(rng.choice([4, 8])), memory="64Gi"))
            members.append(HyperNodeMember("Node", exact=name))
            used = rng.randint(0, 4)
            if used:
                spec = make_job(f"busy-{name}", replicas=1, min_available=1, cpu=str(used), running_on=[name])
                tasks.extend(spec.tasks)
        hyper.append(HyperNode(f"r{r}", 1, tuple(members)))
    spines = [hyper[i : i + 2] for i in range(0, racks, 2)]
    for k, group in enumerate(spines):
        hyper.append(HyperNode(f"s{k}", 2, tuple(HyperNodeMember("HyperNode", exact=h.name) for h in group)))
    jobs = []
    for j in range(rng.randint(2, 5)):
        spec = make_job(f"g{j}", replicas=rng.randint(1, 6), min_available=None, cpu=str(rng.choice([1, 2, 3])))
        mode = rng.choice(["hard", "hard", "soft"])
        topo = NetworkTopology(mode, rng.choice([1, 2]) if mode == "hard" else None)
        jobs.append(replace(spec.job, network_topology=topo, min_member=rng.randint(1, len(spec.tasks))))
        tasks.extend(spec.tasks)
    busy = [
        make_job(f"busy-{t.node_name}", replicas=1, min_available=1).job
        for t in tasks
        if t.status == TaskStatus.RUNNING
    ]
    return Snapshot.of(nodes, [make_queue("default")], [*jobs, *busy], tasks, hyper_nodes=hyper)


@pytest.mark.parametrize("seed", range(40))
def test_the_ranked_search_decides_as_the_full_one_on_random_racks(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, full = _both(_random_racks(seed), parse_config(CONF), monkeypatch)
    assert fast == full


def test_why_pending_names_the_tiers_tried_and_the_one_not_allowed() -> None:
    """Two racks of two 4-CPU nodes under a spine; a 3-pod gang of 3 CPU each with a hard topology of
    tier 1 fits no rack: the reason names tier 1 and tier 2 as not allowed."""
    nodes = [make_node(f"r{r}-n{i}", cpu="4", memory="16Gi") for r in (1, 2) for i in (1, 2)]
    hyper = [HyperNode(f"r{r}", 1, tuple(HyperNodeMember("Node", exact=f"r{r}-n{i}") for i in (1, 2))) for r in (1, 2)]
    hyper.append(
        HyperNode("spine", 2, (HyperNodeMember("HyperNode", exact="r1"), HyperNodeMember("HyperNode", exact="r2")))
    )
    spec = make_job("gang", replicas=3, cpu="3", memory="1Gi")
    job = replace(spec.job, network_topology=NetworkTopology("hard", 1))
    snap = Snapshot.of(nodes, [make_queue("default")], [job], spec.tasks, hyper_nodes=hyper)
    result = run_cycle(snap, parse_config(CONF))
    assert not result.binds
    reason = result.unschedulable["default/gang"]
    assert reason.kind == "network-topology"
    assert reason.message.startswith("no tier-1 HyperNode has 9 cpu")
    assert "tier 2 is not allowed by highestTierAllowed (1)" in reason.message
    # Allowed tier 2, the spine takes it.
    snap2 = replace(snap, jobs=(replace(job, network_topology=NetworkTopology("hard", 2)),))
    assert len(run_cycle(snap2, parse_config(CONF)).binds) == 3
