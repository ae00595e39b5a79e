"""Queue history: one sample of each queue's figures per cycle (the periodic task rolls them up per minute
and hour).

A sample holds the queue's allocated, deserved, guarantee, capability and pending demand after the cycle,
and its jobs per phase. A quiet cycle (the same tasks, jobs and queues, the same decisions) reuses the
previous cycle's figures instead of summing the pods again.
"""

from __future__ import annotations

import operator
from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

from scheduler import CycleResult, Snapshot
from scheduler.model import JobPhase
from volcanoweb.core.batchsql import Statement, insert_statement
from volcanoweb.insights.models import QueueSample, Resolution
from volcanoweb.insights.taskscan import ResourceSum, TaskScan


def queue_states(snapshot: Snapshot, result: CycleResult, scan: TaskScan | None = None) -> dict[str, dict[str, Any]]:
    """Return each queue's figures after this cycle (the fields of a per-cycle :class:`QueueSample`)."""
    scan = scan if scan is not None else TaskScan(snapshot, result)
    scan.scan(set())
    with_pods = scan.with_pods
    demand = {queue: total.copy() for queue, total in scan.demand.items()}  # the scan's sums stay as they are
    phases: dict[str, Counter[str]] = defaultdict(Counter)
    changed = result.podgroups
    for j in snapshot.jobs:
        key = j.key
        # a gang not admitted yet has no pods: its minResources is its demand
        if key not in with_pods and j.phase is JobPhase.PENDING and j.min_resources is not None:
            demand.setdefault(j.queue, ResourceSum()).add(j.min_resources)
        phases[j.queue][str(changed.get(key) or j.phase)] += 1
    out: dict[str, dict[str, Any]] = {}
    for q in snapshot.queues:
        out[q.name] = {
            "allocated": {k: v for k, v in sorted((result.queue_allocated.get(q.name) or {}).items()) if v},
            "deserved": {k: v for k, v in sorted((result.queue_deserved.get(q.name) or {}).items()) if v},
            "guarantee": q.guarantee.to_dict() if q.guarantee is not None else {},
            "capability": q.capability.to_dict() if q.capability is not None else {},
            "demand": demand[q.name].to_dict() if q.name in demand else {},
            "jobs": dict(sorted(phases[q.name].items())),
        }
    return out


_states_memo: tuple[Snapshot, tuple[Any, ...], dict[str, dict[str, Any]]] | None = None


def _same_states(snapshot: Snapshot, result: CycleResult, scan: TaskScan) -> dict[str, dict[str, Any]]:
    """:func:`queue_states`, reused from the previous call when its inputs are the same (a quiet cycle)."""
    global _states_memo
    key = (result.binds, result.podgroups, result.queue_allocated, result.queue_deserved)
    memo = _states_memo
    if memo is not None and memo[1] == key:
        last = memo[0]
        if all(
            len(x) == len(y) and all(map(operator.is_, x, y))
            for x, y in ((snapshot.tasks, last.tasks), (snapshot.jobs, last.jobs), (snapshot.queues, last.queues))
        ):
            return memo[2]
    states = queue_states(snapshot, result, scan)
    _states_memo = (snapshot, key, states)
    return states


def record_queue_samples(
    run_id: int, snapshot: Snapshot, result: CycleResult, now: datetime, scan: TaskScan | None = None
) -> list[Statement]:
    """The insert of one per-cycle sample per queue (the periodic task rolls them up per minute and hour)."""
    states = _same_states(snapshot, result, scan if scan is not None else TaskScan(snapshot, result))
    if not states:
        return []
    return [
        insert_statement(
            [
                QueueSample(resolution=Resolution.CYCLE, queue=q, bucket=now, run_id=run_id, **s)
                for q, s in states.items()
            ]
        )
    ]
