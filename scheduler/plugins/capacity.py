"""The capacity plugin: per-queue deserved / guarantee / capability, flat or hierarchical."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from scheduler import vec
from scheduler.cycle_state import PluginState
from scheduler.framework import (
    Allocatable,
    AllocateHandler,
    ArgSpec,
    GangEvictable,
    JobEnqueueable,
    JobEnqueued,
    Plugin,
    Preemptive,
    QueueOrder,
    QueueShares,
    Reclaimable,
    VictimQueueOrder,
)
from scheduler.plugins.queue_accounting import (
    QueueAttr,
    account_job,
    closed_reject,
    gated_request,
    quota_refused,
    quota_reject,
)
from scheduler.points import Vote
from scheduler.result import JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, QueueInfo, TaskInfo

__all__ = ["CapacityPlugin", "CapacityState"]

INF = float("inf")


def _below_deserved_somewhere(attr: QueueAttr, req: Sequence[float]) -> bool:
    """Volcano's ``LessEqualPartlyWithDimensionZeroFiltered``: on some requested dimension (not
    pods, not one where both the total and deserved are 0), ``allocated + req <= deserved``."""
    want = vec.add(attr.allocated, req)
    return any(
        want[d] <= attr.deserved[d]
        for d, r in enumerate(req)
        if r > 0 and d != vec.PODS and not (want[d] < vec.EPS and attr.deserved[d] < vec.EPS)
    )


def _relevant_deserved(attr: QueueAttr, req: Sequence[float]) -> bool:
    """Volcano's ``hasRelevantDeserved``: the queue deserves some of a dimension ``req`` uses."""
    return any(v > 0 and d != vec.PODS and attr.deserved[d] >= vec.EPS for d, v in enumerate(req))


def _over_deserved(deserved: Sequence[float], allocated: Sequence[float], req: Sequence[float]) -> bool:
    """Volcano's ``GreaterPartlyWithRelevantDimensions``: above deserved on a dimension ``req`` uses."""
    return any(
        v > 0 and d != vec.PODS and deserved[d] >= vec.EPS and allocated[d] > deserved[d] for d, v in enumerate(req)
    )


class CapacityState(PluginState):
    """Capacity's cycle: each queue's attributes (deserved, guarantee, capabilities, allocated, share),
    the hierarchy (parents, children, leaves), why the plugin cannot work this cycle ('' when it can)
    and its ``ancestorReclaimLevel``."""

    def __init__(self, session: SessionHandle, level: int) -> None:
        super().__init__(session)
        self.attrs: dict[str, QueueAttr] = {}
        self.parents: dict[str, str] = {}
        self.children: dict[str, list[str]] = {}
        self.leaves: set[str] = set()
        self.not_ready = ""
        #: ``ancestorReclaimLevel`` (hierarchy only; a negative value is 0, as Volcano).
        self.level = level


class CapacityPlugin(
    Plugin,
    QueueShares,
    QueueOrder,
    VictimQueueOrder,
    Reclaimable,
    GangEvictable,
    Allocatable,
    Preemptive,
    JobEnqueueable,
    JobEnqueued,
    AllocateHandler,
):
    """Queues get their ``deserved`` share (reclaimable back), may borrow up to ``capability``
    and keep ``guarantee``. With ``enableHierarchy`` quotas nest along ``spec.parent``."""

    name = "capacity"
    failures_repeatable = True
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "ancestorReclaimLevel": ArgSpec("int", 0, "hierarchy: ancestors checked for reclaim"),
        "capacity.DynamicResourceAllocationEnable": ArgSpec("bool", False, "accepted, no effect"),
        "capacity.DRAConsumableCapacityEnable": ArgSpec("bool", False, "accepted, no effect"),
    }

    def queue_deserved(self, st: CapacityState) -> Mapping[str, Sequence[float]]:
        """Return each queue's deserved vector as computed at session open."""
        return {name: attr.deserved for name, attr in st.attrs.items()}

    def open(self, session: SessionHandle) -> CapacityState:
        """The queues' attributes over ``session``, flat or hierarchical, with their shares."""
        level = max(0, int(self.args["ancestorReclaimLevel"])) if self.hierarchy else 0
        st = CapacityState(session, level)
        if self.hierarchy:
            self._open_hierarchy(st)
        else:
            self._open_flat(st)
        for attr in st.attrs.values():
            self._update_share(attr)
        return st

    # -- building ---------------------------------------------------------------------------

    def _spec(self, st: CapacityState, queue: QueueInfo) -> QueueAttr:
        s = st.session
        attr = QueueAttr(queue.name, s.ndims)
        attr.weight = queue.weight
        q = queue.queue
        if q.guarantee is not None:
            attr.guarantee = list(s.vector(q.guarantee))
        if q.deserved is not None:
            attr.deserved = list(s.vector(q.deserved))
        if q.capability is not None and q.capability.to_dict():
            attr.capability = s.capability_vector(q.capability)
        return attr

    def _open_flat(self, st: CapacityState) -> None:
        s = st.session
        total_guarantee = [0.0] * s.ndims
        for q in s.queues.values():
            if q.queue.guarantee is not None:
                vec.iadd(total_guarantee, s.vector(q.queue.guarantee))
        for job in s.jobs.values():
            attr = st.attrs.get(job.queue)
            if attr is None:
                attr = self._spec(st, s.queues[job.queue])
                real = vec.add(vec.exceeded(s.total, total_guarantee), attr.guarantee)
                attr.real_capability = vec.vmin(real, attr.capability)
                attr.deserved = vec.vmax(vec.vmin(attr.deserved, attr.real_capability), attr.guarantee)
                st.attrs[job.queue] = attr
                st.leaves.add(job.queue)
                st.parents[job.queue] = ""
            account_job(attr, job, s.ndims)

    def _open_hierarchy(self, st: CapacityState) -> None:
        s = st.session
        queues = dict(s.queues)
        for q in queues.values():
            st.attrs[q.name] = self._spec(st, q)
            st.parents[q.name] = "" if q.name == "root" else q.parent
        if "root" not in st.attrs:
            st.attrs["root"] = QueueAttr("root", s.ndims)
            st.parents["root"] = ""
        children: dict[str, list[str]] = {name: [] for name in st.attrs}
        for name, parent in st.parents.items():
            if name == "root":
                continue
            if parent not in st.attrs:
                st.not_ready = f"queue {name} has missing parent {parent!r}"
                return
            children[parent].append(name)
        for name in st.attrs:  # cycle check: every chain must reach root
            seen: set[str] = set()
            cur = name
            while cur != "root":
                if cur in seen:
                    st.not_ready = f"queue hierarchy has a cycle through {name}"
                    return
                seen.add(cur)
                cur = st.parents[cur]
        st.leaves = {n for n, c in children.items() if not c}
        st.children = children
        root = st.attrs["root"]
        root.guarantee = [0.0] * s.ndims
        root.deserved = [0.0] * s.ndims
        for c in children["root"]:
            vec.iadd(root.guarantee, st.attrs[c].guarantee)
            vec.iadd(root.deserved, st.attrs[c].deserved)
        root.real_capability = list(root.capability)
        self._descend(st, "root")
        for job in s.jobs.values():
            if job.queue not in st.leaves:
                st.not_ready = f"job {job.key} is in non-leaf queue {job.queue}"
                return
            leaf = QueueAttr(job.queue, s.ndims)
            account_job(leaf, job, s.ndims)
            for name in self.chain(st, job.queue):
                a = st.attrs[name]
                for field in ("allocated", "request", "inqueue", "elastic"):
                    vec.iadd(getattr(a, field), getattr(leaf, field))

    def _descend(self, st: CapacityState, parent: str) -> None:
        p = st.attrs[parent]
        kids = st.children[parent]
        sibling_guarantee = [0.0] * st.session.ndims
        for c in kids:
            vec.iadd(sibling_guarantee, st.attrs[c].guarantee)
        for c in kids:
            a = st.attrs[c]
            a.deserved = vec.vmax(a.deserved, a.guarantee)
            a.capability = [pc if cc == INF else cc for cc, pc in zip(a.capability, p.capability, strict=True)]
            real = vec.add(vec.exceeded(p.real_capability, sibling_guarantee), a.guarantee)
            a.real_capability = vec.vmin(real, a.capability)
            self._descend(st, c)

    def chain(self, st: CapacityState, queue: str) -> list[str]:
        """Return ``queue`` and its ancestors (hierarchy mode), or just ``queue``."""
        out = [queue]
        if not self.hierarchy:
            return out
        parents = st.parents
        cur = parents.get(queue, "")
        while cur:
            out.append(cur)
            cur = parents.get(cur, "")
        return out

    def _update_share(self, attr: QueueAttr) -> None:
        if vec.is_empty(attr.deserved):
            attr.share = 1.0
            return
        attr.share = max(
            (vec.share(a, d) for a, d in zip(attr.allocated, attr.deserved, strict=True) if d >= vec.EPS), default=0.0
        )

    # -- ordering ---------------------------------------------------------------------------

    def _flat_order(self, a: QueueAttr, b: QueueAttr) -> int:
        if a.share != b.share:
            return -1 if a.share < b.share else 1
        ea, eb = vec.is_empty(a.deserved), vec.is_empty(b.deserved)
        if ea != eb:
            return 1 if ea else -1
        return 0

    def queue_order(self, st: CapacityState, a: QueueInfo, b: QueueInfo) -> int:
        """Priority, then (leaf before non-leaf, then at the level below the deepest common
        ancestor) lower share, then queues with a deserved share first."""
        if a.priority != b.priority:
            return -1 if a.priority > b.priority else 1
        if a.name not in st.attrs or b.name not in st.attrs:
            return 0
        if not self.hierarchy:
            return self._flat_order(st.attrs[a.name], st.attrs[b.name])
        la, lb = a.name in st.leaves, b.name in st.leaves
        if la != lb:
            return -1 if la else 1
        ca, cb = list(reversed(self.chain(st, a.name))), list(reversed(self.chain(st, b.name)))
        i = 0
        while i < min(len(ca), len(cb)) and ca[i] == cb[i]:
            i += 1
        if i >= len(ca) or i >= len(cb):
            return 0
        return self._flat_order(st.attrs[ca[i]], st.attrs[cb[i]])

    def victim_queue_order(self, st: CapacityState, a: QueueInfo, b: QueueInfo, preemptor: QueueInfo | None) -> int:
        """Hierarchy: victims first from the queue whose deepest common ancestor with the
        preemptor's queue lies deepest (Volcano's ``getQueueLevel``: the index, from the root, of
        the last ancestor both ancestor lists share; 0 when they share none)."""
        if not self.hierarchy or preemptor is None:
            return 0
        mine = list(reversed(self.chain(st, preemptor.name)))[:-1]

        def level(q: str) -> int:
            theirs = list(reversed(self.chain(st, q)))[:-1]
            found = 0
            for i in range(min(len(mine), len(theirs))):
                if mine[i] != theirs[i]:
                    break
                found = i
            return found

        la, lb = level(a.name), level(b.name)
        return (la < lb) - (la > lb)

    # -- quota checks -----------------------------------------------------------------------

    def _refuse_not_ready(self, st: CapacityState, job: JobInfo) -> None:
        st.session.set_reason(
            job,
            JobReason(
                ReasonKind.CAPABILITY_EXCEEDED,
                f"capacity plugin not ready: {st.not_ready}",
                self.name,
                {},
                {},
            ),
        )

    def allocatable(self, st: CapacityState, queue: QueueInfo, task: TaskInfo) -> bool:
        """Queue open, a leaf, and ``allocated + request ≤ real capability`` at every level."""
        if st.not_ready:
            self._refuse_not_ready(st, task.job)
            return False
        if not queue.is_open:
            closed_reject(st.session, self.name, task.job, queue)
            return False
        if queue.name not in st.leaves:
            return False
        for q in self.chain(st, queue.name):
            a = st.attrs[q]
            if not vec.add_le_on(a.allocated, task.req, a.real_capability):
                quota_refused(st.session, self.name, task, a, a.real_capability, "capability")
                return False
        return True

    def job_enqueueable(self, st: CapacityState, job: JobInfo) -> Vote:
        """Reject for closed queues or when minResources would exceed real capability."""
        if st.not_ready:
            self._refuse_not_ready(st, job)
            return Vote.REJECT
        queue = st.session.queues[job.queue]
        if not queue.is_open:
            return closed_reject(st.session, self.name, job, queue)
        if job.min_resources is None:
            return Vote.PERMIT
        for q in self.chain(st, job.queue):
            a = st.attrs[q]
            if quota_reject(st.session, self.name, job, a, a.real_capability) == Vote.REJECT:
                return Vote.REJECT
        return Vote.PERMIT

    def job_enqueued(self, st: CapacityState, job: JobInfo) -> None:
        """Reserve the job's minResources in its queue (and ancestors)."""
        if job.min_resources is None or st.not_ready:
            return
        part = vec.exceeded(job.min_resources, gated_request(job, st.session.ndims))
        for q in self.chain(st, job.queue):
            vec.iadd(st.attrs[q].inqueue, part)

    def preemptive(self, st: CapacityState, queue: QueueInfo, task: TaskInfo) -> bool:
        """May reclaim: within its real capability, and below deserved on some requested dimension."""
        if st.not_ready or not queue.is_open or queue.name not in st.attrs:
            return False
        a = st.attrs[queue.name]
        # Volcano checks the queue's own real capability only (which, in hierarchical mode, is
        # already bounded by its ancestors'); an ancestor full of its other children's pods
        # does not stop the queue from reclaiming from them.
        if not vec.add_le_on(a.allocated, task.req, a.real_capability):
            return False
        if _below_deserved_somewhere(a, task.req):
            return True
        # ancestorReclaimLevel: a queue at or above its own deserved may still reclaim when one of
        # its ancestors, up to that many levels above it (the root excepted), is below its own.
        for ancestor in self._ancestors(st, queue.name)[: st.level]:
            if ancestor != "root" and _below_deserved_somewhere(st.attrs[ancestor], task.req):
                return True
        return False

    def _ancestors(self, st: CapacityState, queue: str) -> list[str]:
        """The queue's ancestors, nearest first (parent, grandparent, ..., root)."""
        return self.chain(st, queue)[1:]

    def gang_evictable(
        self, st: CapacityState, action: str, job: JobInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo] | None:
        """gangpreempt: every candidate. gangreclaim: in the order given, a candidate whose queue
        stays at or above its guarantee without it and which either uses nothing its queue
        deserves or is taken from a queue above its deserved on a dimension it uses (Volcano's
        UnifiedEvictableFn: no ancestor levels, no shared-dimension skip)."""
        if action != "gangreclaim":
            return list(candidates)
        if st.not_ready:
            return []
        running: dict[str, list[float]] = {}
        victims = []
        for c in candidates:
            attr = st.attrs.get(c.job.queue)
            if attr is None:
                continue
            alloc = running.get(attr.name)
            if alloc is None:
                alloc = running[attr.name] = list(attr.allocated)
            after = vec.sub(alloc, c.req)
            if not vec.le(attr.guarantee, after):
                continue
            if _relevant_deserved(attr, c.req) and not _over_deserved(attr.deserved, alloc, c.req):
                continue
            running[attr.name] = after
            victims.append(c)
        return victims

    def reclaimable(self, st: CapacityState, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Victims from queues above their deserved share, never below their guarantee."""
        if st.not_ready:
            return []
        ssn = st.session

        def order(x: TaskInfo, y: TaskInfo) -> int:
            return -1 if ssn.victim_less(x, y, reclaimer) else 1

        ordered = sorted(candidates, key=functools.cmp_to_key(order))
        running: dict[str, list[float]] = {}
        victims = []
        req = reclaimer.req
        level = st.level
        mine = self._ancestors(st, reclaimer.job.queue)[:level] if level else []
        reclaimer_attr = st.attrs.get(reclaimer.job.queue)
        reclaimer_deserved = reclaimer_attr is not None and _relevant_deserved(reclaimer_attr, req)
        for c in ordered:
            attr = st.attrs.get(c.job.queue)
            if attr is None:
                continue
            if not any(c.req[d] > 0 and req[d] > 0 for d in range(len(req)) if d != vec.PODS):
                continue
            alloc = running.get(attr.name)
            if alloc is None:
                alloc = running[attr.name] = list(attr.allocated)
            after = vec.sub(alloc, c.req)
            if not vec.le(attr.guarantee, after):
                continue
            if not _relevant_deserved(attr, c.req):
                # An immediate victim (its queue deserves nothing it uses), except that with
                # ancestorReclaimLevel two queues under a common non-root ancestor within that many
                # levels do not take from each other when the reclaimer's queue deserves nothing
                # the reclaimer asks for (no real contention).
                theirs = self._ancestors(st, attr.name)[:level] if level else []
                if not reclaimer_deserved and any(q != "root" and q in theirs for q in mine):
                    continue
            elif not _over_deserved(attr.deserved, alloc, c.req):
                continue
            checked = self._ancestors_give(st, attr.name, reclaimer.job.queue, c, running)
            if checked is None:
                continue
            running[attr.name] = after
            for a_alloc in checked:
                vec.isub(a_alloc, c.req)
            victims.append(c)
        return victims

    def _ancestors_give(
        self, st: CapacityState, queue: str, reclaimer_queue: str, c: TaskInfo, running: dict[str, list[float]]
    ) -> list[list[float]] | None:
        """ancestorReclaimLevel: each of the victim's ancestors up to that level which is not
        also the reclaimer's ancestor at the same level (nor the root) must be above its
        deserved on a dimension the victim uses (or deserve none of them). Returns the running
        allocations of the ancestors checked (the victim's request comes off them when it is
        taken), or None when one of them may not give it."""
        checked: list[list[float]] = []
        for depth in range(st.level):
            theirs_at = self._ancestors(st, queue)
            if depth >= len(theirs_at) or theirs_at[depth] == "root":
                continue
            ancestor = theirs_at[depth]
            mine_at = self._ancestors(st, reclaimer_queue)
            if depth < len(mine_at) and mine_at[depth] == ancestor:
                continue
            a = st.attrs[ancestor]
            a_alloc = running.get(ancestor)
            if a_alloc is None:
                a_alloc = running[ancestor] = list(a.allocated)
            checked.append(a_alloc)
            if _relevant_deserved(a, c.req) and not _over_deserved(a.deserved, a_alloc, c.req):
                return None
        return checked

    # -- events -----------------------------------------------------------------------------

    def _apply(self, st: CapacityState, task: TaskInfo, sign: int) -> None:
        for q in self.chain(st, task.job.queue):
            a = st.attrs.get(q)
            if a is None:
                return
            if sign > 0:
                vec.iadd(a.allocated, task.req)
            else:
                vec.isub(a.allocated, task.req)
            self._update_share(a)

    def on_allocate(self, st: CapacityState, task: TaskInfo) -> None:
        """Count the task in its queue (and ancestors)."""
        self._apply(st, task, 1)

    def on_deallocate(self, st: CapacityState, task: TaskInfo) -> None:
        """Remove the task from its queue (and ancestors)."""
        self._apply(st, task, -1)
