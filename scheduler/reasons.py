"""Result and reason building: what a closed session reports (``CycleResult``: binds, evictions,
pipelined pods, PodGroup phases, queue totals, and for every job left pending the reason), and
the fit-error histograms and texts the actions record on jobs that found no node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from scheduler import vec
from scheduler.framework import QueueShares
from scheduler.handle import SessionHandle
from scheduler.model import JobPhase, TaskStatus
from scheduler.node_cache import CACHE_ENTRIES
from scheduler.points import BoolArray, Filter, IntArray
from scheduler.result import CycleResult, JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.info import JobInfo, TaskInfo

__all__ = ["build_result", "fit_errors", "format_fit_errors", "job_fit_error"]


class SessionInternals(SessionHandle, Protocol):
    """The session as its reason builder reads it: the handle, and the session's own caches and
    queue sums that only this module fills and reads (see ``Session._open_plugins``). A protocol
    rather than :class:`scheduler.session.Session`, which calls this module: the session's module
    stays above it."""

    _fit_cache: dict[Any, tuple[int, dict[str, int], list[Filter]]]
    _groups: dict[int, tuple[Filter, BoolArray, list[tuple[str, IntArray]]]]
    _texts: dict[tuple[Any, ...], str]
    _open_totals: dict[str, list[float]] | None

    def _add_to_queues(self, totals: dict[str, list[float]], queue: str, v: Sequence[float], sign: float) -> None: ...


def fit_errors(ssn: SessionInternals, task: TaskInfo, nodes: IntArray | None = None) -> dict[str, int]:
    """Return ``{reason: node count}`` for why ``task`` fits on none of ``nodes`` (all).

    Over all nodes the answer is remembered per task shape until a node changes (filters
    being node-local, nothing else can change it)."""
    if nodes is not None or not ssn.node_local_filters:
        return _fit_errors(ssn, task, nodes)
    filters = ssn.filters(task)
    key = (tuple((d, v) for d, v in enumerate(task.req) if v > 0), *(id(f) for f in filters))
    end = len(ssn.nodes.changes)
    hit = ssn._fit_cache.get(key)
    if hit is not None and hit[0] == end:
        return dict(hit[1])
    counts = _fit_errors(ssn, task, None)
    if len(ssn._fit_cache) >= CACHE_ENTRIES:
        ssn._fit_cache.clear()
    ssn._fit_cache[key] = (end, dict(counts), filters)
    return counts


def _fit_errors(ssn: SessionInternals, task: TaskInfo, nodes: IntArray | None) -> dict[str, int]:
    table = ssn.nodes
    idx = np.arange(len(table)) if nodes is None else nodes
    remaining = np.ones(len(idx), dtype=np.bool_)
    counts: dict[str, int] = {}
    req = task.req
    for d, v in enumerate(req):
        if v > 0 and d != vec.PODS:  # pod slots are reported last (predicates names them first)
            short = remaining & (table.future[d, idx] < v)
            n = int(short.sum())
            if n:
                counts[f"Insufficient {ssn.dims[d]}"] = n
                remaining &= ~short
    for f in ssn.filters(task):
        failing = remaining & ~f.passed[idx]
        if not failing.any():
            continue
        if f.reasons is None:
            counts[f.reason] = counts.get(f.reason, 0) + int(failing.sum())
        elif nodes is None:
            # Same counts, inserted in order of each reason's first failing node.
            found = []
            for reason, ix in _reason_groups(ssn, f):
                sub = failing[ix]
                c = int(np.count_nonzero(sub))
                if c:
                    found.append((int(ix[int(np.argmax(sub))]), reason, c))
            for _, reason, c in sorted(found):
                counts[reason] = counts.get(reason, 0) + c
        else:
            for i in np.flatnonzero(failing):
                r = f.reason_at(int(idx[i]))
                counts[r] = counts.get(r, 0) + 1
        remaining &= ~failing
    if req[vec.PODS] > 0:
        n = int((remaining & (table.future[vec.PODS, idx] < req[vec.PODS])).sum())
        if n:
            counts["Insufficient pods"] = n
    return counts


def _reason_groups(ssn: SessionInternals, f: Filter) -> list[tuple[str, IntArray]]:
    """The failing nodes of a per-node-reason filter grouped by reason (cached per filter)."""
    entry = ssn._groups.get(id(f))
    if entry is None or entry[0] is not f or not np.array_equal(entry[1], f.passed):
        assert f.reasons is not None
        groups: dict[str, list[int]] = {}
        for i in np.flatnonzero(~f.passed).tolist():
            groups.setdefault(f.reasons[i], []).append(i)
        entry = (f, f.passed.copy(), [(r, np.asarray(ix, dtype=np.intp)) for r, ix in groups.items()])
        ssn._groups[id(f)] = entry
    return entry[2]


def build_result(ssn: SessionInternals, timings: dict[str, float]) -> CycleResult:
    """The closed session's result: PodGroup phases and reasons, binds, evictions, queue totals."""
    podgroups: dict[str, str] = {}
    reasons: dict[str, JobReason] = dict(ssn.dropped)
    # Kept by a SessionCache: a job this cycle did not touch (no task changed, phase, reason
    # and fit errors as opened) closes as in the last cycle that did not touch it either, so
    # its phase and reason are remembered on the JobInfo (reused only while it is unchanged).
    journal = ssn.journal
    touched = journal.jobs if journal is not None and not journal.abandoned else None
    unschedulable = ssn.unschedulable_jobs
    for key, job in ssn.jobs.items():
        if (
            touched is not None
            and job.reason is None
            and not job.fit_errors
            and job.phase is job.job.phase
            and id(job) not in touched
        ):
            flag = key in unschedulable
            memo = job.closed
            if memo is None or memo[0] is not flag:
                memo = job.closed = (flag, _phase(ssn, job), _job_reason(ssn, job))
            phase, reason = memo[1], memo[2]
        else:
            phase = _phase(ssn, job)
            reason = _job_reason(ssn, job)
        if phase != job.job.phase:
            podgroups[key] = str(phase)
        if reason is not None:
            reasons[key] = reason
    pipelined = {
        t.key: ssn.nodes.names[t.node]
        for job in ssn.jobs.values()
        if job.counts[TaskStatus.PIPELINED]
        for t in job.tasks.values()
        if t.status == TaskStatus.PIPELINED
    }
    return CycleResult(
        binds={t.key: ssn.nodes.names[t.node] for t in ssn.binds},
        bind_uids={t.uid: ssn.nodes.names[t.node] for t in ssn.binds},
        bind_annotations={t.key: ssn.bind_annotations[t.uid] for t in ssn.binds if t.uid in ssn.bind_annotations},
        evictions=tuple(ssn.evictions),
        pipelined=pipelined,
        podgroups=podgroups,
        unschedulable=reasons,
        queue_allocated=_queue_allocated(ssn),
        queue_deserved=_queue_deserved(ssn),
        timings=timings,
    )


def _queue_deserved(ssn: SessionInternals) -> dict[str, dict[str, int]]:
    for plugins in ssn.tiers:
        for p in plugins:
            if isinstance(p.plugin, QueueShares):
                return {name: ssn.to_dict(v) for name, v in sorted(p.queue_deserved().items())}
    return {}


def _phase(ssn: SessionInternals, job: JobInfo) -> JobPhase:
    c = job.counts
    if c[TaskStatus.RUNNING] > 0 and job.key in ssn.unschedulable_jobs:
        return JobPhase.UNKNOWN
    scheduled = c[TaskStatus.RUNNING] + c[TaskStatus.BOUND] + c[TaskStatus.FAILED] + c[TaskStatus.SUCCEEDED]
    if c[TaskStatus.RELEASING]:
        scheduled += sum(1 for t in job.tasks.values() if t.status == TaskStatus.RELEASING and t.node >= 0)
    completed = c[TaskStatus.SUCCEEDED] + c[TaskStatus.FAILED]
    if scheduled >= job.min_available and (scheduled > 0 or job.phase != JobPhase.PENDING):
        return JobPhase.COMPLETED if scheduled == completed and scheduled else JobPhase.RUNNING
    if job.phase != JobPhase.INQUEUE:
        return JobPhase.PENDING
    return JobPhase.INQUEUE


def _queue_allocated(ssn: SessionInternals) -> dict[str, dict[str, int]]:
    journal = ssn.journal
    if journal is None or journal.abandoned or not ssn.whole_requests:
        totals = {name: [0.0] * ssn.ndims for name in ssn.queues}
        for job in ssn.jobs.values():
            ssn._add_to_queues(totals, job.queue, job.allocated, 1.0)
        return {name: ssn.to_dict(v) for name, v in totals.items()}
    # Kept by a SessionCache: the opened state's sums are kept with it, and only the jobs
    # this cycle touched (journaled with their opened allocation) add their difference.
    # Whole numbers below 2**53, so the same floats as summing every job afresh.
    base = ssn._open_totals
    if base is None:
        base = {name: [0.0] * ssn.ndims for name in ssn.queues}
        for job in ssn.jobs.values():
            saved = journal.jobs.get(id(job))
            ssn._add_to_queues(base, job.queue, saved[3] if saved is not None else job.allocated, 1.0)
        ssn._open_totals = base
    totals = {name: list(v) for name, v in base.items()}
    jobs = ssn.jobs
    for job, _counts, _roles, allocated, _ready, _be in journal.jobs.values():
        if jobs.get(job.key) is job:
            ssn._add_to_queues(totals, job.queue, allocated, -1.0)
            ssn._add_to_queues(totals, job.queue, job.allocated, 1.0)
    if not vec.below_exact_limit(base.values()) or not vec.below_exact_limit(totals.values()):
        ssn._open_totals = None
        totals = {name: [0.0] * ssn.ndims for name in ssn.queues}
        for job in ssn.jobs.values():
            ssn._add_to_queues(totals, job.queue, job.allocated, 1.0)
    return {name: ssn.to_dict(v) for name, v in totals.items()}


def job_fit_error(ssn: SessionInternals, job: JobInfo) -> str:
    """Return Volcano's job fit error text (status histogram and first node fit error).

    Both parts are remembered for the session by what they are made of (many pending jobs
    share their status counts and their fit errors)."""
    texts = ssn._texts
    if len(texts) >= CACHE_ENTRIES:
        texts.clear()
    ready = job.is_ready()
    key: tuple[Any, ...] = (tuple(job.counts.values()), job.min_available, ready)
    msg = texts.get(key)
    if msg is None:
        hist = {str(s): n for s, n in job.counts.items() if n}
        hist["minAvailable"] = job.min_available
        parts = sorted(f"{n} {s}" for s, n in hist.items())
        msg = texts[key] = f"{'pod group is ready' if ready else 'pod group is not ready'}, {', '.join(parts)}"
    if job.fit_errors:
        name, errs, total = next(iter(job.fit_errors.values()))
        key = (tuple(errs.items()), total)
        tail = texts.get(key)
        if tail is None:
            tail = texts[key] = format_fit_errors(errs, total)
        msg += f". Origin reason is {name}: {tail}"
    return msg


def _job_reason(ssn: SessionInternals, job: JobInfo) -> JobReason | None:
    c = job.counts
    waiting = c[TaskStatus.PENDING] + c[TaskStatus.PIPELINED] + c[TaskStatus.ALLOCATED]
    if waiting == 0 and not job.is_pending():
        return None
    if waiting == 0 and not job.tasks and job.reason is None:
        return None
    reason = job.reason
    total = len(job.tasks)
    numbers: dict[str, Any] = {
        "min_available": job.min_available,
        "ready": job.ready_num,
        "pending": c[TaskStatus.PENDING],
        "pipelined": c[TaskStatus.PIPELINED],
        "allocated": c[TaskStatus.ALLOCATED],
        "total": total,
    }
    if reason is not None:
        merged = {**numbers, **reason.numbers}
        return JobReason(reason.kind, reason.message, reason.plugin, reason.fit_errors, merged)
    if c[TaskStatus.PIPELINED]:
        kind = ReasonKind.GANG_SHORTFALL
        message = (
            f"{c[TaskStatus.PIPELINED]}/{total} tasks pipelined, waiting for "
            f"resources being released: {job_fit_error(ssn, job)}"
        )
        return JobReason(kind, message, "", {}, numbers)
    if waiting == 0:
        return None
    return JobReason(
        ReasonKind.NOT_REACHED,
        f"{waiting}/{total} tasks not considered this cycle: {job_fit_error(ssn, job)}",
        "",
        {},
        numbers,
    )


def format_fit_errors(errors: dict[str, int], total_nodes: int) -> str:
    """Return Volcano's ``0/N nodes are unavailable: 3 Insufficient cpu, ....`` text."""
    if not errors:
        return f"0/{total_nodes} nodes are unavailable"
    hist = sorted(f"{n} {r}" for r, n in errors.items())
    return f"0/{total_nodes} nodes are unavailable: {', '.join(hist)}."
