"""Journal: first-touch copies of what a kept session changes, so that ``SessionCache`` can roll
the session back to its opened state after the cycle (see :mod:`scheduler.cache`).

Its own module, below the session: the session records into it at every state change
(``Session.place`` and the rest) without reaching the cache that keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.info import JobInfo, TaskInfo
    from scheduler.nodes import NodeTable

__all__ = ["Journal"]


class Journal:
    """First-touch copies of what a session changed, to roll it back to its opened state.

    Past ``limit`` tasks the journal is *abandoned*: it stops recording and the session is
    dropped after its cycle instead of rolled back (a cycle that changes that many pods leaves a
    next snapshot too different to update from, so journaling them would only cost time)."""

    __slots__ = ("abandoned", "jobs", "limit", "nodes", "tasks")

    def __init__(self) -> None:
        self.tasks: dict[int, tuple[TaskInfo, Any, int]] = {}
        self.jobs: dict[int, tuple[JobInfo, dict[Any, int], dict[str, dict[Any, int]], list[float], int, int]] = {}
        self.nodes: dict[int, dict[str, TaskInfo]] = {}
        self.limit = 1 << 62
        self.abandoned = False

    def touch(self, task: TaskInfo, table: NodeTable, node: int) -> None:
        """Remember ``task``, its job and node ``node`` (and the task's node) before a change."""
        if self.abandoned:
            return
        tasks = self.tasks
        if id(task) not in tasks:
            if len(tasks) >= self.limit:
                self.abandoned = True
                return
            tasks[id(task)] = (task, task.status, task.node)
        job = task.job
        jobs = self.jobs
        if id(job) not in jobs:
            roles = job.role_counts
            jobs[id(job)] = (
                job,
                job.counts.copy(),
                {k: v.copy() for k, v in roles.items()} if roles else {},
                job.allocated.copy(),
                job.ready,
                job.be_pending,
            )
        nodes = self.nodes
        if node >= 0 and node not in nodes:
            nodes[node] = table.tasks[node].copy()
        node = task.node
        if node >= 0 and node not in nodes:
            nodes[node] = table.tasks[node].copy()

    def rollback(self, table: NodeTable, jobs: Iterable[JobInfo]) -> None:
        """Undo every change recorded since the session was opened (``table`` and ``jobs``: the
        session's node table and jobs)."""
        for task, status, node in self.tasks.values():
            task.status = status
            task.node = node
        for job, counts, role_counts, allocated, ready, be_pending in self.jobs.values():
            job.counts = counts
            job.role_counts = role_counts
            job.allocated = allocated
            job.ready = ready
            job.be_pending = be_pending
        for i, tasks in self.nodes.items():
            table.tasks[i] = tasks
        for job in jobs:
            job.phase = job.job.phase
            job.reason = None
            if job.fit_errors:
                job.fit_errors = {}
        self.tasks.clear()
        self.jobs.clear()
        self.nodes.clear()
        self.abandoned = False
