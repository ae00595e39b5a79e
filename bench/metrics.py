"""Turns runs into scheduler_perf-style data items: throughput, latency, memory, quality."""

from __future__ import annotations

import hashlib
import math
import statistics
from typing import Any

from bench.cluster import NODE_CPU
from bench.driver import Run
from bench.workloads import Case
from scheduler import TaskStatus

ACTION_KEYS = ("open", "enqueue", "allocate", "backfill", "preempt", "reclaim", "close")


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); 0 for no values."""
    if not values:
        return 0.0
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def item(data: dict[str, float], unit: str, **labels: str) -> dict[str, Any]:
    """A scheduler_perf ``dataItems`` entry."""
    return {"data": {k: round(v, 6) for k, v in data.items()}, "unit": unit, "labels": labels}


def water_fill(total: float, queues: dict[str, tuple[int, float, float]]) -> dict[str, float]:
    """Proportion's deserved share on one dimension: ``queues`` maps name -> (weight, request, cap)."""
    deserved = dict.fromkeys(queues, 0.0)
    remaining = total
    active = {q for q, (_, req, _) in queues.items() if req > 0}
    while active and remaining > 1e-9:
        weights = sum(queues[q][0] for q in active)
        given = 0.0
        for q in list(active):
            w, req, cap = queues[q]
            want = min(deserved[q] + remaining * w / weights, req, cap)
            given += want - deserved[q]
            deserved[q] = want
            if want >= min(req, cap) - 1e-9:
                active.discard(q)
        remaining -= given
        if given <= 1e-9:
            break
    return deserved


def share_error(case: Case, run: Run) -> dict[str, Any]:
    """Max |queue allocated - deserved| as a fraction of cluster CPU, from the final snapshot."""
    snap = run.final
    assert snap is not None
    total = float(sum(n.allocatable.cpu for n in snap.nodes))
    job_queue = {j.key: j.queue for j in snap.jobs}
    req: dict[str, float] = dict.fromkeys((q.name for q in case.queues), 0.0)
    alloc = dict(req)
    for t in snap.tasks:
        q = job_queue.get(t.job)
        if q is None:
            continue
        req[q] += t.requests.cpu
        if t.node_name and t.status == TaskStatus.RUNNING:
            alloc[q] += t.requests.cpu
    caps = {
        q.name: (q.capability.cpu if q.capability is not None and q.capability.cpu else math.inf) for q in case.queues
    }
    deserved = water_fill(total, {q.name: (q.weight, req[q.name], caps[q.name]) for q in case.queues})
    err = {q: abs(alloc[q] - deserved[q]) / total for q in req}
    out: dict[str, Any] = {
        "max_share_error": max(err.values()) if err else 0.0,
        "queues": {q: {"allocated_cpu_frac": alloc[q] / total, "deserved_cpu_frac": deserved[q] / total} for q in req},
    }
    if "reclaim" in case.quality:
        # Sessions until queue qb's allocation is within 5% of capacity of its deserved share at
        # the start (evicted qa pods are not recreated, so qa's demand shrinks afterwards).
        jq = {j.key: j.queue for j in case.jobs}
        req0 = dict.fromkeys(req, 0.0)
        for t in case.tasks:
            req0[jq[t.job]] += t.requests.cpu
        d0 = water_fill(total, {q.name: (q.weight, req0[q.name], caps[q.name]) for q in case.queues})
        target = d0.get("qb", 0.0)
        out["qb_deserved_cpu_frac_at_start"] = target / total
        converged = None
        for i, qa in enumerate(run.queue_series):
            got = qa.get("qb", {}).get("cpu", 0)
            if abs(got - target) <= 0.05 * total:
                converged = i + 1
                break
        out["sessions_to_deserved"] = converged
        out["qb_cpu_frac_per_session"] = [round(qa.get("qb", {}).get("cpu", 0) / total, 4) for qa in run.queue_series]
    return out


def topology_quality(case: Case, run: Run) -> dict[str, Any]:
    """W10: how many gangs with a network topology sit inside one HyperNode of a tier they allow."""
    from scheduler.topology import Topology

    topo = Topology(case.hyper_nodes, sorted(case.nodes, key=lambda n: n.name))
    index = {n: i for i, n in enumerate(sorted(x.name for x in case.nodes))}
    pods: dict[str, list[int]] = {}
    for t in case.tasks:
        if t.key in run.bound:
            pods.setdefault(t.job, []).append(index[run.bound[t.key][0]])
    inside = placed = 0
    for job in case.jobs:
        if job.network_topology is None or job.key not in pods:
            continue
        placed += 1
        lowest = topo.lowest_holding(sorted(set(pods[job.key])))
        if lowest and topo.tier[lowest] <= (job.network_topology.highest_tier_allowed or topo.top_tier):
            inside += 1
    return {"topology_gangs_placed": placed, "topology_gangs_inside_allowed_tier": inside}


def quality(case: Case, run: Run) -> dict[str, Any]:
    """Placement-quality numbers (the checks that make speed honest)."""
    snap = run.final
    assert snap is not None
    total_cpu = sum(n.allocatable.cpu for n in snap.nodes)
    plain_cpu = sum(n.allocatable.cpu for n in snap.nodes if not n.taints)
    used = sum(t.requests.cpu for t in snap.tasks if t.node_name and t.status == TaskStatus.RUNNING)
    q: dict[str, Any] = {
        "partial_gangs": sum(1 for e in run.errors if "partial gang" in e),
        "capacity_violations": sum(1 for e in run.errors if "over capa" in e),
        "utilisation_cpu": used / total_cpu if total_cpu else 0.0,
        "utilisation_cpu_untainted_nodes": min(1.0, used / plain_cpu) if plain_cpu else 0.0,
    }
    if "share" in case.quality:
        q.update(share_error(case, run))
    if "binpack" in case.quality and case.measured:
        nodes = {run.bound[k][0] for k in case.measured if k in run.bound}
        req = sum(t.requests.cpu for t in snap.tasks if t.key in case.measured)
        q["nodes_used"] = len(nodes)
        q["nodes_lower_bound"] = math.ceil(req / (NODE_CPU * 1000))
    if "topology" in case.quality:
        q.update(topology_quality(case, run))
    if "preempt" in case.quality:
        per: dict[str, int] = {}
        for e in run.evicted:
            per[e["preemptor"]] = per.get(e["preemptor"], 0) + 1
        q["preemptors_with_victims"] = len(per)
        q["victims_total"] = len(run.evicted)
        q["victims_per_preemptor_mean"] = statistics.fmean(per.values()) if per else 0.0
        q["victims_per_preemptor_max"] = max(per.values(), default=0)
        q["victims_not_low_priority"] = sum(1 for e in run.evicted if not e["task"].startswith("default/low-"))
    if "latency" in case.quality:
        lat = run.latencies
        q["creation_to_bound_periods"] = {"Perc50": pct(lat, 50), "Perc99": pct(lat, 99), "Max": max(lat, default=0)}
        util = run.util_series[len(run.util_series) // 2 :]
        q["utilisation_cpu_mean_second_half"] = statistics.fmean(util) if util else 0.0
        q["pending_pods_mean"] = statistics.fmean(s.pending_before for s in run.sessions) if run.sessions else 0.0
    return q


def correctness(case: Case, run: Run) -> list[str]:
    """Errors that fail the benchmark: invariant breaks, schedulable pods left, hopeless pods bound."""
    errors = list(run.errors)
    missing = [k for k in case.must_bind if k not in run.bound]
    if missing:
        errors.append(f"{len(missing)} schedulable pods never bound (e.g. {sorted(missing)[:3]})")
    wrong = [k for k in case.must_not_bind if k in run.bound]
    if wrong:
        errors.append(f"{len(wrong)} unschedulable pods were bound (e.g. {sorted(wrong)[:3]})")
    if "preempt" in case.quality:
        bad = sum(1 for e in run.evicted if not e["task"].startswith("default/low-"))
        if bad:
            errors.append(f"{bad} victims were not low-priority pods")
    return errors


def placement_hash(run: Run) -> str:
    """A digest of every (pod, node, cycle) decision: equal seeds must give equal hashes."""
    h = hashlib.sha256()
    for k in sorted(run.bound):
        node, cycle = run.bound[k]
        h.update(f"{k}={node}@{cycle};".encode())
    for e in run.evicted:
        h.update(f"x{e['task']}@{e['cycle']};".encode())
    return h.hexdigest()[:16]


def timing(case: Case, run: Run) -> dict[str, Any]:
    """Throughput and session latency of one run."""
    ss = run.sessions
    walls = [s.wall for s in ss]
    last = max((i for i, s in enumerate(ss) if s.measured_binds), default=-1)
    window = ss[: last + 1] if last >= 0 else []
    bound = sum(s.measured_binds for s in window)
    wall = sum(s.wall for s in window)
    cpu = sum(s.cpu for s in window)
    per_session = [s.binds / s.wall for s in ss if s.binds and s.wall > 0]
    out: dict[str, Any] = {
        "pods_bound": bound,
        "wall_seconds": wall,
        "pods_per_second": bound / wall if wall else 0.0,
        "pods_per_cpu_second": bound / cpu if cpu else 0.0,
        "session_cpu_p50": pct([s.cpu for s in ss], 50),
        "session_cpu_p99": pct([s.cpu for s in ss], 99),
        "sessions": len(ss),
        "session_p50": pct(walls, 50),
        "session_p99": pct(walls, 99),
        "session_max": max(walls, default=0.0),
        "session_cpu_sum": sum(s.cpu for s in ss),
        "per_session_pods_per_second_p50": pct(per_session, 50),
        "per_session_pods_per_second_p10": pct(per_session, 10),
        "actions_p50": {k: pct([s.timings.get(k, 0.0) for s in ss], 50) for k in ACTION_KEYS},
        "actions_p99": {k: pct([s.timings.get(k, 0.0) for s in ss], 99) for k in ACTION_KEYS},
        "actions_sum": {k: sum(s.timings.get(k, 0.0) for s in ss) for k in ACTION_KEYS},
        "harness_seconds": run.harness_seconds,
    }
    if "preempt" in case.quality:
        decided = {e["preemptor"] for e in run.evicted}
        pt = sum(s.timings.get("preempt", 0.0) for s in ss)
        sw = sum(s.wall for s in ss if s.evictions)
        out["preemption_decisions"] = len(decided)
        out["preemption_decisions_per_second_action"] = len(decided) / pt if pt else 0.0
        out["preemption_decisions_per_second_session"] = len(decided) / sw if sw else 0.0
    return out
