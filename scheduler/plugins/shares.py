"""The overcommit, drf and proportion plugins (admission and fair share).

Their accounting helpers (also capacity's) are in :mod:`scheduler.plugins.queue_accounting`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from scheduler import vec
from scheduler.cycle_state import PluginState
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
from scheduler.info import JobInfo, QueueInfo, TaskInfo
from scheduler.plugins.queue_accounting import (
    QueueAttr,
    account_job,
    closed_reject,
    gated_request,
    inqueue_of,
    quota_refused,
    quota_reject,
    resource_names,
)
from scheduler.points import Vote
from scheduler.proportion import QueueInput, water_fill
from scheduler.result import JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.plugins.hdrf import HierarchicalDrf

__all__ = [
    "DrfPlugin",
    "DrfState",
    "OvercommitPlugin",
    "OvercommitState",
    "ProportionPlugin",
    "ProportionState",
]


class OvercommitState(PluginState):
    """Overcommit's cycle: the overcommitted idle resources (``total x factor - used``) and the
    minResources the admitted jobs reserve (``inqueue``, grown by ``job_enqueued``)."""

    def __init__(self, session: SessionHandle, idle: list[float], inqueue: list[float]) -> None:
        super().__init__(session)
        self.idle = idle
        self.inqueue = inqueue


class OvercommitPlugin(Plugin, JobEnqueueable, JobEnqueued):
    """Admits PodGroups while Σ inqueue minResources fit in ``total x factor - used``."""

    name = "overcommit"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "overcommit-factor": ArgSpec("float", 1.2, "cluster overcommit factor")
    }

    def open(self, session: SessionHandle) -> OvercommitState:
        """The idle resources and the admitted jobs' reservations over ``session``."""
        factor = float(self.args["overcommit-factor"])
        if factor < 1.0:
            factor = 1.2
        inqueue = [0.0] * session.ndims
        for job in session.jobs.values():
            part = inqueue_of(job, session.ndims, deduct_allocated=False)
            if part is not None:
                vec.iadd(inqueue, part)
        return OvercommitState(session, self._idle(session, factor), inqueue)

    def save_state(self, st: OvercommitState) -> Any:
        """Copies of the idle and inqueue vectors (SessionCache)."""
        return (list(st.idle), list(st.inqueue))

    def restore_state(self, session: SessionHandle, saved: Any) -> OvercommitState:
        """See :meth:`save_state`."""
        return OvercommitState(session, list(saved[0]), list(saved[1]))

    @staticmethod
    def _idle(session: SessionHandle, factor: float) -> list[float]:
        used = [float(x) for x in session.nodes.used.sum(axis=1)] if len(session.nodes) else [0.0] * session.ndims
        return vec.sub([x * factor for x in session.total], used)

    def refresh_state(
        self, session: SessionHandle, saved: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
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
        inqueue = list(saved[1])
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

    def job_enqueueable(self, st: OvercommitState, job: JobInfo) -> Vote:
        """Permit if the job's minResources still fit in the overcommitted idle resources."""
        if job.min_resources is None:
            return Vote.PERMIT
        want = vec.add(st.inqueue, job.min_resources)
        failing = vec.failing_on(want, st.idle, job.min_resources)
        if not failing:
            return Vote.PERMIT
        session = st.session
        names = resource_names(session, failing)
        numbers = {
            "requested": session.to_dict(job.min_resources),
            "inqueue": session.to_dict(st.inqueue),
            "idle": session.to_dict([max(x, 0.0) for x in st.idle]),
        }
        session.set_reason(
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

    def job_enqueued(self, st: OvercommitState, job: JobInfo) -> None:
        """Reserve the job's minResources."""
        if job.min_resources is not None:
            vec.iadd(st.inqueue, vec.exceeded(job.min_resources, gated_request(job, st.session.ndims)))


class DrfState(PluginState):
    """Drf's cycle: the cluster total, each job's dominant share (by job key) and, in hierarchical
    mode, the queue tree (:class:`~scheduler.plugins.hdrf.HierarchicalDrf`; None otherwise)."""

    def __init__(
        self, session: SessionHandle, total: list[float], share: dict[str, float], hdrf: HierarchicalDrf | None
    ) -> None:
        super().__init__(session)
        self.total = total
        self.share = share
        self.hdrf = hdrf


class DrfPlugin(Plugin, JobOrder, Preemptable, AllocateHandler, QueueOrder, Reclaimable):
    """Dominant resource fairness between jobs (and, with hierarchy, between queues)."""

    name = "drf"
    has_job_order_key = True

    def open(self, session: SessionHandle) -> DrfState:
        """Every job's dominant share, and the queue tree in hierarchical mode."""
        total = session.total
        share: dict[str, float] = {key: vec.dominant_share(job.allocated, total) for key, job in session.jobs.items()}
        hdrf = None
        if self.hierarchy:
            from scheduler.plugins.hdrf import HierarchicalDrf

            hdrf = HierarchicalDrf(session)
        return DrfState(session, total, share, hdrf)

    def save_state(self, st: DrfState) -> Any:
        """A copy of the job shares; hierarchical mode is opened again (SessionCache)."""
        if st.hdrf is not None:
            return None
        return dict(st.share)

    def restore_state(self, session: SessionHandle, saved: Any) -> DrfState:
        """See :meth:`save_state`."""
        return DrfState(session, session.total, dict(saved), None)

    def refresh_state(
        self, session: SessionHandle, saved: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> Any:
        """The shares of the jobs that changed are computed again, the others kept (SessionCache;
        the table is only looked up, so its order does not matter)."""
        share: dict[str, float] = dict(saved)
        for job in removed:
            share.pop(job.key, None)
        total = session.total
        for job in added:
            share[job.key] = vec.dominant_share(job.allocated, total)
        return share

    def job_order(self, st: DrfState, a: JobInfo, b: JobInfo) -> int:
        """Lower dominant share first."""
        sa, sb = st.share.get(a.key, 0.0), st.share.get(b.key, 0.0)
        return (sa > sb) - (sa < sb)

    def job_order_key(self, st: DrfState, job: JobInfo) -> float:
        """Sort key of :meth:`job_order`."""
        return st.share.get(job.key, 0.0)

    def queue_order(self, st: DrfState, a: QueueInfo, b: QueueInfo) -> int:
        """Hierarchical mode only: compare the queues' paths in the hierarchy tree."""
        if st.hdrf is None:
            return 0
        return st.hdrf.compare_queues(a.name, b.name)

    def preemptable(self, st: DrfState, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Victims whose job's share (after losing them) stays ≥ the preemptor's share."""
        pjob = preemptor.job
        total = st.total
        ls = vec.dominant_share(vec.add(pjob.allocated, preemptor.req), total)
        running: dict[str, list[float]] = {}
        victims = []
        for c in candidates:
            alloc = running.get(c.job.key)
            if alloc is None:
                alloc = running[c.job.key] = list(c.job.allocated)
            vec.isub(alloc, c.req)
            rs = vec.dominant_share(alloc, total)
            if ls < rs or abs(ls - rs) <= 1e-6:
                victims.append(c)
        return victims

    def reclaimable(self, st: DrfState, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Hierarchical mode only: victims whose queue would still rank after the reclaimer's."""
        if st.hdrf is None:
            return None
        return st.hdrf.reclaimable(reclaimer, candidates)

    def _update(self, st: DrfState, task: TaskInfo) -> None:
        job = task.job
        if job.key in st.share:
            st.share[job.key] = vec.dominant_share(job.allocated, st.total)
        if st.hdrf is not None:
            st.hdrf.update_job(job)

    def on_allocate(self, st: DrfState, task: TaskInfo) -> None:
        """Refresh the job's share."""
        self._update(st, task)

    def on_deallocate(self, st: DrfState, task: TaskInfo) -> None:
        """Refresh the job's share."""
        self._update(st, task)


def _updated_sums(
    saved: Mapping[str, QueueAttr], removed: Sequence[JobInfo], added: Sequence[JobInfo], n: int
) -> dict[str, list[list[float]]]:
    """Per queue, its saved sums (allocated, request, inqueue, elastic) less those of the jobs
    ``removed`` and plus those of the jobs ``added`` (proportion's ``refresh_state``)."""
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


class ProportionState(PluginState):
    """Proportion's cycle: Σ guarantee of all queues and, per queue with jobs (in the order its first
    job is seen), its accounting with its deserved share and real capability (:class:`QueueAttr`)."""

    def __init__(self, session: SessionHandle, total_guarantee: list[float], attrs: dict[str, QueueAttr]) -> None:
        super().__init__(session)
        self.total_guarantee = total_guarantee
        self.attrs = attrs


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

    def queue_deserved(self, st: ProportionState) -> Mapping[str, Sequence[float]]:
        """Return each queue's deserved vector as computed at session open."""
        return {name: attr.deserved for name, attr in st.attrs.items()}

    def open(self, session: SessionHandle) -> ProportionState:
        """The queues' sums over ``session`` and their deserved shares."""
        n = session.ndims
        st = ProportionState(session, [0.0] * n, {})
        for q in session.queues.values():
            if q.queue.guarantee is not None:
                vec.iadd(st.total_guarantee, session.vector(q.queue.guarantee))
        for job in session.jobs.values():
            attr = st.attrs.get(job.queue)
            if attr is None:
                attr = self._new_attr(st, session.queues[job.queue])
            account_job(attr, job, n)
        self._water_fill(st)
        return st

    def save_state(self, st: ProportionState) -> Any:
        """Copies of the queue attributes (SessionCache)."""
        return (list(st.total_guarantee), {k: a.copy() for k, a in st.attrs.items()})

    def restore_state(self, session: SessionHandle, saved: Any) -> ProportionState:
        """See :meth:`save_state`."""
        return ProportionState(session, list(saved[0]), {k: a.copy() for k, a in saved[1].items()})

    def refresh_state(
        self, session: SessionHandle, saved: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> Any:
        """The queue sums updated by the jobs that changed (exact: whole numbers), deserved
        shares computed again; None to open again (SessionCache)."""
        if not session.whole_requests:
            return None
        sums = _updated_sums(saved[1], removed, added, session.ndims)
        if not vec.below_exact_limit(
            v for a in saved[1].values() for v in (a.allocated, a.request, a.inqueue, a.elastic)
        ):
            return None
        if not vec.below_exact_limit(v for vs in sums.values() for v in vs):
            return None
        st = ProportionState(session, list(saved[0]), {})
        for job in session.jobs.values():  # queues in the order their first job is seen
            if job.queue not in st.attrs:
                attr = self._new_attr(st, session.queues[job.queue])
                attr.allocated, attr.request, attr.inqueue, attr.elastic = (list(v) for v in sums[job.queue])
        self._water_fill(st)
        return self.save_state(st)

    def _new_attr(self, st: ProportionState, queue: QueueInfo) -> QueueAttr:
        s = st.session
        attr = QueueAttr(queue.name, s.ndims)
        attr.weight = queue.weight
        if queue.queue.guarantee is not None:
            attr.guarantee = list(s.vector(queue.queue.guarantee))
        if queue.queue.capability is not None and queue.queue.capability.to_dict():
            attr.capability = s.capability_vector(queue.queue.capability)
        st.attrs[queue.name] = attr  # real capability and deserved: set by _water_fill
        return attr

    def _update_share(self, attr: QueueAttr) -> None:
        best = 0.0
        for a, d in zip(attr.allocated, attr.deserved, strict=True):
            if d >= vec.EPS:
                best = max(best, vec.share(a, d))
        attr.share = best

    def _water_fill(self, st: ProportionState) -> None:
        """Real capability and deserved of every queue with jobs (:func:`scheduler.proportion.water_fill`)."""
        queues = [QueueInput(a.name, a.weight, a.request, a.guarantee, a.capability) for a in st.attrs.values()]
        for name, share in water_fill(st.session.total, st.total_guarantee, queues).items():
            attr = st.attrs[name]
            attr.real_capability = share.real_capability
            attr.deserved = share.deserved
            self._update_share(attr)

    def queue_order(self, st: ProportionState, a: QueueInfo, b: QueueInfo) -> int:
        """Higher queue priority first, then lower share."""
        if a.priority != b.priority:
            return -1 if a.priority > b.priority else 1
        attrs = st.attrs
        sa = attrs[a.name].share if a.name in attrs else 0.0
        sb = attrs[b.name].share if b.name in attrs else 0.0
        return (sa > sb) - (sa < sb)

    def reclaimable(
        self, st: ProportionState, reclaimer: TaskInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo] | None:
        """Victims from queues whose allocation exceeds their deserved share."""
        running: dict[str, list[float]] = {}
        victims = []
        for c in candidates:
            attr = st.attrs.get(c.job.queue)
            if attr is None or c.job.key not in st.session.jobs:
                continue
            alloc = running.get(attr.name)
            if alloc is None:
                alloc = running[attr.name] = list(attr.allocated)
            if not vec.le(alloc, attr.deserved):
                vec.isub(alloc, c.req)
                victims.append(c)
        return victims

    def overused(self, st: ProportionState, queue: QueueInfo) -> bool:
        """Allocation reached deserved on every dimension."""
        attr = st.attrs.get(queue.name)
        return attr is not None and vec.le(attr.deserved, attr.allocated)

    def _fits(self, st: ProportionState, queue: QueueInfo, req: tuple[float, ...] | list[float]) -> bool:
        attr = st.attrs.get(queue.name)
        if attr is None:
            return True
        return vec.add_le_on(attr.allocated, req, attr.deserved)

    def allocatable(self, st: ProportionState, queue: QueueInfo, task: TaskInfo) -> bool:
        """Queue open and ``allocated + request ≤ deserved`` on the requested dimensions."""
        if not queue.is_open:
            closed_reject(st.session, self.name, task.job, queue)
            return False
        if self._fits(st, queue, task.req):
            return True
        quota_refused(
            st.session, self.name, task, st.attrs[queue.name], st.attrs[queue.name].deserved, "deserved share"
        )
        return False

    def preemptive(self, st: ProportionState, queue: QueueInfo, task: TaskInfo) -> bool:
        """May reclaim for ``task`` if it fits the queue's deserved share."""
        return queue.is_open and self._fits(st, queue, task.req)

    def job_enqueueable(self, st: ProportionState, job: JobInfo) -> Vote:
        """Reject for non-open queues or when minResources would exceed real capability."""
        session = st.session
        queue = session.queues[job.queue]
        if not queue.is_open:
            return closed_reject(session, self.name, job, queue)
        if job.min_resources is None:
            return Vote.PERMIT
        attr = st.attrs[job.queue]
        return quota_reject(session, self.name, job, attr, attr.real_capability)

    def job_enqueued(self, st: ProportionState, job: JobInfo) -> None:
        """Reserve the job's minResources in its queue."""
        if job.min_resources is not None:
            attr = st.attrs[job.queue]
            vec.iadd(attr.inqueue, vec.exceeded(job.min_resources, gated_request(job, st.session.ndims)))

    def on_allocate(self, st: ProportionState, task: TaskInfo) -> None:
        """Count the task in its queue's allocation."""
        attr = st.attrs.get(task.job.queue)
        if attr is not None:
            vec.iadd(attr.allocated, task.req)
            self._update_share(attr)

    def on_deallocate(self, st: ProportionState, task: TaskInfo) -> None:
        """Remove the task from its queue's allocation."""
        attr = st.attrs.get(task.job.queue)
        if attr is not None:
            vec.isub(attr.allocated, task.req)
            self._update_share(attr)
