"""Scenario table for the allocate action (with the default plugins unless stated)."""

from __future__ import annotations

import pytest

from scheduler import run_cycle
from scheduler.model import (
    JobPhase,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    QueueState,
    Taint,
    TaskStatus,
    Toleration,
)
from scheduler.testing import Scenario, make_job, make_node, make_queue, make_snapshot, make_task

ALLOC_ONLY = """
actions: "allocate"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
NO_QUOTA = """
actions: "allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: nodeorder}]
"""

TERM_GPU = NodeSelectorTerm((NodeSelectorRequirement("accel", "In", ("gpu", "tpu")),))

SCENARIOS = [
    Scenario(
        "a single pod goes to the least requested node",
        nodes=[make_node("n1", cpu="8"), make_node("n2", cpu="8")],
        jobs=[
            make_job("busy", replicas=1, cpu="4", running_on=["n1"], phase=JobPhase.RUNNING),
            make_job("a", replicas=1, cpu="1"),
        ],
        binds={"default/a-0": "n2"},
        reasons={},
    ),
    Scenario(
        "a gang is bound only when min available pods fit",
        nodes=[make_node("n1", cpu="4"), make_node("n2", cpu="4")],
        jobs=[make_job("g", replicas=3, cpu="3")],
        config=NO_QUOTA,
        binds={},
        reasons={"default/g": "gang-shortfall"},
    ),
    Scenario(
        "an elastic gang binds min available plus what else fits",
        nodes=[make_node("n1", cpu="4"), make_node("n2", cpu="4")],
        jobs=[make_job("e", replicas=4, min_available=2, cpu="3")],
        config=NO_QUOTA,
        bound=frozenset({"default/e-0", "default/e-1"}),
        reasons={"default/e": "predicate-failure"},
    ),
    Scenario(
        "a gang that exactly fits is bound whole",
        nodes=[make_node("n1", cpu="4"), make_node("n2", cpu="4")],
        jobs=[make_job("g", replicas=4, cpu="2")],
        bind_count=4,
        reasons={},
    ),
    Scenario(
        "node selector restricts the nodes",
        nodes=[make_node("n1", labels={"disk": "ssd"}), make_node("n2")],
        jobs=[make_job("s", replicas=2, cpu="1", node_selector={"disk": "ssd"})],
        binds={"default/s-0": "n1", "default/s-1": "n1"},
    ),
    Scenario(
        "a selector no node matches leaves the job with a predicate failure",
        nodes=[make_node("n1"), make_node("n2")],
        jobs=[make_job("s", replicas=1, cpu="1", node_selector={"disk": "nvme"})],
        binds={},
        reasons={"default/s": "predicate-failure"},
    ),
    Scenario(
        "required node affinity with In matches either value",
        nodes=[make_node("n1", labels={"accel": "tpu"}), make_node("n2", labels={"accel": "cpu"})],
        jobs=[make_job("aff", replicas=1, cpu="1", required_affinity=[TERM_GPU])],
        binds={"default/aff-0": "n1"},
    ),
    Scenario(
        "an untolerated NoSchedule taint keeps pods away",
        nodes=[make_node("n1", taints=[Taint("gpu", "yes", "NoSchedule")]), make_node("n2", cpu="2")],
        jobs=[make_job("t", replicas=1, cpu="1")],
        binds={"default/t-0": "n2"},
    ),
    Scenario(
        "a toleration admits the tainted node",
        nodes=[make_node("n1", taints=[Taint("gpu", "yes", "NoSchedule")])],
        jobs=[make_job("t", replicas=1, cpu="1", tolerations=[Toleration("gpu", "Equal", "yes", "NoSchedule")])],
        binds={"default/t-0": "n1"},
    ),
    Scenario(
        "an Exists toleration without key tolerates everything",
        nodes=[make_node("n1", taints=[Taint("a", "b", "NoExecute")])],
        jobs=[make_job("t", replicas=1, cpu="1", tolerations=[Toleration("", "Exists")])],
        binds={"default/t-0": "n1"},
    ),
    Scenario(
        "unschedulable nodes are skipped",
        nodes=[make_node("n1", unschedulable=True), make_node("n2", cpu="2")],
        jobs=[make_job("u", replicas=1, cpu="1")],
        binds={"default/u-0": "n2"},
    ),
    Scenario(
        "a node holding max pods takes no more",
        nodes=[make_node("n1", pods=1), make_node("n2", cpu="2", pods=5)],
        jobs=[make_job("p", replicas=2, cpu="100m", memory="1Mi")],
        config=NO_QUOTA,
        binds={"default/p-0": "n1", "default/p-1": "n2"},
    ),
    Scenario(
        "a pending podgroup waits for enqueue when enqueue is configured",
        nodes=[make_node("n1")],
        jobs=[make_job("p", replicas=1, cpu="1", phase=JobPhase.PENDING)],
        config='actions: "allocate, enqueue"\ntiers: [{plugins: [{name: gang}, {name: predicates}]}]',
        binds={},
        phases={"default/p": "Inqueue"},
    ),
    Scenario(
        "without enqueue allocate admits pending podgroups itself",
        nodes=[make_node("n1")],
        jobs=[make_job("p", replicas=1, cpu="1", phase=JobPhase.PENDING)],
        config=ALLOC_ONLY,
        binds={"default/p-0": "n1"},
        phases={"default/p": "Inqueue"},
    ),
    Scenario(
        "enqueue then allocate in the same cycle",
        nodes=[make_node("n1")],
        jobs=[make_job("p", replicas=2, cpu="1", phase=JobPhase.PENDING, min_resources="auto")],
        bind_count=2,
        phases={"default/p": "Inqueue"},
    ),
    Scenario(
        "BestEffort pods are left to backfill",
        nodes=[make_node("n1")],
        jobs=[make_job("be", replicas=1, cpu=0, memory=0)],
        config=ALLOC_ONLY,
        binds={},
    ),
    Scenario(
        "backfill places BestEffort pods",
        nodes=[make_node("n1")],
        jobs=[make_job("be", replicas=2, cpu=0, memory=0)],
        bind_count=2,
        reasons={},
    ),
    Scenario(
        "higher job priority is served first",
        nodes=[make_node("n1", cpu="2")],
        jobs=[
            make_job("low", replicas=1, cpu="2", priority=1),
            make_job("high", replicas=1, cpu="2", priority=100, creation=5),
        ],
        config=NO_QUOTA,
        binds={"default/high-0": "n1"},
        reasons={"default/low": "predicate-failure"},
    ),
    Scenario(
        "equal queues share the cluster",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        queues=[make_queue("qa"), make_queue("qb")],
        jobs=[
            make_job("a", queue="qa", replicas=4, min_available=1, cpu="1"),
            make_job("b", queue="qb", replicas=4, min_available=1, cpu="1"),
        ],
        bind_count=4,
        extra={"per_queue": {"qa": 2, "qb": 2}},
    ),
    Scenario(
        # Volcano's allocate pushes a queue back after each job's allocation, so its new share
        # decides the next pick: qa (weight 3, deserved 3 CPUs) and qb (weight 1, deserved 1)
        # take turns by share (qa 1/3, qb 1/1, qa 2/3, qa 3/3) until the node is full. Quotas
        # are off (no overused, no allocatable): serving a queue until it is empty would give
        # qa all 4, a plain rotation 2 and 2.
        "share-ordered queues are re-sorted after every allocation",
        nodes=[make_node("n1", cpu="4", memory="64Gi")],
        queues=[make_queue("qa", weight=3), make_queue("qb", weight=1)],
        jobs=[
            make_job("a", queue="qa", replicas=4, min_available=1, cpu="1"),
            make_job("b", queue="qb", replicas=4, min_available=1, cpu="1"),
        ],
        config="""
actions: "allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}]
- plugins: [{name: proportion, enabledOverused: false, enabledAllocatable: false}]
""",
        bind_count=4,
        extra={"per_queue": {"qa": 3, "qb": 1}},
    ),
    Scenario(
        "a gang with too few pods is invalid",
        nodes=[make_node("n1")],
        jobs=[make_job("inv", replicas=2, min_available=3, cpu="1")],
        binds={},
        reasons={"default/inv": "invalid"},
    ),
    Scenario(
        "min task member per role is enforced",
        nodes=[make_node("n1", cpu="3")],
        jobs=[
            make_job(
                "roles",
                tasks=[
                    make_task("roles-master-0", cpu="1", role="master"),
                    make_task("roles-worker-0", cpu="1", role="worker"),
                    make_task("roles-worker-1", cpu="1", role="worker"),
                    make_task("roles-worker-2", cpu="1", role="worker"),
                ],
                min_available=3,
                min_task_member={"master": 1, "worker": 2},
            )
        ],
        config=NO_QUOTA,
        bind_count=3,
        extra={"must": "default/roles-master-0"},
    ),
    Scenario(
        "a pod waiting for releasing resources is pipelined, not bound",
        nodes=[make_node("n1", cpu="2")],
        jobs=[
            make_job("old", tasks=[make_task("old-0", cpu="2", status=TaskStatus.RELEASING, node="n1")]),
            make_job("new", replicas=1, cpu="2"),
        ],
        config=NO_QUOTA,
        binds={},
        pipelined={"default/new-0": "n1"},
    ),
    Scenario(
        "a queue capability caps allocation",
        nodes=[make_node("n1", cpu="8")],
        queues=[make_queue("capped", capability={"cpu": "2"})],
        jobs=[make_job("c", queue="capped", replicas=4, min_available=1, cpu="1")],
        bind_count=2,
        reasons={"default/c": "capability-exceeded"},
    ),
    Scenario(
        "a closed queue admits nothing new",
        nodes=[make_node("n1")],
        queues=[make_queue("closed", state=QueueState.CLOSED)],
        jobs=[make_job("c", queue="closed", replicas=1, cpu="1", phase=JobPhase.PENDING, min_resources="auto")],
        binds={},
        reasons={"default/c": "queue-closed"},
    ),
    Scenario(
        "a job whose queue does not exist is reported and ignored",
        nodes=[make_node("n1")],
        jobs=[make_job("lost", queue="nope", replicas=1, cpu="1")],
        binds={},
        reasons={"default/lost": "queue-missing"},
    ),
    Scenario(
        "pods of other schedulers still use node resources",
        nodes=[make_node("n1", cpu="2"), make_node("n2", cpu="2")],
        tasks=[make_task("foreign", cpu="2", status=TaskStatus.RUNNING, node="n1")],
        jobs=[make_job("a", replicas=1, cpu="2")],
        binds={"default/a-0": "n2"},
    ),
    Scenario(
        "drf serves the job with the smaller share first",
        nodes=[make_node("n1", cpu="3", memory="64Gi")],
        jobs=[
            make_job("rich", replicas=3, min_available=1, cpu="1", running_on=["n1"], creation=0),
            make_job("poor", replicas=2, min_available=1, cpu="1", creation=1),
        ],
        config=NO_QUOTA,
        bind_count=2,
        extra={"must": "default/poor-0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_allocate(scenario: Scenario) -> None:
    results = scenario.check()
    binds = results[-1].binds
    if "per_queue" in scenario.extra:
        counts: dict[str, int] = {}
        for key in binds:
            q = "qa" if key.startswith("default/a-") else "qb"
            counts[q] = counts.get(q, 0) + 1
        assert counts == scenario.extra["per_queue"]
    if "must" in scenario.extra:
        assert scenario.extra["must"] in binds


def test_fit_errors_are_counted_per_reason() -> None:
    nodes = [
        make_node("n1", cpu="1"),
        make_node("n2", cpu="1"),
        make_node("n3", cpu="8", labels={"x": "y"}, taints=[Taint("k", "v")]),
        make_node("n4", cpu="8"),
    ]
    job = make_job("j", replicas=1, cpu="2", node_selector={"x": "y"})
    result = run_cycle(make_snapshot(nodes, [job]))
    reason = result.unschedulable["default/j"]
    assert reason.kind == "predicate-failure"
    assert dict(reason.fit_errors) == {
        "Insufficient cpu": 2,
        "node(s) had untolerated taint {k: v}": 1,
        "node(s) didn't match Pod's node affinity/selector": 1,
    }
    assert "1/1 tasks in gang unschedulable" in reason.message
    assert "0/4 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector" in reason.message
    assert "2 Insufficient cpu" in reason.message


def test_gang_shortfall_message_reads_like_volcano() -> None:
    nodes = [make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    job = make_job("g", replicas=3, cpu="3")
    from scheduler import parse_config

    result = run_cycle(make_snapshot(nodes, [job]), parse_config(NO_QUOTA))
    reason = result.unschedulable["default/g"]
    assert reason.message.startswith(
        "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable"
    )
    assert "Origin reason is g-2: 0/2 nodes are unavailable: 2 Insufficient cpu." in reason.message
    assert reason.numbers["placed_then_discarded"] == 2


def test_results_are_deterministic() -> None:
    nodes = [make_node(f"n{i}", cpu="4") for i in range(5)]
    jobs = [make_job(f"j{i}", replicas=3, min_available=2, cpu="1") for i in range(6)]
    snap = make_snapshot(nodes, jobs)
    first = run_cycle(snap).to_json()
    for _ in range(3):
        assert run_cycle(snap).to_json() == first


def test_timer_only_fills_timings() -> None:
    ticks = iter(range(100))
    snap = make_snapshot([make_node("n1")], [make_job("a")])
    result = run_cycle(snap, timer=lambda: float(next(ticks)))
    assert set(result.timings) == {"open", "enqueue", "allocate", "backfill", "close"}
    assert result.binds == run_cycle(snap).binds
