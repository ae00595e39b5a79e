"""Node selection shared by the actions: predicates, sampling, gradients and scoring."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.model import TaskStatus
from scheduler.points import BoolArray, IntArray
from scheduler.result import JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, TaskInfo

__all__ = ["feasible_count", "prioritize", "record_fit_error", "resource_mask", "select_node"]


def feasible_count(n: int, minimum: int, percentage: int, minimum_percentage: int) -> int:
    """Volcano's number of feasible nodes to find before stopping the predicate scan."""
    if n <= minimum or percentage >= 100:
        return n
    p = percentage
    if p <= 0:
        p = max(50 - n // 125, minimum_percentage)
    return max(n * p // 100, minimum)


def resource_mask(ssn: SessionHandle, task: TaskInfo, which: str = "future") -> BoolArray:
    """Nodes where the task's request fits ``future`` (or ``idle``) on its requested dims."""
    table = ssn.nodes
    m = table.future if which == "future" else table.idle
    mask = np.ones(len(table), dtype=np.bool_)
    for d, v in enumerate(task.req):
        if v > 0:  # pods included: every pod requests one slot of its node's pods (Volcano's LessEqual)
            mask &= m[d] >= v
    return mask


def record_fit_error(ssn: SessionHandle, task: TaskInfo) -> dict[str, int]:
    """Remember why ``task`` fits no node (first failing task of the job keeps the origin)."""
    errors = ssn.fit_errors(task)
    job = task.job
    if job.fit_errors:
        return errors
    job.fit_errors[task.uid] = (task.task.name, errors, len(ssn.nodes))
    return errors


def fit_key(task: TaskInfo) -> tuple[tuple[int, float], ...]:
    """The task's resource-fit shape: ``(dim, request)`` of requested dims (pods included)."""
    req = task.req
    key = _FIT_KEYS.get(req)
    if key is None:
        if len(_FIT_KEYS) >= 4096:
            _FIT_KEYS.clear()  # bounded; recomputed on demand
        key = _FIT_KEYS[req] = tuple((d, v) for d, v in enumerate(req) if v > 0)
    return key


#: fit_key by request vector (a pure function of it).
_FIT_KEYS: dict[tuple[float, ...], tuple[tuple[int, float], ...]] = {}


def feasible_mask(ssn: SessionHandle, task: TaskInfo) -> BoolArray:
    """Nodes passing every predicate where the request fits future idle (do not modify)."""
    if not ssn.node_local_filters:
        mask = ssn.predicate_mask(task)
        mask &= resource_mask(ssn, task)
        return mask
    filters = ssn.filters(task)
    rkey = fit_key(task)
    passed = [f.passed for f in filters]
    # The filters' arrays are kept alive by the entry, so their ids stay unique.
    key = ("feasible", rkey, *(id(a) for a in passed))
    future = ssn.nodes.future

    def compute() -> BoolArray:
        mask = np.ones(len(ssn.nodes), dtype=np.bool_)
        for a in passed:
            mask &= a
        mask &= resource_mask(ssn, task)
        return mask

    def at(i: int) -> bool:
        return all(a[i] for a in passed) and all(future[d, i] >= v for d, v in rkey)

    return ssn.mask_cache.get(key, compute, at, keep=passed)


def feasible_inside(ssn: SessionHandle, task: TaskInfo, inside: BoolArray, job: JobInfo, members: Any) -> IntArray:
    """The nodes of a HyperNode (``inside``) where ``task`` fits; none: the job's first fit error is this task's
    at the HyperNode's nodes (``members``), as allocate's HyperNode search records it."""
    nodes: IntArray = (feasible_mask(ssn, task) & inside).nonzero()[0]
    if len(nodes) == 0 and not job.fit_errors:
        job.fit_errors[task.uid] = (task.task.name, ssn.fit_errors(task, members), len(ssn.nodes))
    return nodes


def idle_mask(ssn: SessionHandle, task: TaskInfo) -> BoolArray:
    """Nodes where the request fits idle (do not modify)."""
    rkey = fit_key(task)
    idle = ssn.nodes.idle

    def at(i: int) -> bool:
        return all(idle[d, i] >= v for d, v in rkey)

    return ssn.mask_cache.get(("idle", rkey), lambda: resource_mask(ssn, task, "idle"), at)


def select_node(ssn: SessionHandle, task: TaskInfo, sample: int | None) -> tuple[int, bool] | None:
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
        idle_ok = all(table.idle[d, nominated] >= v for d, v in enumerate(task.req) if v > 0)
        return nominated, idle_ok
    feasible = feasible_mask(ssn, task).nonzero()[0]
    m = len(feasible)
    if m == 0:
        return None
    # The feasible nodes in scan order from the rotating offset, cut to the first ``sample``.
    start = ssn.predicate_offset
    pos = int(np.searchsorted(feasible, start)) if start else 0
    if sample is not None and m > sample:
        end = pos + sample
        window = feasible[pos:end] if end <= m else np.concatenate((feasible[pos:], feasible[: end - m]))
        ssn.predicate_offset = (int(window[-1]) + 1) % n
    elif pos:
        window = np.concatenate((feasible[pos:], feasible[:pos]))
    else:
        window = feasible
    return _prioritize(ssn, task, window)


def prioritize(ssn: SessionHandle, task: TaskInfo, nodes: IntArray) -> tuple[int, bool]:
    """Among ``nodes`` (where the task fits future idle): the idle-fit gradient if any, else all
    of them; the highest node-order score, the first on ties. Returns ``(node, fits idle)``."""
    return _prioritize(ssn, task, nodes)


def _prioritize(ssn: SessionHandle, task: TaskInfo, nodes: IntArray) -> tuple[int, bool]:
    idle_ok = idle_mask(ssn, task)[nodes]
    fits_idle = bool(idle_ok.any())
    grad = nodes[idle_ok] if fits_idle else nodes
    if len(grad) == 1:
        return int(grad[0]), fits_idle
    scores = ssn.node_scores(task, grad)
    return int(grad[int(np.argmax(scores))]), fits_idle


def gang_message(ssn: SessionHandle, job: JobInfo) -> str:
    """Return Volcano's ``"<k>/<n> tasks in gang unschedulable: <fit error>"``."""
    short = job.min_available - job.ready_num
    total = len(job.tasks)
    if short <= 0:
        pending = job.counts[TaskStatus.PENDING]
        return f"{pending}/{total} tasks unschedulable: {ssn.job_fit_error(job)}"
    return f"{short}/{total} tasks in gang unschedulable: {ssn.job_fit_error(job)}"


def record_job_failure(ssn: SessionHandle, job: JobInfo, placed: int) -> None:
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
