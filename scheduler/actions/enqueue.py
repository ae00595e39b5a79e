"""The enqueue action: admits PodGroups (Pending → Inqueue) that fit queue and cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.framework import Action
from scheduler.info import JobInfo, QueueInfo
from scheduler.model import JobPhase
from scheduler.pq import PriorityQueue

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = ["EnqueueAction"]


class EnqueueAction(Action):
    """Queue by queue (queue order), job by job (job order): admit when ``minResources`` is
    unset or the job_enqueueable vote passes; a rejected job stays Pending."""

    name = "enqueue"

    def execute(self, session: SessionHandle) -> None:
        """Run admission."""
        queues: PriorityQueue[QueueInfo] = PriorityQueue(session.queue_less)
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        for job in session.jobs.values():
            if job.queue not in jobs:
                jobs[job.queue] = PriorityQueue(session.job_less, key=session.job_key)
                queues.push(session.queues[job.queue])
            if job.is_pending():
                jobs[job.queue].push(job)
        while queues:
            queue = queues.pop()
            pending = jobs[queue.name]
            if not pending:
                continue
            job = pending.pop()
            if job.min_resources is None or session.job_enqueueable(job):
                session.job_enqueued(job)
                job.phase = JobPhase.INQUEUE
                job.reason = None
            queues.push(queue)
