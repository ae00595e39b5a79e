"""Per-queue and cluster accounting shared by the fair-share plugins (overcommit, proportion, capacity).

What an admitted job still reserves (:func:`inqueue_of`), a queue's sums (:class:`QueueAttr`,
:func:`account_job`) and the reasons recorded when a job or task does not fit (:func:`quota_reject`,
:func:`closed_reject`, :func:`quota_refused`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler import vec
from scheduler.info import ALLOCATED, JobInfo, QueueInfo, TaskInfo
from scheduler.model import JobPhase, TaskStatus
from scheduler.points import Vote
from scheduler.result import JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = [
    "QueueAttr",
    "account_job",
    "allocated_task_count",
    "closed_reject",
    "gated_request",
    "inqueue_of",
    "quota_refused",
    "quota_reject",
    "resource_names",
]


def gated_request(job: JobInfo, ndims: int) -> list[float]:
    """Σ requests of the job's scheduling-gated Pending tasks."""
    out = [0.0] * ndims
    if not job.counts[TaskStatus.PENDING]:
        return out
    for t in job.tasks.values():
        if t.status == TaskStatus.PENDING and t.task.scheduling_gated:
            vec.iadd(out, t.req)
    return out


def allocated_task_count(job: JobInfo) -> int:
    """Number of tasks in an allocated status."""
    return sum(job.counts[s] for s in ALLOCATED)


def inqueue_of(job: JobInfo, ndims: int, deduct_allocated: bool) -> list[float] | None:
    """Resources an admitted job still reserves (its minResources not yet allocated)."""
    if job.min_resources is None:
        return None
    running_full = job.phase == JobPhase.RUNNING and allocated_task_count(job) >= job.min_available
    if job.phase == JobPhase.INQUEUE:
        base = vec.exceeded(job.min_resources, job.allocated) if deduct_allocated else list(job.min_resources)
    elif running_full:
        base = vec.exceeded(job.min_resources, job.allocated)
    else:
        return None
    if not job.counts[TaskStatus.PENDING]:
        return base  # no gated pods: exceeded(base, 0) is base (already ≥ 0)
    return vec.exceeded(base, gated_request(job, ndims))


def resource_names(session: SessionHandle, dims: list[int]) -> str:
    """Return dimension names joined with commas."""
    return ", ".join(session.dims[d] for d in dims)


class QueueAttr:
    """Per-queue accounting shared by proportion and capacity."""

    __slots__ = (
        "allocated",
        "capability",
        "deserved",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "real_capability",
        "request",
        "share",
        "weight",
    )

    def __init__(self, name: str, ndims: int) -> None:
        self.name = name
        self.weight = 1
        self.allocated = [0.0] * ndims
        self.request = [0.0] * ndims
        self.inqueue = [0.0] * ndims
        self.elastic = [0.0] * ndims
        self.deserved = [0.0] * ndims
        self.guarantee = [0.0] * ndims
        self.capability = [float("inf")] * ndims
        self.real_capability = [float("inf")] * ndims
        self.share = 0.0

    def copy(self) -> QueueAttr:
        """Return an independent copy."""
        out = QueueAttr.__new__(QueueAttr)
        for name in QueueAttr.__slots__:
            value = getattr(self, name)
            setattr(out, name, list(value) if isinstance(value, list) else value)
        return out


def account_job(attr: QueueAttr, job: JobInfo, ndims: int) -> None:
    """Add a job's allocated, requested, inqueue and elastic resources to ``attr``.

    Uses the job's running sum of allocated requests and walks the tasks only for Pending ones
    (resources are whole numbers, so the float sums are exact in any order)."""
    vec.iadd(attr.allocated, job.allocated)
    vec.iadd(attr.request, job.allocated)
    if job.counts[TaskStatus.PENDING]:
        for t in job.tasks.values():
            if t.status == TaskStatus.PENDING:
                vec.iadd(attr.request, t.req)
    part = inqueue_of(job, ndims, deduct_allocated=True)
    if part is not None:
        vec.iadd(attr.inqueue, part)
    minimum = job.min_resources if job.min_resources is not None else [0.0] * ndims
    vec.iadd(attr.elastic, vec.exceeded(job.allocated, minimum))


def quota_reject(
    session: SessionHandle,
    plugin: str,
    job: JobInfo,
    attr: QueueAttr,
    limit: list[float],
) -> Vote:
    """Check ``minResources + allocated + inqueue - elastic ≤ limit``; record and vote."""
    assert job.min_resources is not None
    want = vec.sub(vec.add(vec.add(job.min_resources, attr.allocated), attr.inqueue), attr.elastic)
    failing = vec.failing_on(want, limit, job.min_resources)
    if not failing:
        return Vote.PERMIT
    session.set_reason(
        job,
        JobReason(
            ReasonKind.ENQUEUE_REJECTED,
            f"queue resource quota insufficient: insufficient {resource_names(session, failing)} in queue {attr.name}",
            plugin,
            {},
            {
                "requested": session.to_dict(job.min_resources),
                "queue_allocated": session.to_dict(attr.allocated),
                "inqueue": session.to_dict(attr.inqueue),
                "elastic": session.to_dict(attr.elastic),
                "capability": session.to_dict(limit),
            },
        ),
    )
    return Vote.REJECT


def closed_reject(session: SessionHandle, plugin: str, job: JobInfo, queue: QueueInfo) -> Vote:
    """Record that ``queue`` is not open and vote reject."""
    session.set_reason(
        job,
        JobReason(
            ReasonKind.QUEUE_CLOSED,
            f"queue {queue.name} is {queue.queue.state}, not Open",
            plugin,
            {},
            {"queue": queue.name, "state": str(queue.queue.state)},
        ),
    )
    return Vote.REJECT


def quota_refused(
    session: SessionHandle, plugin: str, task: TaskInfo, attr: QueueAttr, limit: list[float], what: str
) -> None:
    """Record that ``task`` does not fit the queue's ``limit`` (deserved or capability)."""
    want = vec.add(attr.allocated, task.req)
    failing = vec.failing_on(want, limit, task.req)
    session.set_reason(
        task.job,
        JobReason(
            ReasonKind.CAPABILITY_EXCEEDED,
            f"queue {attr.name} would exceed its {what} on {resource_names(session, failing)}: "
            f"task {task.key} requests {session.to_dict(task.req)}, queue has allocated "
            f"{session.to_dict(attr.allocated)} of {session.to_dict(limit)}",
            plugin,
            {},
            {
                "queue": attr.name,
                "requested": session.to_dict(task.req),
                "queue_allocated": session.to_dict(attr.allocated),
                "limit": session.to_dict(limit),
            },
        ),
    )
