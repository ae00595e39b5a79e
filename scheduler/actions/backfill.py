"""The backfill action: places BestEffort pods (no requests) that allocate skips."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from scheduler.actions.common import record_fit_error, record_job_failure, select_node
from scheduler.framework import Action
from scheduler.info import TaskInfo
from scheduler.model import TaskStatus

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = ["BackfillAction"]


class BackfillAction(Action):
    """For admitted, valid jobs: place each pending BestEffort task on the best node and bind
    it at once when its job is ready (no statement, as Volcano's ``ssn.Allocate``)."""

    name = "backfill"

    def execute(self, session: SessionHandle) -> None:
        """Run backfill."""
        work = self._pending_best_effort(session)
        if not work:
            return

        def order(a: TaskInfo, b: TaskInfo) -> int:
            qa, qb = session.queues[a.job.queue], session.queues[b.job.queue]
            if qa is not qb:
                return -1 if session.queue_less(qa, qb) else 1
            if a.job is not b.job:
                return -1 if session.job_less(a.job, b.job) else 1
            return -1 if session.task_less(a, b) else 1

        work.sort(key=functools.cmp_to_key(order))
        for task in work:
            choice = select_node(session, task, None)
            if choice is None:
                record_fit_error(session, task)
                record_job_failure(session, task.job, 0)
                continue
            node, _ = choice
            session.place(task, node, TaskStatus.ALLOCATED)
            job = task.job
            if session.job_ready(job):
                for t in job.tasks.values():
                    if t.status == TaskStatus.ALLOCATED:
                        session.dispatch(t)

    @staticmethod
    def _pending_best_effort(session: SessionHandle) -> list[TaskInfo]:
        """The BestEffort tasks to place, of admitted valid jobs: the pending ones, and the
        pipelined ones, returned to pending first."""
        work: list[TaskInfo] = []
        for job in session.jobs.values():
            # job_valid is a pure vote: it is not asked for jobs without BestEffort tasks.
            if job.is_pending() or not job.best_effort_tasks or session.job_valid(job) is not None:
                continue
            for t in list(job.tasks.values()):
                if not t.best_effort or t.task.scheduling_gated:
                    continue
                if t.status == TaskStatus.PIPELINED:
                    session.unplace(t)
                if t.status == TaskStatus.PENDING:
                    work.append(t)
        return work
