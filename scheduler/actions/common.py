"""Node selection shared by the actions: predicates, sampling, gradients and scoring."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler import vec
from scheduler.framework import BoolArray, IntArray
from scheduler.model import TaskStatus
from scheduler.result import JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.info import JobInfo, TaskInfo
    from scheduler.session import Session

__all__ = ["feasible_count", "record_fit_error", "resource_mask", "select_node"]


def feasible_count(n: int, minimum: int, percentage: int, minimum_percentage: int) -> int:
    """Volcano's number of feasible nodes to find before stopping the predicate scan."""
    if n <= minimum or percentage >= 100:
        return n
    p = percentage
    if p <= 0:
        p = max(50 - n // 125, minimum_percentage)
    return max(n * p // 100, minimum)


def resource_mask(ssn: Session, task: TaskInfo, which: str = "future") -> BoolArray:
    """Nodes where the task's request fits ``future`` (or ``idle``) on its requested dims."""
    table = ssn.nodes
    m = table.future if which == "future" else table.idle
    mask = np.ones(len(table), dtype=np.bool_)
    for d, v in enumerate(task.req):
        if v > 0 and d != vec.PODS:
            mask &= m[d] >= v
    return mask


def record_fit_error(ssn: Session, task: TaskInfo) -> dict[str, int]:
    """Remember why ``task`` fits no node (first failing task of the job keeps the origin)."""
    errors = ssn.fit_errors(task)
    job = task.job
    if job.fit_errors:
        return errors
    job.fit_errors[task.uid] = (task.task.name, errors, len(ssn.nodes))
    return errors


def select_node(ssn: Session, task: TaskInfo, sample: int | None) -> tuple[int, bool] | None:
    """Return ``(node index, fits idle)`` for ``task`` or None when no node fits.

    Scans from the session's rotating offset and keeps the first ``sample`` feasible nodes
    (all when None), then scores only the idle-fit gradient (or the future-idle one) and takes
    the highest score, the first in scan order on ties.
    """
    table = ssn.nodes
    n = len(table)
    if n == 0:
        return None
    nominated = table.index.get(task.task.nominated_node, -1) if task.task.nominated_node else -1
    if nominated >= 0 and ssn.fits_now(task, nominated):
        idle_ok = all(table.idle[d, nominated] >= v for d, v in enumerate(task.req) if v > 0 and d != vec.PODS)
        return nominated, idle_ok
    mask = ssn.predicate_mask(task)
    mask &= resource_mask(ssn, task)
    feasible = np.flatnonzero(mask)
    if len(feasible) == 0:
        return None
    start = ssn.predicate_offset
    if start:
        pos = int(np.searchsorted(feasible, start))
        feasible = np.concatenate((feasible[pos:], feasible[:pos]))
    if sample is not None and len(feasible) > sample:
        feasible = feasible[:sample]
        ssn.predicate_offset = (int(feasible[-1]) + 1) % n
    return _prioritize(ssn, task, feasible)


def _prioritize(ssn: Session, task: TaskInfo, nodes: IntArray) -> tuple[int, bool]:
    table = ssn.nodes
    idle_ok = np.ones(len(nodes), dtype=np.bool_)
    for d, v in enumerate(task.req):
        if v > 0 and d != vec.PODS:
            idle_ok &= table.idle[d, nodes] >= v
    fits_idle = bool(idle_ok.any())
    grad = nodes[idle_ok] if fits_idle else nodes
    if len(grad) == 1:
        return int(grad[0]), fits_idle
    scores = ssn.node_scores(task, grad)
    return int(grad[int(np.argmax(scores))]), fits_idle


def gang_message(ssn: Session, job: JobInfo) -> str:
    """Return Volcano's ``"<k>/<n> tasks in gang unschedulable: <fit error>"``."""
    short = job.min_available - job.ready_num
    total = len(job.tasks)
    if short <= 0:
        pending = job.counts[TaskStatus.PENDING]
        return f"{pending}/{total} tasks unschedulable: {ssn.job_fit_error(job)}"
    return f"{short}/{total} tasks in gang unschedulable: {ssn.job_fit_error(job)}"


def record_job_failure(ssn: Session, job: JobInfo, placed: int) -> None:
    """Record the job's structured reason after its tasks failed to place."""
    errors: dict[str, int] = {}
    if job.fit_errors:
        errors = next(iter(job.fit_errors.values()))[1]
    elif job.reason is not None and job.reason.kind == ReasonKind.CAPABILITY_EXCEEDED:
        return
    kind = ReasonKind.GANG_SHORTFALL if placed else ReasonKind.PREDICATE_FAILURE
    ssn.set_reason(
        job,
        JobReason(
            kind,
            gang_message(ssn, job),
            "gang" if placed else "predicates",
            errors,
            {"placed_then_discarded": placed, "nodes": len(ssn.nodes)},
        ),
    )
