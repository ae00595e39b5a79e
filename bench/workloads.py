"""Workloads W1-W10 (docs/performance.md, "Workloads and sizes"; plus W8b, the session-latency gate).

Every builder is deterministic for a given (size, seed). Counts given for M/L are
scaled by 1/10 at size S so the smoke run stays well under a minute and every case fits.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.cluster import (
    NODE_CPU,
    NODE_MEM_GIB,
    NODE_PODS,
    Builder,
    default_queue,
    make_nodes,
    plain_nodes,
    res,
    size_nodes,
)
from scheduler import DEFAULT_CONFIG, Job, JobPhase, Node, Queue, SchedulerConfig, Task, parse_config
from scheduler.config import DEFAULT_CONFIG_YAML
from scheduler.model import HyperNode, HyperNodeMember, NetworkTopology

# Volcano's default configuration with binpack added to the second tier.
BINPACK_CONFIG = DEFAULT_CONFIG_YAML + "  - name: binpack\n"


def _with_actions(actions: str) -> SchedulerConfig:
    return parse_config(DEFAULT_CONFIG_YAML.replace('"enqueue, allocate, backfill"', f'"{actions}"', 1))


Arrival = tuple[list[Job], list[Task]]


@dataclass
class Case:
    """One workload at one size: the initial cluster, the config and how to drive it."""

    workload: str
    size: str
    title: str
    nodes: list[Node]
    queues: list[Queue]
    jobs: list[Job]
    tasks: list[Task]
    config: SchedulerConfig = DEFAULT_CONFIG
    mode: str = "drain"  # drain: cycles until nothing changes; sim: simulated clock; open: repeat one session
    max_cycles: int = 6
    sim_seconds: int = 0
    sessions: int = 30  # open mode
    measured: set[str] | None = None  # pods whose binds count as throughput (None: all)
    must_bind: set[str] = field(default_factory=set)  # correctness: these pods must end up bound
    must_not_bind: set[str] = field(default_factory=set)  # correctness: hopeless pods
    arrivals: dict[int, Arrival] = field(default_factory=dict)
    runtimes: dict[str, float] = field(default_factory=dict)  # job key -> sim seconds once bound
    params: dict[str, Any] = field(default_factory=dict)
    quality: list[str] = field(default_factory=list)  # extra quality metrics to compute
    hyper_nodes: list[HyperNode] = field(default_factory=list)  # the network topology (W10)


def _scale(size: str) -> float:
    return 0.1 if size == "S" else 1.0


def _spread(nodes: list[Node], count: int, start: int = 0) -> list[str]:
    """Node names for ``count`` pods, round-robin from ``start``."""
    return [nodes[(start + i) % len(nodes)].name for i in range(count)]


def _keys(tasks: list[Task]) -> set[str]:
    return {t.key for t in tasks if t.status.value == "Pending"}


def _running_filler(b: Builder, nodes: list[Node], pods: int, prefix: str, per_job: int, **kw: Any) -> None:
    """``pods`` Running 1-CPU/4-GiB pods in jobs of ``per_job`` (minMember 1), round-robin over ``nodes``."""
    names = _spread(nodes, pods)
    for j in range(math.ceil(pods / per_job)):
        chunk = names[j * per_job : (j + 1) * per_job]
        b.job(f"{prefix}-{j:05d}", len(chunk), res(1, 4), min_member=1, running_on=chunk, **kw)


def w1(size: str, seed: int, backlog: bool = False, prefill: bool = False) -> Case:
    """W1: 10,000 single-pod jobs (1 CPU / 4 GiB), one queue, 1,000 pods already running."""
    nodes = make_nodes(size_nodes(size))
    plain = plain_nodes(nodes)
    s = _scale(size)
    n_jobs, n_running = round(10_000 * s), round(1_000 * s)
    b = Builder()
    _running_filler(b, plain, n_running, "running", 100)
    if prefill:
        # Fill the untainted nodes so the cluster is ~90% full once the W1 pods are placed.
        target = 0.9 * len(plain) * NODE_CPU - (n_jobs + n_running)
        per_node = max(9, math.floor(target / len(plain)))
        for i, node in enumerate(plain):
            b.job(f"fill-{i:05d}", 1, res(per_node, per_node * 4), running_on=[node.name])
    measured: list[Task] = []
    for i in range(n_jobs):
        _, pods = b.job(f"w1-{i:05d}", 1, res(1, 4), creation=1)
        measured.extend(pods)
    hopeless: list[Task] = []
    if backlog:
        # 100 gangs whose pods (24 CPU) fit no node once it holds ≥ 9 CPU, and 5,000 pods with an
        # impossible node selector; created first so they are tried before the W1 pods.
        # They carry no minResources: with minResources they would hold the overcommit admission
        # budget while Inqueue and keep the W1 jobs Pending forever (see docs/performance.md).
        for g in range(round(100 * s)):
            _, pods = b.job(f"gang-{g:03d}", 10, res(24, 8), min_resources=False)
            hopeless.extend(pods)
        for i in range(round(5_000 * s)):
            _, pods = b.job(f"nosel-{i:05d}", 1, res(1, 4), selector={"zone": "nowhere"}, min_resources=False)
            hopeless.extend(pods)
    keys = {t.key for t in measured}
    wid = "W5" if backlog else ("W5-base" if prefill else "W1")
    title = {
        "W1": "many small: 10k x 1-pod jobs, 1k running",
        "W5": "W1 + 100 hopeless gangs + 5k pods with an impossible selector, cluster 90% full",
        "W5-base": "W5 without the backlog (same 90% fill): the baseline of the W5 ratio",
    }[wid]
    return Case(
        wid,
        size,
        title,
        nodes,
        default_queue(),
        b.jobs,
        b.tasks,
        measured=keys,
        must_bind=keys,
        must_not_bind={t.key for t in hopeless},
        params={"jobs": n_jobs, "running": n_running, "backlog_pods": len(hopeless), "prefill": prefill},
    )


def w2(size: str, seed: int) -> Case:
    """W2: single-pod jobs across 4 queues (weights 1:2:3:4), demand 2x capacity, runtimes exp(60 s)."""
    rng = random.Random(seed)
    nodes = make_nodes(size_nodes(size))
    n_pods = 10 * len(nodes)  # 10,000 at M
    cpu = 2 * len(nodes) * NODE_CPU / n_pods  # 6.4 CPU: demand = 2x the cluster's CPU
    queues = [Queue(f"q{w}", w) for w in (1, 2, 3, 4)]
    b = Builder()
    runtimes = {}
    for i in range(n_pods):
        q = queues[i % 4].name
        job, _ = b.job(f"w2-{i:05d}", 1, res(cpu, 48), queue=q, tolerate_gpu=True, creation=i // 4)
        runtimes[job.key] = rng.expovariate(1 / 60)
    return Case(
        "W2",
        size,
        "fair share: 4 queues 1:2:3:4, demand 2x capacity, runtimes exp(mean 60 s)",
        nodes,
        queues,
        b.jobs,
        b.tasks,
        mode="sim",
        sim_seconds=10,
        runtimes=runtimes,
        params={"pods": n_pods, "cpu_per_pod": cpu, "sessions": 10},
        quality=["share"],
    )


def w3(size: str, seed: int) -> Case:
    """W3: 500 gangs x 20 pods, minAvailable 20."""
    nodes = make_nodes(size_nodes(size))
    n = round(500 * _scale(size))
    b = Builder()
    for j in range(n):
        b.job(f"w3-{j:03d}", 20, res(1, 4))
    keys = _keys(b.tasks)
    return Case(
        "W3",
        size,
        "medium gangs: 500 x 20 pods, minAvailable 20",
        nodes,
        default_queue(),
        b.jobs,
        b.tasks,
        measured=keys,
        must_bind=keys,
        params={"gangs": n, "pods_per_gang": 20},
    )


def w4(size: str, seed: int, big_only: bool = False) -> Case:
    """W4: 20 gangs x 500 and 1 x 10,000 (minAvailable = replicas), binpack on."""
    nodes = make_nodes(size_nodes(size))
    s = _scale(size)
    b = Builder()
    if not big_only:
        for j in range(20):
            b.job(f"w4-{j:02d}", round(500 * s), res(1, 4))
    b.job("w4-big", round(10_000 * s), res(1, 4), creation=1)
    keys = _keys(b.tasks)
    wid = "W4-10k" if big_only else "W4"
    title = "one 10,000-pod gang alone (wall to place all)" if big_only else "big gangs: 20 x 500 + 1 x 10,000, binpack"
    return Case(
        wid,
        size,
        title,
        nodes,
        default_queue(),
        b.jobs,
        b.tasks,
        config=parse_config(BINPACK_CONFIG),
        measured=keys,
        must_bind=keys,
        quality=["binpack"],
        params={"gangs": 1 if big_only else 21, "big_gang": round(10_000 * s)},
    )


def w6(size: str, seed: int) -> Case:
    """W6: untainted nodes 90% full of low-priority 1-CPU pods; 1,000 high-priority 8-CPU pods."""
    nodes = make_nodes(size_nodes(size))
    plain = plain_nodes(nodes)
    b = Builder()
    _running_filler(b, plain, 29 * len(plain), "low", 100, priority=0)
    n = round(1_000 * _scale(size))
    pre: list[Task] = []
    for i in range(n):
        _, pods = b.job(f"high-{i:04d}", 1, res(8, 32), priority=1000, creation=1)
        pre.extend(pods)
    keys = {t.key for t in pre}
    return Case(
        "W6",
        size,
        "preempt: nodes 90% full of low-priority pods, 1k high-priority 8-CPU pods",
        nodes,
        default_queue(),
        b.jobs,
        b.tasks,
        config=_with_actions("enqueue, allocate, backfill, preempt"),
        measured=keys,
        must_bind=keys,
        quality=["preempt"],
        params={"preemptors": n, "victims_running": 29 * len(plain)},
    )


def w7(size: str, seed: int) -> Case:
    """W7: queue A holds 80% of capacity; queue B (same weight) asks for 60%."""
    nodes = make_nodes(size_nodes(size))
    b = Builder()
    total_cpu = len(nodes) * NODE_CPU
    _running_filler(b, nodes, int(0.8 * total_cpu), "a", 100, queue="qa", tolerate_gpu=True)
    n_b = int(0.6 * total_cpu / 4)
    for i in range(n_b):
        b.job(f"b-{i:05d}", 1, res(4, 16), queue="qb", tolerate_gpu=True, creation=1)
    return Case(
        "W7",
        size,
        "reclaim: queue A at 80% of capacity, queue B (equal weight) asks for 60%",
        nodes,
        [Queue("qa", 1), Queue("qb", 1)],
        b.jobs,
        b.tasks,
        config=_with_actions("enqueue, allocate, backfill, reclaim"),
        mode="sim",
        sim_seconds=6,
        quality=["share", "reclaim"],
        params={"a_pods": int(0.8 * total_cpu), "b_pods": n_b},
    )


def _steady(size: str, seed: int, rate_m: float, mean_runtime: float, seconds: int, wid: str, title: str) -> Case:
    """Poisson arrivals (70% 1-pod, 25% 8-pod gangs, 5% 64-pod gangs), exp runtimes; the cluster
    starts at the steady-state population (first-fit placed, residual runtimes are exp too)."""
    rng = random.Random(seed)
    nodes = make_nodes(size_nodes(size))
    rate = rate_m * len(nodes) / 1_000  # pods/s: 200 at M
    mean_pods = 0.7 * 1 + 0.25 * 8 + 0.05 * 64
    b = Builder()
    runtimes: dict[str, float] = {}

    def shape() -> int:
        u = rng.random()
        return 1 if u < 0.7 else (8 if u < 0.95 else 64)

    # Steady-state population: rate x mean_runtime pods, first-fit on CPU over all nodes.
    free = [NODE_CPU] * len(nodes)
    cursor = 0
    placed = 0
    j = 0
    while placed < rate * mean_runtime:
        k = shape()
        names = []
        for _ in range(k):
            while free[cursor % len(nodes)] < 1:
                cursor += 1
            free[cursor % len(nodes)] -= 1
            names.append(nodes[cursor % len(nodes)].name)
            cursor += 1
        job, _ = b.job(f"init-{j:05d}", k, res(1, 4), running_on=names, tolerate_gpu=True)
        runtimes[job.key] = rng.expovariate(1 / mean_runtime)
        placed += k
        j += 1
    arrivals: dict[int, Arrival] = {}
    t = 0.0
    j = 0
    while True:
        t += rng.expovariate(rate / mean_pods)
        if t >= seconds:
            break
        a = Builder()
        job, pods = a.job(f"arr-{j:06d}", shape(), res(1, 4), tolerate_gpu=True, creation=math.ceil(t))
        runtimes[job.key] = rng.expovariate(1 / mean_runtime)
        slot = arrivals.setdefault(math.ceil(t), ([], []))
        slot[0].append(job)
        slot[1].extend(pods)
        j += 1
    return Case(
        wid,
        size,
        title,
        nodes,
        default_queue(),
        b.jobs,
        b.tasks,
        mode="sim",
        sim_seconds=seconds,
        arrivals=arrivals,
        runtimes=runtimes,
        quality=["latency"],
        params={
            "arrival_pods_per_s": rate,
            "mean_runtime_s": mean_runtime,
            "sim_seconds": seconds,
            "initial_running_pods": placed,
        },
    )


def w8(size: str, seed: int, seconds: int | None = None) -> Case:
    """W8: steady state, 200 pods/s at M (scaled with nodes), runtimes exp(120 s), 1 s period."""
    secs = seconds or (600 if size == "S" else 60)
    return _steady(size, seed, 200, 120, secs, "W8", "steady state: Poisson 200 pods/s at M, exp(120 s) runtimes")


def w8b(size: str, seed: int, seconds: int | None = None) -> Case:
    """W8b: ~1,000 pending pods per session at M (the session-latency gate), runtimes exp(20 s)."""
    return _steady(
        size,
        seed,
        1_000,
        20,
        seconds or 40,
        "W8b",
        "session-latency gate: ~1,000 pending pods per session at M, exp(20 s) runtimes",
    )


def w9(size: str, seed: int) -> Case:
    """W9: 50,000 running pods in 5,000 jobs at L (scaled by nodes), nothing pending; session open."""
    nodes = make_nodes(size_nodes(size))
    plain = plain_nodes(nodes)
    n_jobs = len(nodes)  # 5,000 at L
    b = Builder()
    names = _spread(plain, 10 * n_jobs)
    for j in range(n_jobs):
        b.job(f"w9-{j:05d}", 10, res(1, 4), running_on=names[j * 10 : (j + 1) * 10], phase=JobPhase.RUNNING)
    return Case(
        "W9",
        size,
        "session open: 10 running pods per node in 1 job per node, nothing pending",
        nodes,
        default_queue(),
        b.jobs,
        b.tasks,
        mode="open",
        sessions=30 if size in ("S", "M") else 10,
        params={"running_pods": 10 * n_jobs, "jobs": n_jobs},
    )


#: W10's rack and spine labels (what Volcano's label-based HyperNode auto-discovery reads) and sizes.
RACK_LABEL, SPINE_LABEL = "topology.volcanoweb.io/rack", "topology.volcanoweb.io/spine"
RACK_NODES, SPINE_RACKS = 16, 16


def w10(size: str, seed: int) -> Case:
    """W10: topology-aware gangs. Plain 32-CPU nodes in racks of 16 (tier-1 HyperNodes selecting their
    nodes by label) under spines of 16 racks (tier 2); 60% of the racks' worth of 16-pod gangs of
    24 CPU a pod with a hard topology of tier 1 (each needs a whole rack) and 10% of the racks' worth
    of 32-pod gangs with a hard topology of tier 2 (two racks of one spine), created first."""
    n = size_nodes(size)
    nodes = [
        Node(
            f"node-{i:05d}",
            res(NODE_CPU, NODE_MEM_GIB, NODE_PODS),
            {RACK_LABEL: f"rack-{i // RACK_NODES:04d}", SPINE_LABEL: f"spine-{i // (RACK_NODES * SPINE_RACKS):03d}"},
        )
        for i in range(n)
    ]
    racks = n // RACK_NODES
    hyper = [
        HyperNode(f"rack-{r:04d}", 1, (HyperNodeMember("Node", match_labels=((RACK_LABEL, f"rack-{r:04d}"),)),))
        for r in range((n + RACK_NODES - 1) // RACK_NODES)
    ]
    for sp in range((len(hyper) + SPINE_RACKS - 1) // SPINE_RACKS):
        members = tuple(
            HyperNodeMember("HyperNode", exact=h.name) for h in hyper[sp * SPINE_RACKS : (sp + 1) * SPINE_RACKS]
        )
        hyper.append(HyperNode(f"spine-{sp:03d}", 2, members))
    b = Builder()
    tier2 = max(1, round(0.1 * racks))
    tier1 = round(0.6 * racks)
    topology: dict[str, NetworkTopology] = {}
    for g in range(tier2):
        job, _ = b.job(f"w10-t2-{g:03d}", 2 * RACK_NODES, res(24, 64))
        topology[job.key] = NetworkTopology("hard", 2)
    for g in range(tier1):
        job, _ = b.job(f"w10-t1-{g:04d}", RACK_NODES, res(24, 64), creation=1)
        topology[job.key] = NetworkTopology("hard", 1)
    from dataclasses import replace

    jobs = [replace(j, network_topology=topology[j.key]) if j.key in topology else j for j in b.jobs]
    keys = _keys(b.tasks)
    return Case(
        "W10",
        size,
        "topology-aware gangs: racks of 16 under spines, hard tier-1 and tier-2 gangs",
        nodes,
        default_queue(),
        jobs,
        b.tasks,
        config=parse_config(DEFAULT_CONFIG_YAML + "  - name: network-topology-aware\n"),
        measured=keys,
        must_bind=keys,
        quality=["topology"],
        params={
            "racks": len(hyper) - (len(hyper) + SPINE_RACKS) // (SPINE_RACKS + 1),
            "tier1_gangs": tier1,
            "tier2_gangs": tier2,
        },
        hyper_nodes=hyper,
    )


WORKLOADS: dict[str, Callable[..., Case]] = {
    "W1": w1,
    "W2": w2,
    "W3": w3,
    "W4": w4,
    "W4-10k": lambda size, seed: w4(size, seed, big_only=True),
    "W5": lambda size, seed: w1(size, seed, backlog=True, prefill=True),
    "W5-base": lambda size, seed: w1(size, seed, prefill=True),
    "W6": w6,
    "W7": w7,
    "W8": w8,
    "W8b": w8b,
    "W9": w9,
    "W10": w10,
}

#: Workloads run by ``core`` at each size unless ``--workloads`` says otherwise (L is the slow tier).
DEFAULT_AT: dict[str, tuple[str, ...]] = {
    "S": tuple(WORKLOADS),
    "M": tuple(WORKLOADS),
    "L": ("W1", "W3", "W4", "W4-10k", "W5", "W5-base", "W9", "W10"),
    "XL": ("W1",),
}
