"""The recording's one pass over a cycle's tasks, shared by the wait intervals and the queue samples.

A busy cycle's timeline needs the PodGroups holding a queue's resources (for a wait about its quota) and its
samples need each queue's pending demand: :class:`TaskScan` makes a single pass for both, and only when one
of them asks (a quiet cycle's samples are the previous cycle's, so it usually makes none).
"""

from __future__ import annotations

import operator
from collections import defaultdict
from typing import Any

from scheduler import CycleResult, Resource, Snapshot
from scheduler.model import TaskStatus

#: The PodGroups named as holding a queue's resources, at most.
MAX_HOLDERS = 5
_PLACED = frozenset(
    (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.PIPELINED)
)


class ResourceSum:
    """A running sum of resource vectors kept as plain numbers (no new :class:`Resource` per addition)."""

    __slots__ = ("cpu", "memory", "pods", "scalars")

    def __init__(self) -> None:
        self.cpu = self.memory = self.pods = 0
        self.scalars: dict[str, int] = {}

    def add(self, r: Resource) -> None:
        self.cpu += r.cpu
        self.memory += r.memory
        self.pods += r.pods
        for k, v in r.scalars.items():
            self.scalars[k] = self.scalars.get(k, 0) + v

    def copy(self) -> ResourceSum:
        other = ResourceSum()
        other.cpu, other.memory, other.pods, other.scalars = self.cpu, self.memory, self.pods, dict(self.scalars)
        return other

    def to_dict(self) -> dict[str, int]:
        return Resource(self.cpu, self.memory, self.pods, self.scalars).to_dict()


class TaskScan:
    """One pass over a snapshot's tasks, made on first use and shared by the timeline and the queue samples.

    It sums each queue's pending demand, notes the PodGroups with pods and, for the queues asked for
    (those a wait about quota opens in), each PodGroup's placed requests: a busy cycle needs both, a
    quiet one usually neither (its samples are the previous cycle's)."""

    def __init__(self, snapshot: Snapshot, result: CycleResult) -> None:
        self.snapshot, self.binds = snapshot, result.binds
        self.held_queues: set[str] | None = None  # None: not scanned yet
        self.demand: dict[str, ResourceSum] = defaultdict(ResourceSum)
        self.with_pods: set[str] = set()
        self.held: dict[str, dict[str, ResourceSum]] = defaultdict(dict)

    def scan(self, held_queues: set[str]) -> None:
        """Make the pass (once: the queues of a later call must be among the first call's)."""
        if self.held_queues is not None:
            assert held_queues <= self.held_queues, "the scan was made for other queues"
            return
        self.held_queues = held_queues
        job_queue = {j.key: j.queue for j in self.snapshot.jobs}  # here: a quiet cycle makes no scan at all
        binds, demand, with_pods, held = self.binds, self.demand, self.with_pods, self.held
        pending, placed, tasks = TaskStatus.PENDING, _PLACED, self.snapshot.tasks
        with_pods.update(map(operator.attrgetter("job"), tasks))
        for t in [t for t in tasks if t.status is pending and not t.node_name]:
            queue = job_queue.get(t.job)
            if queue is not None and not (binds and t.key in binds):
                demand[queue].add(t.requests)
        if not held_queues:
            return
        for t in [t for t in tasks if t.status in placed and job_queue.get(t.job) in held_queues]:
            jobs = held[job_queue[t.job]]
            total = jobs.get(t.job)
            if total is None:
                total = jobs[t.job] = ResourceSum()
            total.add(t.requests)

    def holders(self, queues: set[str]) -> dict[str, list[dict[str, Any]]]:
        """Per queue, the PodGroups holding its resources (largest first) with their requests."""
        self.scan(queues)
        out: dict[str, list[dict[str, Any]]] = {}
        for queue in queues:
            jobs = self.held.get(queue)
            if not jobs:
                continue
            totals = {key: r.to_dict() for key, r in jobs.items()}
            ranked = sorted(totals.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
            out[queue] = [{"podgroup": key, "requests": req} for key, req in ranked[:MAX_HOLDERS]]
        return out
