"""Seeded random workloads whose multi-cycle results are pinned in ``golden/``.

The golden file was generated from the scheduler *before* the performance work (caches, order
keys, incremental node selection, bulk session open), so any change of a scheduling decision
shows up as a diff. Regenerate only for an intended behaviour change:
``python -m tests.scheduler.golden_workloads`` (from the repository root).
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

from scheduler import Snapshot, advance, parse_config, run_cycle
from scheduler.config import DEFAULT_CONFIG
from scheduler.config_types import SchedulerConfig
from scheduler.model import (
    JobPhase,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Taint,
    TaskStatus,
    Toleration,
)
from scheduler.policies import PriorityClass
from scheduler.testing import make_job, make_node, make_queue, make_snapshot, make_task

GOLDEN = Path(__file__).parent / "golden" / "random_workloads.json.gz"

_TIERS_PROPORTION = """
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}%s]
"""
CONFIGS: dict[str, SchedulerConfig] = {
    "default": DEFAULT_CONFIG,
    "preempt-reclaim": parse_config(
        'actions: "enqueue, allocate, backfill, reclaim, preempt"\ntiers:' + _TIERS_PROPORTION % ""
    ),
    "binpack-preempt": parse_config(
        'actions: "enqueue, allocate, preempt, backfill"\ntiers:'
        + _TIERS_PROPORTION % ", {name: binpack, arguments: {binpack.weight: 5, binpack.resources: nvidia.com/gpu}}"
    ),
    "capacity": parse_config(
        """
actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder, arguments: {mostrequested.weight: 2}}]
"""
    ),
    "no-enqueue": parse_config(
        """
actions: "allocate, backfill, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
    ),
    "allocate-sampled": parse_config(
        """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
configurations:
- name: allocate
  arguments: {minimumFeasibleNodes: 7, minimumPercentageNodesToFind: 20}
"""
    ),
}


def build(seed: int) -> Snapshot:
    """Return a random but seeded cluster: nodes with labels/taints, queues, gangs, running pods."""
    rng = random.Random(seed)
    n_nodes = rng.choice([3, 8, 20, 60, 130])
    zones = ["a", "b", "c"]
    nodes = []
    for i in range(n_nodes):
        taints = []
        if rng.random() < 0.1:
            taints.append(Taint("dedicated", "gpu", rng.choice(["NoSchedule", "PreferNoSchedule"])))
        gpu = rng.choice([0, 0, 0, 4])
        extra = {"nvidia.com/gpu": gpu} if gpu else {}
        nodes.append(
            make_node(
                f"n{i:03d}",
                cpu=str(rng.choice([4, 8, 16, 32])),
                memory=f"{rng.choice([8, 16, 64])}Gi",
                pods=rng.choice([8, 20, 110]),
                labels={"zone": rng.choice(zones), "tier": rng.choice(["x", "y"])},
                taints=taints,
                unschedulable=rng.random() < 0.03,
                **extra,
            )
        )
    queues = [
        make_queue(
            f"q{q}",
            weight=rng.randint(1, 4),
            capability={"cpu": str(rng.randint(8, 200))} if rng.random() < 0.3 else None,
            deserved={"cpu": str(rng.randint(0, 60))},
            guarantee={"cpu": str(rng.randint(0, 4))} if rng.random() < 0.2 else None,
            reclaimable=rng.random() < 0.8,
            priority=rng.choice([0, 0, 1]),
        )
        for q in range(rng.randint(1, 4))
    ]
    classes = [PriorityClass("high", 1000), PriorityClass("low", 10, global_default=rng.random() < 0.5)]
    free = {n.name: [n.allocatable.cpu, n.allocatable.memory, n.allocatable.pods] for n in nodes}
    specs = []
    for j in range(rng.randint(3, 40)):
        replicas = rng.choice([1, 1, 1, 2, 4, 8, 16])
        cpu_m = rng.choice([0, 100, 250, 500, 1000, 2000, 4000])
        mem_g = rng.choice([0, 1, 2, 4])
        queue = rng.choice(queues).name
        prio = rng.choice([None, 0, 100, 1000])
        pclass = rng.choice(["", "", "high", "low"])
        kw: dict[str, Any] = {}
        r = rng.random()
        if r < 0.1:
            kw["node_selector"] = {"zone": rng.choice([*zones, "nowhere"])}
        elif r < 0.15:
            kw["required_affinity"] = (
                NodeSelectorTerm((NodeSelectorRequirement("tier", "In", (rng.choice(["x", "y"]),)),)),
            )
        elif r < 0.25:
            kw["preferred_affinity"] = (
                PreferredSchedulingTerm(
                    rng.randint(1, 50), NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("a",)),))
                ),
            )
        if rng.random() < 0.2:
            kw["tolerations"] = (Toleration("dedicated", "Equal", "gpu", ""),)
        if rng.random() < 0.1:
            kw["nvidia_com_gpu"] = rng.choice([1, 2])
        if rng.random() < 0.05:
            kw["preemption_policy"] = "Never"
        running: list[str] = []
        if rng.random() < 0.5:
            for _ in range(rng.randint(0, replicas)):
                node = rng.choice(nodes)
                f = free[node.name]
                need_gpu = kw.get("nvidia_com_gpu", 0)
                if (
                    cpu_m <= f[0]
                    and mem_g * 1024**3 <= f[1]
                    and f[2] >= 1
                    and need_gpu <= node.allocatable.scalars.get("nvidia.com/gpu", 0)
                    and not node.taints
                    and not kw.get("node_selector")
                    and not kw.get("required_affinity")
                ):
                    f[0] -= cpu_m
                    f[1] -= mem_g * 1024**3
                    f[2] -= 1
                    running.append(node.name)
        phase = JobPhase.RUNNING if running else rng.choice([JobPhase.PENDING, JobPhase.INQUEUE])
        min_av = rng.randint(1, replicas)
        specs.append(
            make_job(
                f"j{j:02d}",
                queue=queue,
                min_available=min_av,
                replicas=replicas,
                cpu=f"{cpu_m}m",
                memory=f"{mem_g}Gi",
                namespace=rng.choice(["default", "default", "team", "kube-system"]),
                phase=phase,
                priority=prio,
                priority_class_name=pclass,
                min_resources="auto" if rng.random() < 0.6 else None,
                running_on=running,
                creation=rng.randint(0, 5),
                preemptable=rng.random() < 0.9,
                **kw,
            )
        )
    orphans = []
    if rng.random() < 0.3:
        node = rng.choice(nodes).name
        orphans.append(make_task("orphan", "default/nope", "100m", "128Mi", status=TaskStatus.RUNNING, node=node))
    tasks = [t for s in specs for t in s.tasks]
    rng.shuffle(tasks)
    snap = make_snapshot(nodes, specs, queues, orphans, classes)
    return Snapshot.of(snap.nodes, snap.queues, snap.jobs, (*tasks, *orphans), snap.priority_classes)


def outcome(seed: int, config_name: str, cycles: int = 3) -> list[Any]:
    """Return the JSON results of ``cycles`` cycles over ``build(seed)`` with ``config_name``."""
    snap = build(seed)
    out = []
    for _ in range(cycles):
        result = run_cycle(snap, CONFIGS[config_name])
        out.append(result.to_json())
        snap = advance(snap, result)
    return out


SEEDS = range(40)


def generate() -> dict[str, Any]:
    """Return every (seed, config) outcome keyed ``"<seed>/<config>"``."""
    return {f"{seed}/{name}": outcome(seed, name) for seed in SEEDS for name in CONFIGS}


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_bytes(gzip.compress(json.dumps(generate(), sort_keys=True, indent=0).encode(), mtime=0))
    print(f"wrote {GOLDEN}")


def load() -> dict[str, Any]:
    """Return the pinned outcomes."""
    data: dict[str, Any] = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    return data
