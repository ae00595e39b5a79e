"""The allocate action: gang placement of pending tasks, queue by queue, job by job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from scheduler.actions.common import (
    feasible_count,
    record_fit_error,
    record_job_failure,
    select_node,
)
from scheduler.framework import Action, ArgSpec
from scheduler.info import JobInfo, QueueInfo, TaskInfo
from scheduler.model import JobPhase, TaskStatus
from scheduler.pq import PriorityQueue
from scheduler.result import JobReason, ReasonKind
from scheduler.statement import Statement

if TYPE_CHECKING:
    from scheduler.session import Session

__all__ = ["AllocateAction", "need_continue"]


def _node_failure(job: JobInfo) -> dict[str, int] | None:
    """The fit errors of a job whose allocation just failed for want of a node only (no quota
    refusal: one fit error recorded, the predicates' reason), else None."""
    reason = job.reason
    if reason is None or reason.kind != ReasonKind.PREDICATE_FAILURE or len(job.fit_errors) != 1:
        return None
    return next(iter(job.fit_errors.values()))[1]


def _failure_key(shape: object, queue: str, job: JobInfo, n_tasks: int) -> tuple[object, ...]:
    """What makes two jobs' allocation attempts identical while no node changes (the failure memo)."""
    return (shape, queue, job.min_available, len(job.tasks), tuple(job.counts.values()), job.be_pending, n_tasks)


def need_continue(job: JobInfo, failed_roles: set[str]) -> bool:
    """Volcano's NeedContinueAllocating after a task of ``job`` failed predicates."""
    if job.min_available == len(job.tasks):
        return False
    if job.min_available < job.task_min_total:
        pending_ok = sum(1 for t in job.tasks.values() if t.status == TaskStatus.PENDING and t.role not in failed_roles)
        return job.ready_num + pending_ok >= job.min_available
    for role in failed_roles:
        minimum = job.task_min.get(role, 0)
        if minimum <= 0:
            continue
        have = sum(
            1
            for t in job.tasks.values()
            if t.role == role
            and (
                t.status
                in (
                    TaskStatus.ALLOCATED,
                    TaskStatus.BINDING,
                    TaskStatus.BOUND,
                    TaskStatus.RUNNING,
                    TaskStatus.SUCCEEDED,
                )
                or (t.status == TaskStatus.PENDING and t.best_effort)
            )
        )
        if have < minimum:
            return False
    return True


class AllocateAction(Action):
    """Places pending (non-BestEffort) tasks; a job's statement is committed once the gang is
    ready, kept (unbound) if only pipelined, and discarded otherwise."""

    name = "allocate"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "predicateErrorCacheEnable": ArgSpec("bool", True, "skip siblings of a failed task"),
        "minimumFeasibleNodes": ArgSpec("int", 100, "extension: --minimum-feasible-nodes"),
        "percentageNodesToFind": ArgSpec("int", 0, "extension: --percentage-nodes-to-find"),
        "minimumPercentageNodesToFind": ArgSpec("int", 5, "extension: --minimum-percentage-nodes-to-find"),
    }

    def _sample(self, session: Session) -> int | None:
        n = len(session.nodes)
        k = feasible_count(
            n,
            int(self.args["minimumFeasibleNodes"]),
            int(self.args["percentageNodesToFind"]),
            int(self.args["minimumPercentageNodesToFind"]),
        )
        return None if k >= n else k

    def execute(self, session: Session) -> None:
        """Run allocation."""
        self.sample = self._sample(session)
        enqueue_configured = "enqueue" in session.config.actions
        queues: PriorityQueue[QueueInfo] = PriorityQueue(session.queue_less)
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        pending_status, pipelined_status, allocated_status = (
            TaskStatus.PENDING,
            TaskStatus.PIPELINED,
            TaskStatus.ALLOCATED,
        )
        # A job whose pending tasks all have one shape and that fails only for want of a node
        # fails the same way, with the same fit errors, as an earlier job with the same key (shape,
        # queue, minAvailable, task count, status counts) when no node changed in between: its
        # failure is then recorded without trying again (see _repeat_failure).
        repeatable = session.failures_repeatable
        shapes: dict[str, tuple[Any, ...]] = {}
        for job in session.jobs.values():
            if job.is_pending():
                if enqueue_configured:
                    continue
                job.phase = JobPhase.INQUEUE
            counts = job.counts
            if not (counts[pending_status] or counts[pipelined_status] or counts[allocated_status]):
                # Nothing to place and, the job being admitted, no reason reported at close for
                # it: job_valid (a pure vote) need not be asked.
                continue
            fit = session.job_valid(job)
            if fit is not None:
                session.set_reason(
                    job, JobReason(ReasonKind.INVALID, fit.message, fit.plugin, {}, {"valid": job.valid_task_num()})
                )
                continue
            if not counts[pending_status]:
                continue
            pending = [t for t in job.pending_tasks() if not t.best_effort]
            if not pending:
                continue
            tasks[job.key] = PriorityQueue(session.task_less, pending, key=session.task_key)
            if repeatable and not job.task_min:
                first = pending[0]
                one = (first.req, first.sig, first.role)
                if all((t.req, t.sig, t.role) == one and not t.task.nominated_node for t in pending):
                    shapes[job.key] = one
            if job.queue not in jobs:
                jobs[job.queue] = PriorityQueue(session.job_less, key=session.job_key)
                queues.push(session.queues[job.queue])
            jobs[job.queue].push(job)
        failing: dict[tuple[Any, ...], int] = {}  # shape -> generation of its last recorded failure
        failures: dict[tuple[Any, ...], tuple[int, dict[str, int]]] = {}
        not_overused: dict[str, int] = {}  # queue -> generation it was last found not overused at
        while queues:
            queue = queues.pop()
            pending_jobs = jobs[queue.name]
            if not repeatable or not_overused.get(queue.name) != len(session.nodes.changes):
                if session.overused(queue):
                    self._overused(session, queue, pending_jobs)
                    continue
                not_overused[queue.name] = len(session.nodes.changes)
            if not pending_jobs:
                continue
            job = pending_jobs.pop()
            job_tasks = tasks[job.key]
            shape = shapes.get(job.key) if job.reason is None and not job.fit_errors else None
            if shape is not None:
                generation = len(session.nodes.changes)
                n_tasks = len(job_tasks)
                if failing.get(shape) == generation:
                    key = _failure_key(shape, queue.name, job, n_tasks)
                    hit = failures.get(key)
                    if hit is not None and hit[0] == generation:
                        self._repeat_failure(session, job, job_tasks.pop(), hit[1])
                        queues.push(queue)
                        continue
            stmt = self._allocate_tasks(session, queue, job, job_tasks)
            if stmt is not None and session.job_ready(job):
                stmt.commit()
                if job_tasks:
                    pending_jobs.push(job)
            elif shape is not None and stmt is None and len(session.nodes.changes) == generation:
                errors = _node_failure(job)
                if errors is not None:
                    key = _failure_key(shape, queue.name, job, n_tasks)
                    failing[shape] = generation
                    failures[key] = (generation, errors)
            queues.push(queue)

    @staticmethod
    def _repeat_failure(session: Session, job: JobInfo, first: TaskInfo, errors: dict[str, int]) -> None:
        """What :meth:`_allocate_tasks` does for a job that fails like an earlier one: its first
        task (all have one shape) finds no node, with the same fit errors; the others are skipped
        or fail alike; nothing is placed, so the statement is empty and discarded."""
        job.fit_errors[first.uid] = (first.task.name, dict(errors), len(session.nodes))
        record_job_failure(session, job, 0)

    @staticmethod
    def _overused(session: Session, queue: QueueInfo, jobs: PriorityQueue[JobInfo]) -> None:
        while jobs:
            job = jobs.pop()
            session.set_reason(
                job,
                JobReason(
                    ReasonKind.QUEUE_OVERUSED,
                    f"queue {queue.name} is overused: its allocation reached its deserved share",
                    "proportion",
                    {},
                    {"queue": queue.name},
                ),
            )

    def _allocate_tasks(
        self, session: Session, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo]
    ) -> Statement | None:
        stmt = Statement(session, "allocate")
        failed_shapes: set[Any] = set()
        failed_roles: set[str] = set()
        cache = bool(self.args["predicateErrorCacheEnable"])
        placed = 0
        failed = False
        while tasks:
            task = tasks.pop()
            if not session.allocatable(queue, task):
                failed = True
                continue
            shape = (task.role, task.req, task.sig)
            if cache and shape in failed_shapes:
                continue
            choice = select_node(session, task, self.sample)
            if choice is None:
                record_fit_error(session, task)
                failed_shapes.add(shape)
                failed_roles.add(task.role)
                failed = True
                if need_continue(job, failed_roles):
                    continue
                break
            node, fits_idle = choice
            if fits_idle:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
            placed += 1
            if session.job_ready(job):
                break
        if session.job_ready(job) or session.job_pipelined(job):
            if failed and session.job_ready(job):
                record_job_failure(session, job, 0)
            return stmt
        stmt.discard()
        if failed or placed:
            record_job_failure(session, job, placed)
        return None
