"""The overcommit, drf and proportion plugins (admission and fair share)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from scheduler import vec
from scheduler.framework import (
    Allocatable,
    AllocateHandler,
    ArgSpec,
    JobEnqueueable,
    JobEnqueued,
    JobOrder,
    Overused,
    Plugin,
    Preemptable,
    Preemptive,
    QueueOrder,
    QueueShares,
    Reclaimable,
)
from scheduler.info import ALLOCATED, JobInfo, QueueInfo, TaskInfo
from scheduler.model import JobPhase, TaskStatus
from scheduler.points import Vote
from scheduler.proportion import QueueInput, water_fill
from scheduler.result import JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = ["DrfPlugin", "OvercommitPlugin", "ProportionPlugin", "QueueAttr", "inqueue_of"]


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


class OvercommitPlugin(Plugin, JobEnqueueable, JobEnqueued):
    """Admits PodGroups while Σ inqueue minResources fit in ``total x factor - used``."""

    name = "overcommit"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "overcommit-factor": ArgSpec("float", 1.2, "cluster overcommit factor")
    }

    def on_session_open(self, session: SessionHandle) -> None:
        self.session = session
        factor = float(self.args["overcommit-factor"])
        if factor < 1.0:
            factor = 1.2
        self.idle = self._idle(session, factor)
        self.inqueue = [0.0] * session.ndims
        for job in session.jobs.values():
            part = inqueue_of(job, session.ndims, deduct_allocated=False)
            if part is not None:
                vec.iadd(self.inqueue, part)

    def save_open_state(self) -> Any:
        """Copies of the idle and inqueue vectors (SessionCache)."""
        return (list(self.idle), list(self.inqueue))

    def restore_open_state(self, session: SessionHandle, state: Any) -> None:
        """See :meth:`save_open_state`."""
        self.session = session
        self.idle, self.inqueue = list(state[0]), list(state[1])

    @staticmethod
    def _idle(session: SessionHandle, factor: float) -> list[float]:
        used = [float(x) for x in session.nodes.used.sum(axis=1)] if len(session.nodes) else [0.0] * session.ndims
        return vec.sub([x * factor for x in session.total], used)

    def refresh_open_state(
        self, session: SessionHandle, state: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> Any:
        """Idle computed again from the node table; the inqueue sum updated by the jobs that
        changed (exact: whole numbers), or None to open again (SessionCache)."""
        if not session.whole_requests:
            return None
        n = session.ndims
        parts = ([0.0] * n, [0.0] * n)
        for acc, jobs in zip(parts, (removed, added), strict=True):
            for job in jobs:
                part = inqueue_of(job, n, deduct_allocated=False)
                if part is not None:
                    vec.iadd(acc, part)
        inqueue = list(state[1])
        if not vec.below_exact_limit((inqueue, parts[1])):
            return None
        vec.isub(inqueue, parts[0])
        vec.iadd(inqueue, parts[1])
        if not vec.below_exact_limit((inqueue,)):
            return None
        factor = float(self.args["overcommit-factor"])
        if factor < 1.0:
            factor = 1.2
        return (self._idle(session, factor), inqueue)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        """Permit if the job's minResources still fit in the overcommitted idle resources."""
        if job.min_resources is None:
            return Vote.PERMIT
        want = vec.add(self.inqueue, job.min_resources)
        failing = vec.failing_on(want, self.idle, job.min_resources)
        if not failing:
            return Vote.PERMIT
        names = resource_names(self.session, failing)
        numbers = {
            "requested": self.session.to_dict(job.min_resources),
            "inqueue": self.session.to_dict(self.inqueue),
            "idle": self.session.to_dict([max(x, 0.0) for x in self.idle]),
        }
        self.session.set_reason(
            job,
            JobReason(
                ReasonKind.ENQUEUE_REJECTED,
                f"resource in cluster is overused: insufficient {names}",
                self.name,
                {},
                numbers,
            ),
        )
        return Vote.REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """Reserve the job's minResources."""
        if job.min_resources is not None:
            vec.iadd(self.inqueue, vec.exceeded(job.min_resources, gated_request(job, self.session.ndims)))


class DrfPlugin(Plugin, JobOrder, Preemptable, AllocateHandler, QueueOrder, Reclaimable):
    """Dominant resource fairness between jobs (and, with hierarchy, between queues)."""

    name = "drf"
    has_job_order_key = True

    def on_session_open(self, session: SessionHandle) -> None:
        self.session = session
        self.total = session.total
        self.share: dict[str, float] = {
            key: vec.dominant_share(job.allocated, self.total) for key, job in session.jobs.items()
        }
        self.hdrf = None
        if self.hierarchy:
            from scheduler.plugins.hdrf import HierarchicalDrf

            self.hdrf = HierarchicalDrf(session)

    def save_open_state(self) -> Any:
        """A copy of the job shares; hierarchical mode is opened again (SessionCache)."""
        if self.hdrf is not None:
            return None
        return dict(self.share)

    def restore_open_state(self, session: SessionHandle, state: Any) -> None:
        """See :meth:`save_open_state`."""
        self.session = session
        self.total = session.total
        self.share = dict(state)
        self.hdrf = None

    def refresh_open_state(
        self, session: SessionHandle, state: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> Any:
        """The shares of the jobs that changed are computed again, the others kept (SessionCache;
        the table is only looked up, so its order does not matter)."""
        share: dict[str, float] = dict(state)
        for job in removed:
            share.pop(job.key, None)
        total = session.total
        for job in added:
            share[job.key] = vec.dominant_share(job.allocated, total)
        return share

    def job_order(self, a: JobInfo, b: JobInfo) -> int:
        """Lower dominant share first."""
        sa, sb = self.share.get(a.key, 0.0), self.share.get(b.key, 0.0)
        return (sa > sb) - (sa < sb)

    def job_order_key(self, job: JobInfo) -> float:
        """Sort key of :meth:`job_order`."""
        return self.share.get(job.key, 0.0)

    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        """Hierarchical mode only: compare the queues' paths in the hierarchy tree."""
        if self.hdrf is None:
            return 0
        return self.hdrf.compare_queues(a.name, b.name)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Victims whose job's share (after losing them) stays ≥ the preemptor's share."""
        pjob = preemptor.job
        ls = vec.dominant_share(vec.add(pjob.allocated, preemptor.req), self.total)
        running: dict[str, list[float]] = {}
        victims = []
        for c in candidates:
            alloc = running.get(c.job.key)
            if alloc is None:
                alloc = running[c.job.key] = list(c.job.allocated)
            vec.isub(alloc, c.req)
            rs = vec.dominant_share(alloc, self.total)
            if ls < rs or abs(ls - rs) <= 1e-6:
                victims.append(c)
        return victims

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Hierarchical mode only: victims whose queue would still rank after the reclaimer's."""
        if self.hdrf is None:
            return None
        return self.hdrf.reclaimable(reclaimer, candidates)

    def _update(self, task: TaskInfo) -> None:
        job = task.job
        if job.key in self.share:
            self.share[job.key] = vec.dominant_share(job.allocated, self.total)
        if self.hdrf is not None:
            self.hdrf.update_job(job)

    def on_allocate(self, task: TaskInfo) -> None:
        """Refresh the job's share."""
        self._update(task)

    def on_deallocate(self, task: TaskInfo) -> None:
        """Refresh the job's share."""
        self._update(task)


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


def _updated_sums(
    saved: Mapping[str, QueueAttr], removed: Sequence[JobInfo], added: Sequence[JobInfo], n: int
) -> dict[str, list[list[float]]]:
    """Per queue, its saved sums (allocated, request, inqueue, elastic) less those of the jobs
    ``removed`` and plus those of the jobs ``added`` (proportion's ``refresh_open_state``)."""
    parts: list[dict[str, QueueAttr]] = [{}, {}]
    for acc, jobs in zip(parts, (removed, added), strict=True):
        for job in jobs:
            attr = acc.get(job.queue)
            if attr is None:
                attr = acc[job.queue] = QueueAttr(job.queue, n)
            account_job(attr, job, n)
    sums: dict[str, list[list[float]]] = {}
    for name, a in saved.items():
        sums[name] = [list(a.allocated), list(a.request), list(a.inqueue), list(a.elastic)]
    for sign, acc in zip((-1.0, 1.0), parts, strict=True):
        for name, a in acc.items():
            total = sums.get(name)
            if total is None:
                total = sums[name] = [[0.0] * n for _ in range(4)]
            for t, v in zip(total, (a.allocated, a.request, a.inqueue, a.elastic), strict=True):
                for i, x in enumerate(v):
                    if x:
                        t[i] += sign * x
    return sums


class ProportionPlugin(
    Plugin,
    QueueOrder,
    Reclaimable,
    Overused,
    Allocatable,
    Preemptive,
    JobEnqueueable,
    JobEnqueued,
    AllocateHandler,
    QueueShares,
):
    """Weighted fair share between queues (deserved by water-filling), capped by capability."""

    name = "proportion"
    failures_repeatable = True

    def queue_deserved(self) -> Mapping[str, Sequence[float]]:
        """Return each queue's deserved vector as computed at session open."""
        return {name: attr.deserved for name, attr in self.attrs.items()}

    def on_session_open(self, session: SessionHandle) -> None:
        self.session = session
        n = session.ndims
        self.total_guarantee = [0.0] * n
        for q in session.queues.values():
            if q.queue.guarantee is not None:
                vec.iadd(self.total_guarantee, session.vector(q.queue.guarantee))
        self.attrs: dict[str, QueueAttr] = {}
        for job in session.jobs.values():
            attr = self.attrs.get(job.queue)
            if attr is None:
                attr = self._new_attr(session.queues[job.queue])
            account_job(attr, job, n)
        self._water_fill()

    def save_open_state(self) -> Any:
        """Copies of the queue attributes (SessionCache)."""
        return (list(self.total_guarantee), {k: a.copy() for k, a in self.attrs.items()})

    def restore_open_state(self, session: SessionHandle, state: Any) -> None:
        """See :meth:`save_open_state`."""
        self.session = session
        self.total_guarantee = list(state[0])
        self.attrs = {k: a.copy() for k, a in state[1].items()}

    def refresh_open_state(
        self, session: SessionHandle, state: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> Any:
        """The queue sums updated by the jobs that changed (exact: whole numbers), deserved
        shares computed again; None to open again (SessionCache)."""
        if not session.whole_requests:
            return None
        sums = _updated_sums(state[1], removed, added, session.ndims)
        if not vec.below_exact_limit(
            v for a in state[1].values() for v in (a.allocated, a.request, a.inqueue, a.elastic)
        ):
            return None
        if not vec.below_exact_limit(v for vs in sums.values() for v in vs):
            return None
        self.session = session
        self.total_guarantee = list(state[0])
        self.attrs = {}
        for job in session.jobs.values():  # queues in the order their first job is seen
            if job.queue not in self.attrs:
                attr = self._new_attr(session.queues[job.queue])
                attr.allocated, attr.request, attr.inqueue, attr.elastic = (list(v) for v in sums[job.queue])
        self._water_fill()
        return self.save_open_state()

    def _new_attr(self, queue: QueueInfo) -> QueueAttr:
        s = self.session
        attr = QueueAttr(queue.name, s.ndims)
        attr.weight = queue.weight
        if queue.queue.guarantee is not None:
            attr.guarantee = list(s.vector(queue.queue.guarantee))
        if queue.queue.capability is not None and queue.queue.capability.to_dict():
            attr.capability = s.capability_vector(queue.queue.capability)
        self.attrs[queue.name] = attr  # real capability and deserved: set by _water_fill
        return attr

    def _update_share(self, attr: QueueAttr) -> None:
        best = 0.0
        for a, d in zip(attr.allocated, attr.deserved, strict=True):
            if d >= vec.EPS:
                best = max(best, vec.share(a, d))
        attr.share = best

    def _water_fill(self) -> None:
        """Real capability and deserved of every queue with jobs (:func:`scheduler.proportion.water_fill`)."""
        queues = [QueueInput(a.name, a.weight, a.request, a.guarantee, a.capability) for a in self.attrs.values()]
        for name, share in water_fill(self.session.total, self.total_guarantee, queues).items():
            attr = self.attrs[name]
            attr.real_capability = share.real_capability
            attr.deserved = share.deserved
            self._update_share(attr)

    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        """Higher queue priority first, then lower share."""
        if a.priority != b.priority:
            return -1 if a.priority > b.priority else 1
        sa = self.attrs[a.name].share if a.name in self.attrs else 0.0
        sb = self.attrs[b.name].share if b.name in self.attrs else 0.0
        return (sa > sb) - (sa < sb)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Victims from queues whose allocation exceeds their deserved share."""
        running: dict[str, list[float]] = {}
        victims = []
        for c in candidates:
            attr = self.attrs.get(c.job.queue)
            if attr is None or c.job.key not in self.session.jobs:
                continue
            alloc = running.get(attr.name)
            if alloc is None:
                alloc = running[attr.name] = list(attr.allocated)
            if not vec.le(alloc, attr.deserved):
                vec.isub(alloc, c.req)
                victims.append(c)
        return victims

    def overused(self, queue: QueueInfo) -> bool:
        """Allocation reached deserved on every dimension."""
        attr = self.attrs.get(queue.name)
        return attr is not None and vec.le(attr.deserved, attr.allocated)

    def _fits(self, queue: QueueInfo, req: tuple[float, ...] | list[float]) -> bool:
        attr = self.attrs.get(queue.name)
        if attr is None:
            return True
        return vec.add_le_on(attr.allocated, req, attr.deserved)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Queue open and ``allocated + request ≤ deserved`` on the requested dimensions."""
        if not queue.is_open:
            closed_reject(self.session, self.name, task.job, queue)
            return False
        if self._fits(queue, task.req):
            return True
        quota_refused(
            self.session, self.name, task, self.attrs[queue.name], self.attrs[queue.name].deserved, "deserved share"
        )
        return False

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May reclaim for ``task`` if it fits the queue's deserved share."""
        return queue.is_open and self._fits(queue, task.req)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        """Reject for non-open queues or when minResources would exceed real capability."""
        queue = self.session.queues[job.queue]
        if not queue.is_open:
            return closed_reject(self.session, self.name, job, queue)
        if job.min_resources is None:
            return Vote.PERMIT
        attr = self.attrs[job.queue]
        return quota_reject(self.session, self.name, job, attr, attr.real_capability)

    def job_enqueued(self, job: JobInfo) -> None:
        """Reserve the job's minResources in its queue."""
        if job.min_resources is not None:
            attr = self.attrs[job.queue]
            vec.iadd(attr.inqueue, vec.exceeded(job.min_resources, gated_request(job, self.session.ndims)))

    def on_allocate(self, task: TaskInfo) -> None:
        """Count the task in its queue's allocation."""
        attr = self.attrs.get(task.job.queue)
        if attr is not None:
            vec.iadd(attr.allocated, task.req)
            self._update_share(attr)

    def on_deallocate(self, task: TaskInfo) -> None:
        """Remove the task from its queue's allocation."""
        attr = self.attrs.get(task.job.queue)
        if attr is not None:
            vec.isub(attr.allocated, task.req)
            self._update_share(attr)
