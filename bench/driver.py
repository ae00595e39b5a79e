"""Drives one case through scheduling cycles and checks correctness after every cycle.

Only ``run_cycle`` is timed. The harness work between cycles (``advance``, arrivals,
completions, invariant checks) is timed separately and never counted as scheduler time.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from bench.workloads import Case
from scheduler import CycleResult, SessionCache, Snapshot, TaskStatus, advance, run_cycle

ON_NODE = (TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.BINDING)


@dataclass
class Session:
    """What one cycle did and cost."""

    wall: float
    cpu: float
    timings: dict[str, float]
    binds: int
    measured_binds: int
    evictions: int
    pipelined: int
    pending_before: int


@dataclass
class Run:
    """The outcome of one full run of a case."""

    sessions: list[Session] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    bound: dict[str, tuple[str, int]] = field(default_factory=dict)  # pod -> (node, cycle)
    evicted: list[dict[str, Any]] = field(default_factory=list)
    latencies: list[int] = field(default_factory=list)  # sim seconds creation -> bound (per pod)
    harness_seconds: float = 0.0
    final: Snapshot | None = None
    queue_series: list[dict[str, dict[str, int]]] = field(default_factory=list)
    util_series: list[float] = field(default_factory=list)  # running CPU / cluster CPU after each cycle
    # SessionCache use: whether one was passed, its hit/update/miss counts, and the (untimed) cost of
    # priming it with the cluster before the case's pending work arrived.
    session_cache: bool = False
    cache_counts: dict[str, int] = field(default_factory=dict)
    prime_wall: float = 0.0
    prime_cpu: float = 0.0


class Checker:
    """Incremental invariants: node capacity, queue capability, no partial gangs, no double binds."""

    def __init__(self, snap: Snapshot) -> None:
        self.alloc = {n.name: n.allocatable for n in snap.nodes}
        self.used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        self.min_member = {j.key: j.min_member for j in snap.jobs}
        self.caps = {q.name: q.capability for q in snap.queues if q.capability is not None}
        self.job_queue = {j.key: j.queue for j in snap.jobs}
        self.queue_cpu: dict[str, int] = defaultdict(int)
        self.running: dict[str, int] = defaultdict(int)
        for t in snap.tasks:
            if t.node_name and t.status in ON_NODE:
                self._add(t.node_name, t, 1)

    def add_jobs(self, jobs: list[Any]) -> None:
        for j in jobs:
            self.min_member[j.key] = j.min_member
            self.job_queue[j.key] = j.queue

    def _add(self, node: str, t: Any, sign: int) -> None:
        u = self.used[node]
        r = t.requests
        u[0] += sign * r.cpu
        u[1] += sign * r.memory
        u[2] += sign * max(r.pods, 1)
        u[3] += sign * r.scalars.get("nvidia.com/gpu", 0)
        self.running[t.job] += sign
        self.queue_cpu[self.job_queue.get(t.job, "")] += sign * r.cpu

    def apply(self, before: Snapshot, result: CycleResult, cycle: int) -> list[str]:
        errors: list[str] = []
        by_key = {t.key: t for t in before.tasks}
        touched: set[str] = set()
        bound_jobs: set[str] = set()
        for e in result.evictions:
            t = by_key.get(e.task)
            if t is None or not t.node_name:
                errors.append(f"cycle {cycle}: eviction of {e.task} which is not on a node")
                continue
            self._add(t.node_name, t, -1)
        for key, node in result.binds.items():
            t = by_key.get(key)
            if t is None:
                errors.append(f"cycle {cycle}: bind of unknown pod {key}")
                continue
            if t.node_name and t.status in ON_NODE:
                errors.append(f"cycle {cycle}: {key} bound twice (already on {t.node_name})")
                continue
            self._add(node, t, 1)
            touched.add(node)
            bound_jobs.add(t.job)
        for node in touched:
            a, u = self.alloc[node], self.used[node]
            if u[0] > a.cpu or u[1] > a.memory or u[2] > a.pods or u[3] > a.scalars.get("nvidia.com/gpu", 0):
                errors.append(f"cycle {cycle}: node {node} over capacity: used {u} > {a}")
        for job in bound_jobs:
            if 0 < self.running[job] < self.min_member.get(job, 1):
                errors.append(f"cycle {cycle}: partial gang {job}: {self.running[job]} < {self.min_member[job]}")
        for q, cap in self.caps.items():
            if cap.cpu and self.queue_cpu[q] > cap.cpu:
                errors.append(f"cycle {cycle}: queue {q} over capability: {self.queue_cpu[q]} > {cap.cpu}")
        return errors

    def complete(self, tasks: list[Any]) -> None:
        for t in tasks:
            if t.node_name and t.status in ON_NODE:
                self._add(t.node_name, t, -1)


def _pending(snap: Snapshot) -> int:
    return sum(1 for t in snap.tasks if t.status == TaskStatus.PENDING and not t.node_name)


def before_work(snap: Snapshot, measured: set[str] | None) -> Snapshot:
    """The cluster before the case's work was submitted (the same objects as in ``snap``): without
    the measured pods (without every pod not on a node when the case measures all binds) and
    without the PodGroups left with no pod. An unschedulable backlog (W5) was there before."""
    if measured is None:
        kept = tuple(t for t in snap.tasks if t.node_name)
    else:
        kept = tuple(t for t in snap.tasks if t.key not in measured)
    keys = {t.job for t in kept}
    return replace(snap, jobs=tuple(j for j in snap.jobs if j.key in keys), tasks=kept)


def run_case(case: Case, snap: Snapshot, cache: bool = True) -> Run:
    """Run ``case`` from ``snap`` once; return the per-session records and any invariant errors.

    With ``cache`` (the default, as a scheduler process runs), one ``SessionCache`` is passed to
    every cycle, primed beforehand (not timed, reported as ``prime_*``) with :func:`before_work`:
    the scheduler had been running on the cluster when the case's work arrived, so the first
    timed session updates the cached state by the new pods (or, when they are most of the
    snapshot, opens afresh) instead of always opening from scratch.
    """
    run = Run(session_cache=cache)
    check = Checker(snap)
    measured = case.measured
    # job key -> sim time it finishes; pods running at the start finish after their (residual) runtime
    running_at_start = {t.job for t in snap.tasks if t.node_name}
    ends: dict[str, float] = {k: v for k, v in case.runtimes.items() if k in running_at_start}
    created = {t.key: t.creation for t in snap.tasks}
    cycles = case.sessions if case.mode == "open" else (case.sim_seconds if case.mode == "sim" else case.max_cycles)
    idle_cycles = 0
    total_cpu = float(sum(n.allocatable.cpu for n in snap.nodes)) or 1.0
    session_cache = SessionCache() if cache else None
    if session_cache is not None:
        warm = before_work(snap, case.measured)
        c0, w0 = time.process_time(), time.perf_counter()
        session_cache.prime(warm, case.config)
        run.prime_wall, run.prime_cpu = time.perf_counter() - w0, time.process_time() - c0
        session_cache.hits = session_cache.updates = session_cache.misses = 0  # count the timed cycles only
    for cycle in range(cycles):
        h0 = time.perf_counter()
        if case.mode == "sim" and cycle in case.arrivals:
            jobs, tasks = case.arrivals[cycle]
            check.add_jobs(jobs)
            created.update({t.key: t.creation for t in tasks})
            snap = replace(snap, jobs=snap.jobs + tuple(jobs), tasks=snap.tasks + tuple(tasks))
        pending = _pending(snap) if case.mode != "open" else 0
        run.harness_seconds += time.perf_counter() - h0
        c0, w0 = time.process_time(), time.perf_counter()
        result = run_cycle(snap, case.config, timer=time.perf_counter, cache=session_cache)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        h0 = time.perf_counter()
        run.errors.extend(check.apply(snap, result, cycle))
        run.util_series.append(sum(check.queue_cpu.values()) / total_cpu)
        mb = sum(1 for k in result.binds if measured is None or k in measured)
        run.sessions.append(
            Session(
                wall,
                cpu,
                dict(result.timings),
                len(result.binds),
                mb,
                len(result.evictions),
                len(result.pipelined),
                pending,
            )
        )
        for k, node in result.binds.items():
            run.bound[k] = (node, cycle)
            run.latencies.append(cycle - created.get(k, 0))
        for e in result.evictions:
            run.evicted.append({"task": e.task, "node": e.node, "preemptor": e.preemptor, "cycle": cycle})
        if case.quality and ("share" in case.quality):
            run.queue_series.append({q: dict(v) for q, v in result.queue_allocated.items()})
        if case.mode == "open":
            run.harness_seconds += time.perf_counter() - h0
            continue
        snap = advance(snap, result)
        if case.mode == "sim":
            for key in {k.rsplit("-", 1)[0] for k in result.binds}:
                if key in case.runtimes and key not in ends:
                    ends[key] = cycle + case.runtimes[key]
            done = {k for k, end in ends.items() if end <= cycle + 1}
            if done:
                gone = [t for t in snap.tasks if t.job in done]
                check.complete(gone)
                snap = replace(
                    snap,
                    tasks=tuple(t for t in snap.tasks if t.job not in done),
                    jobs=tuple(j for j in snap.jobs if j.key not in done),
                )
                for k in done:
                    del ends[k]
        run.harness_seconds += time.perf_counter() - h0
        if case.mode == "drain":
            changed = result.binds or result.evictions or result.pipelined
            idle_cycles = 0 if changed else idle_cycles + 1
            if idle_cycles >= 1 and cycle >= 1:
                break
    run.final = snap
    if session_cache is not None:
        run.cache_counts = {
            "hits": session_cache.hits,
            "updates": session_cache.updates,
            "misses": session_cache.misses,
        }
    return run
