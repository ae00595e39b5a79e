"""Property-based tests: capacity, gang atomicity, queue capability and determinism."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import CycleResult, Snapshot, parse_config, run_cycle
from scheduler.config import DEFAULT_CONFIG
from scheduler.model import JobPhase, TaskStatus
from scheduler.testing import make_job, make_node, make_queue, make_snapshot

CONFIGS = [
    DEFAULT_CONFIG,
    parse_config(
        """
actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder},
            {name: binpack}]
"""
    ),
    parse_config(
        """
actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}, {name: binpack}]
"""
    ),
]

PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Snapshot, dict[str, int]]:
    n_nodes = draw(st.integers(1, 5))
    nodes = [
        make_node(
            f"n{i}",
            cpu=str(draw(st.integers(1, 8))),
            memory=f"{draw(st.integers(1, 16))}Gi",
            pods=draw(st.integers(1, 20)),
        )
        for i in range(n_nodes)
    ]
    caps: dict[str, int] = {}
    queues = []
    for q in range(draw(st.integers(1, 3))):
        cap = draw(st.one_of(st.none(), st.integers(1, 12)))
        name = f"q{q}"
        if cap is not None:
            caps[name] = cap * 1000
        queues.append(
            make_queue(
                name,
                weight=draw(st.integers(1, 4)),
                capability={"cpu": str(cap)} if cap is not None else None,
                deserved={"cpu": str(draw(st.integers(0, 6)))},
            )
        )
    free = {n.name: [n.allocatable.cpu, n.allocatable.memory, n.allocatable.pods] for n in nodes}
    jobs = []
    for j in range(draw(st.integers(1, 7))):
        replicas = draw(st.integers(1, 4))
        cpu_m = draw(st.sampled_from([0, 250, 500, 1000, 2000, 3000]))
        mem_g = draw(st.integers(0, 2))
        queue = draw(st.sampled_from(queues)).name
        # some pods may already run where they fit, respecting capability
        running = []
        for _ in range(draw(st.integers(0, replicas))):
            node = draw(st.sampled_from(nodes)).name
            f = free[node]
            if cpu_m <= f[0] and mem_g * 1024**3 <= f[1] and f[2] >= 1 and len(running) < replicas:
                f[0] -= cpu_m
                f[1] -= mem_g * 1024**3
                f[2] -= 1
                running.append(node)
        jobs.append(
            make_job(
                f"j{j}",
                queue=queue,
                replicas=replicas,
                min_available=draw(st.integers(1, replicas)),
                cpu=f"{cpu_m}m",
                memory=f"{mem_g}Gi",
                running_on=running,
                priority=draw(st.integers(0, 3)),
                phase=JobPhase.RUNNING if running else draw(st.sampled_from([JobPhase.PENDING, JobPhase.INQUEUE])),
                min_resources=draw(st.sampled_from([None, "auto"])),
                creation=j,
            )
        )
    return make_snapshot(nodes, jobs, queues), caps


def _placed(snap: Snapshot, result: CycleResult) -> dict[str, tuple[str, str]]:
    """pod key -> (node, job) for pods on nodes after the cycle (evicted ones removed)."""
    evicted = {e.task for e in result.evictions}
    out = {}
    for t in snap.tasks:
        if t.key in evicted:
            continue
        if t.node_name and t.status in (TaskStatus.RUNNING, TaskStatus.BOUND):
            out[t.key] = (t.node_name, t.job)
        elif t.key in result.binds:
            out[t.key] = (result.binds[t.key], t.job)
    return out


@PROFILE
@given(clusters(), st.sampled_from(range(len(CONFIGS))))
def test_node_allocation_never_exceeds_allocatable(data: tuple[Snapshot, dict[str, int]], ci: int) -> None:
    snap, _ = data
    result = run_cycle(snap, CONFIGS[ci])
    placed = _placed(snap, result)
    tasks = {t.key: t for t in snap.tasks}
    for node in snap.nodes:
        on = [tasks[k].requests for k, (n, _) in placed.items() if n == node.name]
        assert sum(r.cpu for r in on) <= node.allocatable.cpu
        assert sum(r.memory for r in on) <= node.allocatable.memory
        assert len(on) <= node.allocatable.pods


@PROFILE
@given(clusters(), st.sampled_from(range(len(CONFIGS))))
def test_gangs_are_bound_all_or_nothing(data: tuple[Snapshot, dict[str, int]], ci: int) -> None:
    """A gang below its minimum is bound only when the binds make it ready, by Volcano's rule
    (``JobInfo.IsReady``: ready tasks plus the still-pending BestEffort tasks, which need no resources
    and are counted as placeable, reach minAvailable; so backfill may bind a BestEffort pod of a gang
    whose other BestEffort pods did not find a pod slot this cycle)."""
    snap, _ = data
    result = run_cycle(snap, CONFIGS[ci])
    for job in snap.jobs:
        tasks = [t for t in snap.tasks if t.job == job.key]
        running = sum(1 for t in tasks if t.status == TaskStatus.RUNNING)
        bound = sum(1 for t in tasks if t.key in result.binds)
        best_effort_pending = sum(
            1 for t in tasks if t.status == TaskStatus.PENDING and t.key not in result.binds and t.requests.is_empty()
        )
        if bound and running < job.min_member:
            assert running + bound + best_effort_pending >= job.min_member, (job.key, running, bound)


@PROFILE
@given(clusters(), st.sampled_from(range(len(CONFIGS))))
def test_queue_capability_is_never_exceeded(data: tuple[Snapshot, dict[str, int]], ci: int) -> None:
    snap, caps = data
    result = run_cycle(snap, CONFIGS[ci])
    job_queue = {j.key: j.queue for j in snap.jobs}
    tasks = {t.key: t for t in snap.tasks}
    before: dict[str, int] = {}
    for t in snap.tasks:
        if t.status == TaskStatus.RUNNING:
            q = job_queue[t.job]
            before[q] = before.get(q, 0) + t.requests.cpu
    after: dict[str, int] = {}
    for key, (_, job) in _placed(snap, result).items():
        q = job_queue[job]
        after[q] = after.get(q, 0) + tasks[key].requests.cpu
    for q, cap in caps.items():
        # new binds never push a queue past its capability (pre-existing overuse is not undone)
        assert after.get(q, 0) <= max(cap, before.get(q, 0))


@PROFILE
@given(clusters(), st.sampled_from(range(len(CONFIGS))), st.randoms(use_true_random=False))
def test_results_are_deterministic_and_order_independent(
    data: tuple[Snapshot, dict[str, int]], ci: int, rnd: random.Random
) -> None:
    snap, _ = data
    first = run_cycle(snap, CONFIGS[ci]).to_json()
    assert run_cycle(snap, CONFIGS[ci]).to_json() == first
    shuffled = Snapshot.of(
        nodes=rnd.sample(snap.nodes, len(snap.nodes)),
        queues=rnd.sample(snap.queues, len(snap.queues)),
        jobs=rnd.sample(snap.jobs, len(snap.jobs)),
        tasks=rnd.sample(snap.tasks, len(snap.tasks)),
    )
    assert run_cycle(shuffled, CONFIGS[ci]).to_json() == first
