"""Session: builds the per-cycle state from a snapshot, dispatches extension points over tiers
and turns the final state into a CycleResult."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from scheduler import vec
from scheduler.config import SchedulerConfig
from scheduler.framework import (
    Allocatable,
    AllocateHandler,
    BoolArray,
    Capability,
    ExtensionPoint,
    Filter,
    FloatArray,
    IntArray,
    JobEnqueueable,
    JobEnqueued,
    JobOrder,
    JobPipelined,
    JobReady,
    JobStarving,
    JobValid,
    NodeOrder,
    Overused,
    Plugin,
    Predicate,
    Preemptable,
    Preemptive,
    QueueOrder,
    QueueShares,
    Reclaimable,
    SessionClose,
    TaskOrder,
    VictimQueueOrder,
    Vote,
)
from scheduler.info import ALLOCATED, ON_NODE, JobInfo, QueueInfo, TaskInfo, derive
from scheduler.model import Job, JobPhase, Resource, Task, TaskStatus
from scheduler.nodes import NodeTable
from scheduler.result import CycleResult, Eviction, JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.cache import Journal
    from scheduler.registry import Registry
    from scheduler.snapshot import Snapshot

__all__ = ["Session"]

_CAPABILITIES: dict[ExtensionPoint, type[Capability]] = {
    ExtensionPoint.QUEUE_ORDER: QueueOrder,
    ExtensionPoint.VICTIM_QUEUE_ORDER: VictimQueueOrder,
    ExtensionPoint.JOB_ORDER: JobOrder,
    ExtensionPoint.TASK_ORDER: TaskOrder,
    ExtensionPoint.JOB_VALID: JobValid,
    ExtensionPoint.JOB_ENQUEUEABLE: JobEnqueueable,
    ExtensionPoint.JOB_ENQUEUED: JobEnqueued,
    ExtensionPoint.JOB_READY: JobReady,
    ExtensionPoint.JOB_PIPELINED: JobPipelined,
    ExtensionPoint.JOB_STARVING: JobStarving,
    ExtensionPoint.PREDICATE: Predicate,
    ExtensionPoint.NODE_ORDER: NodeOrder,
    ExtensionPoint.PREEMPTABLE: Preemptable,
    ExtensionPoint.RECLAIMABLE: Reclaimable,
    ExtensionPoint.PREEMPTIVE: Preemptive,
    ExtensionPoint.OVERUSED: Overused,
    ExtensionPoint.ALLOCATABLE: Allocatable,
}
#: Extension points no switch can disable (Volcano: jobValid, victimQueueOrder).
_ALWAYS_ON = frozenset({ExtensionPoint.JOB_VALID, ExtensionPoint.VICTIM_QUEUE_ORDER})

STATUS_ORDER = (
    TaskStatus.PENDING,
    TaskStatus.ALLOCATED,
    TaskStatus.PIPELINED,
    TaskStatus.BINDING,
    TaskStatus.BOUND,
    TaskStatus.RUNNING,
    TaskStatus.RELEASING,
    TaskStatus.SUCCEEDED,
    TaskStatus.FAILED,
    TaskStatus.UNKNOWN,
)


_UID = operator.attrgetter("uid")
_JOB_OF = operator.attrgetter("job")
_NODE_OF = operator.attrgetter("node")
_T = TypeVar("_T")
_K = TypeVar("_K")


def _group_by(items: Iterable[_T], key: Callable[[_T], _K]) -> dict[_K, list[_T]]:
    """The items by ``key``, each group in input order."""
    groups: dict[_K, list[_T]] = {}
    for item in items:
        k = key(item)
        group = groups.get(k)
        if group is None:
            groups[k] = [item]
        else:
            group.append(item)
    return groups


def _group_tasks(tasks: Sequence[Task]) -> dict[str, list[Task]]:
    """The pods by PodGroup key (``Task.job``), each group in input order."""
    return _group_by(tasks, _JOB_OF)


def _same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether ``a`` and ``b`` hold the same objects in the same order."""
    return a is b or (len(a) == len(b) and all(map(operator.is_, a, b)))


def _same_pods(group: _Group | None, raw: list[Task] | None) -> bool:
    """Whether a snapshot's pods of a PodGroup key (``raw``) are the objects ``group`` was built
    from (in any order)."""
    if group is None or raw is None:
        return group is None and raw is None
    return _same(group.raw, raw) or _same(group.ordered, sorted(raw, key=_UID))


class _Group:
    """The pods of one PodGroup key as a snapshot gave them, and what the session built from them.

    ``ordered`` is the ``(job, uid)`` order of session open: visiting the groups by key and each
    group in this order is the same as one global sort on ``(job, uid)`` (many small sorts are
    much cheaper than one sort on tuple keys). ``info`` is the job (None: the pods have no known
    PodGroup and only use node resources); ``placed`` the TaskInfos sitting on a node (their
    ``node`` is set to it in the opened state).
    """

    __slots__ = ("info", "infos", "job", "ordered", "placed", "raw")

    def __init__(self, raw: list[Task], info: JobInfo | None) -> None:
        self.raw = raw
        self.ordered = sorted(raw, key=_UID) if len(raw) > 1 else raw
        self.info = info
        self.job: Job | None = info.job if info is not None else None
        #: The TaskInfo built for each pod of ``ordered`` (None: an orphan pod not on a node).
        self.infos: list[TaskInfo | None] = []
        self.placed: list[TaskInfo] = []


def _queue_missing(j: Job) -> JobReason:
    return JobReason(
        ReasonKind.QUEUE_MISSING,
        f"queue {j.queue!r} of podgroup {j.key} does not exist",
        numbers={"queue": j.queue},
    )


def _count_names(uses: dict[str, int], names: Mapping[str, int], delta: int) -> None:
    for name in names:
        left = uses.get(name, 0) + delta
        if left:
            uses[name] = left
        else:
            del uses[name]


def _insert_ordered(lists: list[dict[str, TaskInfo]], i: int, items: list[TaskInfo]) -> bool:
    """Add ``items`` (in open order) to node ``i``'s task list where a fresh open would have put
    them; False if a uid is already there."""
    d = lists[i]
    for t in items:
        if t.uid in d:
            return False
    key = _node_order_key
    if d:
        # Few pods sort after the first new one (dict order is insertion order): take them out
        # and merge them back with the new ones; else put the whole list in order again.
        first = key(items[0])
        tail: list[TaskInfo] = []
        for t in reversed(d.values()):
            if key(t) < first:
                break
            if len(tail) == 4:
                lists[i] = {t.uid: t for t in sorted([*d.values(), *items], key=key)}
                return True
            tail.append(t)
        if tail:
            tail.reverse()
            for t in tail:
                del d[t.uid]
            merged: list[TaskInfo] = []
            k, n = 0, len(items)
            for t in tail:
                kt = key(t)
                while k < n and key(items[k]) < kt:
                    merged.append(items[k])
                    k += 1
                merged.append(t)
            merged.extend(items[k:])
            items = merged
    for t in items:
        d[t.uid] = t
    return True


#: The order of the pods in a node's task list after session open: ``(Task.job, uid)``.
_node_order_key: Callable[[TaskInfo], tuple[str, str]] = operator.attrgetter("task.job", "uid")


def _resolve_priority(explicit: int | None, class_name: str, classes: dict[str, int], default: int) -> int:
    if explicit is not None:
        return explicit
    if class_name and class_name in classes:
        return classes[class_name]
    return default


class Session:
    """One scheduling cycle over a snapshot.

    Holds the mutable state (tasks, jobs, queues, node table), the plugin instances arranged in
    tiers, and the combine logic of every extension point (see docs/scheduler.md).
    """

    def __init__(
        self, snapshot: Snapshot, config: SchedulerConfig, registry: Registry, journal: Journal | None = None
    ) -> None:
        self.snapshot = snapshot
        self.config = config
        self.registry = registry
        #: Set when the session is kept by a ``SessionCache``: records changes for rollback.
        self.journal = journal
        #: Set by :meth:`update_state` for the plugins' refresh: (removed, added) jobs.
        self._changed_jobs: tuple[list[JobInfo], list[JobInfo]] | None = None
        self._plugin_states: list[Any] | None = None
        self._open_state()
        self._open_plugins()

    def reopen(self, snapshot: Snapshot) -> None:
        """Start a new cycle over the opened state (``SessionCache``): the state has been rolled
        back (and, for a changed snapshot, updated by :meth:`update_state`), so only the per-cycle
        fields and plugins are new. Plugins restore their saved open state, refreshed for the
        jobs that changed, or are opened again."""
        self.snapshot = snapshot
        self._reset_cycle()
        self._open_plugins()

    # -- open ----------------------------------------------------------------------------------

    def _dims_of(self, snap: Snapshot) -> tuple[str, ...]:
        """The session's dimensions; keeps how many pods and PodGroups name each scalar resource
        (for :meth:`update_state`)."""
        node_scalars: set[str] = set()
        for n in snap.nodes:
            if n.allocatable.scalars:
                node_scalars.update(n.allocatable.scalars)
        uses: dict[str, int] = {}
        for t in snap.tasks:
            if t.requests.scalars:
                _count_names(uses, t.requests.scalars, 1)
        for j in snap.jobs:
            if j.min_resources is not None and j.min_resources.scalars:
                _count_names(uses, j.min_resources.scalars, 1)
        self._node_scalars = node_scalars
        self._scalar_uses = uses
        return ("cpu", "memory", "pods", *sorted(node_scalars | uses.keys()))

    def _open_state(self) -> None:
        snap = self.snapshot
        self.dims: tuple[str, ...] = self._dims_of(snap)
        self.dim_index = {d: i for i, d in enumerate(self.dims)}
        self.ndims = len(self.dims)
        self.nodes = NodeTable(snap.nodes, self.dims)
        self.total: list[float] = [float(x) for x in self.nodes.alloc.sum(axis=1)]

        #: Whether every pod request and minResources vector holds whole numbers ≥ 0 (so their
        #: sums are exact; SessionCache's plugin refresh relies on it).
        self.whole_requests = True
        classes = {pc.name: pc.value for pc in snap.priority_classes}
        defaults = [pc for pc in snap.priority_classes if pc.global_default]
        self._classes = classes
        self._default_priority = max((pc.value for pc in defaults), default=0)

        self.queues: dict[str, QueueInfo] = {q.name: QueueInfo(q) for q in sorted(snap.queues, key=lambda q: q.name)}
        for q in self.queues.values():
            parent = self.queues.get(q.parent)
            if parent is not None:
                parent.children.append(q.name)
        self.jobs: dict[str, JobInfo] = {}
        self.dropped: dict[str, JobReason] = {}
        minimums: dict[int, tuple[Resource, tuple[float, ...]]] = {}
        for j in sorted(snap.jobs, key=lambda j: j.key):
            if j.queue not in self.queues:
                self.dropped[j.key] = _queue_missing(j)
                continue
            self.jobs[j.key] = self._job_info(j, minimums)
        jobs = self.jobs
        vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]] = {}
        by_job = _group_tasks(snap.tasks)
        groups = {key: _Group(by_job[key], jobs.get(key)) for key in sorted(by_job)}
        # Every TaskInfo is new: the placed ones in (job, uid) order.
        placed = self._build_groups([(group, None) for group in groups.values()], vectors)
        self.nodes.add_bulk(placed, [t.node for t in placed])
        #: Per PodGroup key (``Task.job``): the snapshot's pods and what the session built from
        #: them, reused by :meth:`update_state` when neither the Job nor its pods changed.
        self._pod_groups = groups
        #: For :meth:`update_state` (computed there): the PodGroups by key and the pods by id.
        self._job_by_key: dict[str, Job] | None = None
        self._pods_by_id: dict[int, Task] | None = None
        #: Whether the update can be used at all (not when two pods of one node share a uid).
        self._updatable = sum(len(d) for d in self.nodes.tasks) == len(placed)
        self._tasks: dict[str, TaskInfo] | None = None
        #: Σ allocated of the opened state per queue (with ancestors), kept by SessionCache.
        self._open_totals: dict[str, list[float]] | None = None
        self._reset_cycle()

    def _job_info(self, j: Job, vectors: dict[int, tuple[Resource, tuple[float, ...]]]) -> JobInfo:
        info = JobInfo(
            j, _resolve_priority(j.priority, j.priority_class_name, self._classes, self._default_priority), self.ndims
        )
        r = j.min_resources
        if r is not None:
            # Derived once per Resource object (the entry keeps it alive, so its id stays unique).
            v = vectors.get(id(r))
            if v is None:
                v = vectors[id(r)] = (r, self.vector(r))
                if self.whole_requests and not vec.whole(v[1]):
                    self.whole_requests = False
            info.min_resources = v[1]
        return info

    def _build_groups(
        self,
        todo: Sequence[tuple[_Group, _Group | None]],
        vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]],
    ) -> list[TaskInfo]:
        """Build the TaskInfos of each group (pods in (job, uid) order) into its job, or as
        orphans when it has none; ``group.placed`` gets those sitting on a node (their ``node`` is
        set). Groups are built in the order given.

        With an old group (the previous build of the same key, in its opened state), the
        TaskInfo of a pod object it already had is moved over instead of built again (it is the
        same value). Returns the placed TaskInfos that are new, in build order."""
        on_node = ON_NODE
        pending, bound = TaskStatus.PENDING, TaskStatus.BOUND
        node_index = self.nodes.index
        classes, default_priority = self._classes, self._default_priority
        vector = self.vector
        fresh: list[TaskInfo] = []
        for group, old in todo:
            job = group.info
            placed = group.placed
            infos = group.infos
            reuse: dict[int, TaskInfo] = {}
            if old is not None and (old.info is None) == (job is None):
                for t, ti in zip(old.ordered, old.infos, strict=True):
                    if ti is not None:
                        reuse[id(t)] = ti
            for t in group.ordered:
                if reuse:
                    ti = reuse.pop(id(t), None)
                    if ti is not None:
                        if job is not None:
                            ti.job = job
                            job.add_task(ti)
                        infos.append(ti)
                        if ti.node >= 0:
                            placed.append(ti)
                        continue
                node = node_index.get(t.node_name, -1) if t.node_name else -1
                status = t.status
                if status == pending and t.node_name:
                    status = bound
                # Request vectors are derived once per Resource object (snapshots share them).
                r = t.requests
                vd = vectors.get(id(r))
                if vd is None:
                    req = vector(r)
                    vd = vectors[id(r)] = (req, derive(req))
                    if self.whole_requests and not vec.whole(req):
                        self.whole_requests = False
                if job is None:
                    # Pods without a (known) PodGroup are not scheduled, but they use node resources.
                    if node >= 0 and status in on_node:
                        orphan = TaskInfo(t, _ORPHAN_JOB, vd[0], 0, vd[1])
                        orphan.status = status
                        orphan.preemptable = False
                        orphan.node = node
                        placed.append(orphan)
                        fresh.append(orphan)
                        infos.append(orphan)
                    else:
                        infos.append(None)
                    continue
                prio = t.priority
                if prio is None:
                    prio = _resolve_priority(None, t.priority_class_name, classes, default_priority)
                info_t = TaskInfo(t, job, vd[0], prio, vd[1])
                info_t.status = status
                job.add_task(info_t)
                infos.append(info_t)
                if node >= 0 and status in on_node:
                    info_t.node = node
                    placed.append(info_t)
                    fresh.append(info_t)
        return fresh

    @property
    def tasks(self) -> dict[str, TaskInfo]:
        """Every pod of a known PodGroup by uid (built on first use)."""
        out = self._tasks
        if out is None:
            out = {}
            for job in self.jobs.values():
                out.update(job.tasks)
            self._tasks = out
        return out

    def update_state(self, snapshot: Snapshot, limit: float = 1.0) -> bool:
        """Make the opened state (as a ``SessionCache`` rolled it back) that of ``snapshot``.

        ``snapshot`` must hold the same node, queue and priority-class objects as the current one
        (checked by the cache). Pods and PodGroups are compared by identity (set differences of
        ``id()``, while both snapshots are alive): a PodGroup whose ``Job`` object and pod objects
        are all unchanged keeps its JobInfo and TaskInfos as they are; every other one gets a new
        JobInfo, reusing the TaskInfo of each pod object it already had; the node table is
        updated by the difference (integer sums, so exactly the columns a fresh open computes)
        and node task lists keep the order of a fresh open. The result is the state
        ``Session(snapshot, ...)`` would open, at a cost in Python of O(changed pods and jobs);
        plugins are then refreshed by :meth:`reopen`.

        Returns False when the update cannot be made exactly (resource dimensions changed,
        duplicate PodGroup keys or pod objects, duplicate uids in a changed PodGroup or on a
        node) or would not pay (more pods, or PodGroups, were added and removed than ``limit``
        times their number); the session must then be discarded.
        """
        old_snap = self.snapshot
        if not self._updatable:
            return False
        if abs(len(snapshot.tasks) - len(old_snap.tasks)) > limit * len(snapshot.tasks) or abs(
            len(snapshot.jobs) - len(old_snap.jobs)
        ) > limit * len(snapshot.jobs):
            return False  # at least that many were added or removed (see below)
        old_pods = self._pods_by_id
        if old_pods is None:
            old_pods = dict(zip(map(id, old_snap.tasks), old_snap.tasks, strict=True))
            if len(old_pods) != len(old_snap.tasks):
                return False
        new_pods = dict(zip(map(id, snapshot.tasks), snapshot.tasks, strict=True))
        if len(new_pods) != len(snapshot.tasks):
            return False
        gone_ids = old_pods.keys() - new_pods.keys()
        added_t = [new_pods[i] for i in new_pods.keys() - old_pods.keys()]
        removed_t = [old_pods[i] for i in gone_ids]
        old_pgs = dict(zip(map(id, old_snap.jobs), old_snap.jobs, strict=True))
        new_pgs = dict(zip(map(id, snapshot.jobs), snapshot.jobs, strict=True))
        if len(new_pgs) != len(snapshot.jobs):
            return False
        added_j = [new_pgs[i] for i in new_pgs.keys() - old_pgs.keys()]
        removed_j = [old_pgs[i] for i in old_pgs.keys() - new_pgs.keys()]
        if len(added_t) + len(removed_t) > limit * len(snapshot.tasks) or len(added_j) + len(removed_j) > limit * len(
            snapshot.jobs
        ):
            return False  # much of it changed: opening afresh is cheaper

        uses = dict(self._scalar_uses)
        for delta, pods in ((1, added_t), (-1, removed_t)):
            for pod in pods:
                if pod.requests.scalars:
                    _count_names(uses, pod.requests.scalars, delta)
        for delta, pgs in ((1, added_j), (-1, removed_j)):
            for pg in pgs:
                if pg.min_resources is not None and pg.min_resources.scalars:
                    _count_names(uses, pg.min_resources.scalars, delta)
        if ("cpu", "memory", "pods", *sorted(self._node_scalars | uses.keys())) != self.dims:
            return False
        if self._job_by_key is None:
            self._job_by_key = {pg.key: pg for pg in old_snap.jobs}
            if len(self._job_by_key) != len(old_snap.jobs):
                return False  # two PodGroups with one key
        by_key = dict(self._job_by_key)
        for pg in removed_j:
            if by_key.get(pg.key) is not pg:
                return False
            del by_key[pg.key]
        for pg in added_j:
            if pg.key in by_key:
                return False
            by_key[pg.key] = pg

        changed = {pod.job for pod in added_t}
        changed.update(pod.job for pod in removed_t)
        changed.update(pg.key for pg in added_j)
        changed.update(pg.key for pg in removed_j)
        arrived = _group_tasks(added_t)
        old_jobs, old_groups, queues = self.jobs, self._pod_groups, self.queues
        jobs = dict(old_jobs)
        groups = dict(old_groups)
        dropped = dict(self.dropped)
        removed: list[JobInfo] = []
        added: list[JobInfo] = []
        gone: list[TaskInfo] = []
        vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]] = {}
        minimums: dict[int, tuple[Resource, tuple[float, ...]]] = {}
        new_keys = False
        todo: list[tuple[_Group, _Group | None]] = []
        for key in sorted(changed):
            j: Job | None = by_key.get(key)
            if j is not None and j.queue not in queues:
                if key not in dropped:
                    new_keys = True
                dropped[key] = _queue_missing(j)
                j = None
            elif dropped:
                dropped.pop(key, None)
            old = old_jobs.get(key)
            if old is not None:
                removed.append(old)
            if j is not None:
                info = self._job_info(j, minimums)
                if old is None:
                    new_keys = True
                jobs[key] = info
                added.append(info)
            else:
                info = None
                if old is not None:
                    del jobs[key]
            group = old_groups.get(key)
            if group is None:
                raw = arrived.get(key)
                if raw is None:
                    continue
            else:
                raw = [pod for pod in group.raw if id(pod) not in gone_ids]
                raw.extend(arrived.get(key, ()))
                if not raw:
                    gone.extend(group.placed)
                    del groups[key]
                    continue
            if len(raw) > 1 and len({pod.uid for pod in raw}) != len(raw):
                return False  # the order of equal uids would depend on the snapshot's order
            rebuilt = groups[key] = _Group(raw, info)
            todo.append((rebuilt, group))
        placed = self._build_groups(todo, vectors)
        for rebuilt, group in todo:
            if group is not None and group.placed:
                kept = {id(t) for t in rebuilt.placed}
                gone.extend(t for t in group.placed if id(t) not in kept)
        if new_keys:
            # Keys not seen before were appended: put the dicts in key order again if needed.
            keys = list(jobs)
            if keys != sorted(keys):
                jobs = {k: jobs[k] for k in sorted(keys)}
            keys = list(dropped)
            if keys != sorted(keys):
                dropped = {k: dropped[k] for k in sorted(keys)}

        table = self.nodes
        lists = table.tasks
        for t in gone:
            d = lists[t.node]
            if d.get(t.uid) is not t:
                return False
            del d[t.uid]
        table.account(gone, [t.node for t in gone], -1)
        for i, items in _group_by(placed, _NODE_OF).items():
            if not _insert_ordered(lists, i, items):
                return False
        table.account(placed, [t.node for t in placed], 1)
        self.snapshot = snapshot
        self.jobs = jobs
        self.dropped = dropped
        self._pod_groups = groups
        self._job_by_key = by_key
        self._scalar_uses = uses
        self._pods_by_id = new_pods
        self._tasks = None
        self._changed_jobs = (removed, added)
        totals = self._open_totals
        if totals is not None:
            for job in removed:
                self._add_to_queues(totals, job.queue, job.allocated, -1.0)
            for job in added:
                self._add_to_queues(totals, job.queue, job.allocated, 1.0)
        return True

    def _reset_cycle(self) -> None:
        self.binds: list[TaskInfo] = []
        self.evictions: list[Eviction] = []
        self.unschedulable_jobs: set[str] = set()
        self.predicate_offset = 0

    def _open_plugins(self) -> None:
        self.tiers: list[list[Plugin]] = []
        self._points: dict[ExtensionPoint, list[list[Any]]] = {}
        handlers: list[AllocateHandler] = []
        closers: list[SessionClose] = []
        saved = self._plugin_states
        changed = self._changed_jobs
        self._changed_jobs = None
        flat: list[Plugin] = []
        states: list[Any] = []
        opened: list[int] = []
        for tier in self.config.tiers:
            plugins: list[Plugin] = []
            for opt in tier.plugins:
                cls = self.registry.plugins[opt.name]
                plugin = cls(opt.arguments, opt.hierarchy)
                state = saved[len(flat)] if saved is not None else None
                if state is not None and changed is not None:
                    state = plugin.refresh_open_state(self, state, changed[0], changed[1])
                if state is not None:
                    plugin.restore_open_state(self, state)
                else:
                    plugin.on_session_open(self)
                    opened.append(len(flat))
                plugins.append(plugin)
                flat.append(plugin)
                states.append(state)
            self.tiers.append(plugins)
        if self.journal is not None:
            # Kept by a SessionCache: the next cycle over this opened state restores these.
            for k in opened:
                states[k] = flat[k].save_open_state()
            self._plugin_states = states
        for point, cap in _CAPABILITIES.items():
            tiers: list[list[Any]] = []
            for tier, plugins in zip(self.config.tiers, self.tiers, strict=True):
                tiers.append(
                    [
                        p
                        for opt, p in zip(tier.plugins, plugins, strict=True)
                        if isinstance(p, cap) and (point in _ALWAYS_ON or opt.enabled(point))
                    ]
                )
            self._points[point] = [t for t in tiers if t]
        for plugins in self.tiers:
            for p in plugins:
                if isinstance(p, AllocateHandler):
                    handlers.append(p)
                if isinstance(p, SessionClose):
                    closers.append(p)
        self.handlers = handlers
        self.closers = closers
        self._flat = {point: [p for t in tiers for p in t] for point, tiers in self._points.items()}
        self.job_key = self._job_key_fn()
        self.task_key = self._task_key_fn()
        self.node_local_filters = all(p.node_local_filters for p in self._flat[ExtensionPoint.PREDICATE])
        #: Node-selection caches (see actions/common.py): feasible/idle masks per task shape and
        #: per-node scores per plugin key, each with the position in ``nodes.changes`` it is
        #: current up to.
        self.mask_cache: dict[Any, list[Any]] = {}
        self._score_cache: dict[Any, list[Any]] = {}
        self._groups: dict[int, tuple[Filter, BoolArray, list[tuple[str, IntArray]]]] = {}
        self._fit_cache: dict[Any, tuple[int, dict[str, int], list[Filter]]] = {}
        #: Parts of reason messages by what they are made of (see job_fit_error).
        self._texts: dict[tuple[Any, ...], str] = {}

    def _job_key_fn(self) -> Callable[[JobInfo], tuple[Any, ...]] | None:
        plugins = self._flat[ExtensionPoint.JOB_ORDER]
        if not all(p.has_job_order_key for p in plugins):
            return None
        fns = tuple(p.job_order_key for p in plugins)
        if len(fns) == 3:
            f0, f1, f2 = fns
            return lambda j: (f0(j), f1(j), f2(j), j.creation, j.uid)
        return lambda j: (*(f(j) for f in fns), j.creation, j.uid)

    def _task_key_fn(self) -> Callable[[TaskInfo], tuple[Any, ...]] | None:
        plugins = self._flat[ExtensionPoint.TASK_ORDER]
        if not all(p.has_task_order_key for p in plugins):
            return None
        fns = tuple(p.task_order_key for p in plugins)
        if len(fns) == 1:
            (f0,) = fns
            return lambda t: (f0(t), t.index, t.creation, t.uid)
        return lambda t: (*(f(t) for f in fns), t.index, t.creation, t.uid)

    # -- helpers -------------------------------------------------------------------------------

    def vector(self, r: Resource) -> tuple[float, ...]:
        """Return ``r`` as a vector in this session's dimension order (unknown scalars dropped)."""
        out = [0.0] * self.ndims
        out[0] = r.cpu
        out[1] = r.memory
        out[2] = r.pods
        for k, v in r.scalars.items():
            i = self.dim_index.get(k)
            if i is not None:
                out[i] = v
        return tuple(out)

    def capability_vector(self, r: Resource | None) -> list[float]:
        """Return a quota vector where unspecified dimensions are unlimited (``inf``)."""
        out = [float("inf")] * self.ndims
        if r is None:
            return out
        if r.cpu > 0:
            out[0] = r.cpu
        if r.memory > 0:
            out[1] = r.memory
        if r.pods > 0:
            out[2] = r.pods
        for k, v in r.scalars.items():
            i = self.dim_index.get(k)
            if i is not None:
                out[i] = v
        return out

    def to_dict(self, v: Sequence[float]) -> dict[str, int]:
        """Return the non-zero, finite dimensions of ``v`` by name (rounded to ints)."""
        return {d: round(x) for d, x in zip(self.dims, v, strict=True) if x and x != float("inf")}

    def plugin(self, name: str) -> Plugin:
        """Return the session's instance of plugin ``name`` (KeyError if not configured)."""
        for plugins in self.tiers:
            for p in plugins:
                if p.name == name:
                    return p
        raise KeyError(name)

    @property
    def failures_repeatable(self) -> bool:
        """Whether every plugin consulted by allocate's placement of a task (and its overused
        check) declares ``Plugin.failures_repeatable``."""
        points = (
            ExtensionPoint.ALLOCATABLE,
            ExtensionPoint.JOB_READY,
            ExtensionPoint.JOB_PIPELINED,
            ExtensionPoint.PREDICATE,
            ExtensionPoint.OVERUSED,
        )
        return all(p.failures_repeatable for point in points for p in self._flat[point])

    def has(self, point: ExtensionPoint) -> bool:
        """Return whether any enabled plugin implements ``point``."""
        return bool(self._flat.get(point))

    # -- ordering ------------------------------------------------------------------------------

    def queue_less(self, a: QueueInfo, b: QueueInfo) -> bool:
        """Return whether queue ``a`` is served before ``b``."""
        for p in self._flat[ExtensionPoint.QUEUE_ORDER]:
            r = p.queue_order(a, b)
            if r:
                return bool(r < 0)
        return (a.creation, a.uid) < (b.creation, b.uid)

    def victim_queue_less(self, a: QueueInfo, b: QueueInfo, preemptor: QueueInfo | None) -> bool:
        """Return whether victims should come from queue ``a`` before ``b``."""
        for p in self._flat[ExtensionPoint.VICTIM_QUEUE_ORDER]:
            r = p.victim_queue_order(a, b, preemptor)
            if r:
                return bool(r < 0)
        return not self.queue_less(a, b)

    def job_less(self, a: JobInfo, b: JobInfo) -> bool:
        """Return whether job ``a`` is served before ``b``."""
        for p in self._flat[ExtensionPoint.JOB_ORDER]:
            r = p.job_order(a, b)
            if r:
                return bool(r < 0)
        return (a.creation, a.uid) < (b.creation, b.uid)

    def task_less(self, a: TaskInfo, b: TaskInfo) -> bool:
        """Return whether task ``a`` is served before ``b``."""
        for p in self._flat[ExtensionPoint.TASK_ORDER]:
            r = p.task_order(a, b)
            if r:
                return bool(r < 0)
        return (a.index, a.creation, a.uid) < (b.index, b.creation, b.uid)

    def victim_less(self, a: TaskInfo, b: TaskInfo, preemptor: TaskInfo | None) -> bool:
        """Return whether victim ``a`` is evicted before ``b`` (Volcano's victim order)."""
        if a.job is b.job:
            return not self.task_less(a, b)
        a_in = a.job.key in self.jobs
        b_in = b.job.key in self.jobs
        if a_in != b_in:
            return not a_in
        if a.job.queue == b.job.queue or preemptor is None:
            key = self.job_key
            if key is not None:
                # Keys evaluated now (jobs change while victims are queued): same as job_less.
                ka, kb = key(a.job), key(b.job)
                if ka != kb:
                    return not ka < kb
                return not self.task_less(a, b)
            if self.job_less(a.job, b.job) != self.job_less(b.job, a.job):
                return not self.job_less(a.job, b.job)
            return not self.task_less(a, b)
        pq = self.queues.get(preemptor.job.queue)
        return self.victim_queue_less(self.queues[a.job.queue], self.queues[b.job.queue], pq)

    # -- job-level votes -----------------------------------------------------------------------

    def job_valid(self, job: JobInfo) -> Any:
        """Return the first failing ``Fit`` of job_valid, or None when the job is valid."""
        for p in self._flat[ExtensionPoint.JOB_VALID]:
            fit = p.job_valid(job)
            if fit is not None:
                return fit
        return None

    def _vote(self, point: ExtensionPoint, method: str, job: JobInfo) -> bool:
        for tier in self._points[point]:
            permit = False
            for p in tier:
                vote = getattr(p, method)(job)
                if vote == Vote.REJECT:
                    return False
                if vote == Vote.PERMIT:
                    permit = True
            if permit:
                return True
        return True

    def job_enqueueable(self, job: JobInfo) -> bool:
        """Tier vote over job_enqueueable (any reject ⇒ no; a permit decides its tier)."""
        return self._vote(ExtensionPoint.JOB_ENQUEUEABLE, "job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        """Notify every job_enqueued plugin."""
        for p in self._flat[ExtensionPoint.JOB_ENQUEUED]:
            p.job_enqueued(job)

    def job_pipelined(self, job: JobInfo) -> bool:
        """Tier vote over job_pipelined."""
        return self._vote(ExtensionPoint.JOB_PIPELINED, "job_pipelined", job)

    def job_ready(self, job: JobInfo) -> bool:
        """AND over job_ready."""
        return all(p.job_ready(job) for p in self._flat[ExtensionPoint.JOB_READY])

    def job_starving(self, job: JobInfo) -> bool:
        """AND within the first tier implementing job_starving; nobody ⇒ false."""
        tiers = self._points[ExtensionPoint.JOB_STARVING]
        if not tiers:
            return False
        return all(p.job_starving(job) for p in tiers[0])

    def overused(self, queue: QueueInfo) -> bool:
        """OR over overused."""
        return any(p.overused(queue) for p in self._flat[ExtensionPoint.OVERUSED])

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AND over allocatable."""
        return all(p.allocatable(queue, task) for p in self._flat[ExtensionPoint.ALLOCATABLE])

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AND over preemptive."""
        return all(p.preemptive(queue, task) for p in self._flat[ExtensionPoint.PREEMPTIVE])

    def _victims(
        self, point: ExtensionPoint, method: str, actor: TaskInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo]:
        victims: list[TaskInfo] | None = None
        for tier in self._points[point]:
            for p in tier:
                chosen = getattr(p, method)(actor, candidates)
                if chosen is None:
                    continue
                if not chosen:
                    victims = None
                    break
                if not victims:
                    victims = list(chosen)
                else:
                    keep = {t.uid for t in chosen}
                    victims = [v for v in victims if v.uid in keep]
            if victims:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims for ``preemptor`` among ``candidates`` (tier intersection rule)."""
        return self._victims(ExtensionPoint.PREEMPTABLE, "preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims for ``reclaimer`` among ``candidates`` (tier intersection rule)."""
        return self._victims(ExtensionPoint.RECLAIMABLE, "reclaimable", reclaimer, candidates)

    # -- node-level ----------------------------------------------------------------------------

    def filters(self, task: TaskInfo) -> list[Filter]:
        """Return every predicate filter for ``task``, in tier/plugin order."""
        out: list[Filter] = []
        for p in self._flat[ExtensionPoint.PREDICATE]:
            out.extend(p.predicate(task))
        return out

    def predicate_mask(self, task: TaskInfo, unresolvable_only: bool = False) -> BoolArray:
        """Return the nodes passing every predicate (or only the unresolvable ones)."""
        mask = np.ones(len(self.nodes), dtype=np.bool_)
        for f in self.filters(task):
            if unresolvable_only and not f.unresolvable:
                continue
            mask &= f.passed
        return mask

    def node_scores(self, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Return the summed node_order scores of ``nodes`` for ``task``.

        Plugins that split their score (``NodeOrder.node_score_key``) contribute their per-node
        part from a session cache refreshed only at nodes that changed since it was last read.
        """
        plugins = self._flat[ExtensionPoint.NODE_ORDER]
        if len(plugins) == 1:
            p = plugins[0]
            key = p.node_score_key(task)
            if key is not None:
                # One plugin with a split score: its parts alone (the same values; only a zero's
                # sign may differ from summing onto zeros, which no comparison sees).
                part: FloatArray = self._local_scores(p, key, task)[nodes]
                extra = p.set_scores(task, nodes)
                return part if extra is None else part + extra
        total = np.zeros(len(nodes), dtype=np.float64)
        for p in plugins:
            key = p.node_score_key(task)
            if key is None:
                total += p.node_order(task, nodes)
                continue
            part = self._local_scores(p, key, task)[nodes]
            extra = p.set_scores(task, nodes)
            if extra is not None:
                part += extra
            total += part
        return total

    def _local_scores(self, p: NodeOrder, key: Any, task: TaskInfo) -> FloatArray:
        changes = self.nodes.changes
        ckey = (id(p), key)
        entry = self._score_cache.get(ckey)
        n = len(self.nodes)
        if entry is None:
            if len(self._score_cache) >= _CACHE_ENTRIES:
                self._score_cache.clear()  # bounded memory; entries are recomputed on demand
            values = p.local_scores(task, np.arange(n, dtype=np.intp)).astype(np.float64, copy=True)
            self._score_cache[ckey] = [values, len(changes), p]
            return values
        values, pos = entry[0], entry[1]
        end = len(changes)
        if pos != end:
            if end - pos > _REFRESH_LIMIT:
                dirty = np.unique(np.asarray(changes[pos:end], dtype=np.intp))
                values[dirty] = p.local_scores(task, dirty)
            else:
                for i in set(changes[pos:end]):
                    values[i] = p.local_score_at(task, i)
            entry[1] = end
        out: FloatArray = values
        return out

    def fit_errors(self, task: TaskInfo, nodes: IntArray | None = None) -> dict[str, int]:
        """Return ``{reason: node count}`` for why ``task`` fits on none of ``nodes`` (all).

        Over all nodes the answer is remembered per task shape until a node changes (filters
        being node-local, nothing else can change it)."""
        if nodes is not None or not self.node_local_filters:
            return self._fit_errors(task, nodes)
        filters = self.filters(task)
        key = (tuple((d, v) for d, v in enumerate(task.req) if v > 0), *(id(f) for f in filters))
        end = len(self.nodes.changes)
        hit = self._fit_cache.get(key)
        if hit is not None and hit[0] == end:
            return dict(hit[1])
        counts = self._fit_errors(task, None)
        if len(self._fit_cache) >= _CACHE_ENTRIES:
            self._fit_cache.clear()
        self._fit_cache[key] = (end, dict(counts), filters)
        return counts

    def _fit_errors(self, task: TaskInfo, nodes: IntArray | None) -> dict[str, int]:
        table = self.nodes
        idx = np.arange(len(table)) if nodes is None else nodes
        remaining = np.ones(len(idx), dtype=np.bool_)
        counts: dict[str, int] = {}
        req = task.req
        for d, v in enumerate(req):
            if v > 0 and d != vec.PODS:  # pod slots are reported last (predicates names them first)
                short = remaining & (table.future[d, idx] < v)
                n = int(short.sum())
                if n:
                    counts[f"Insufficient {self.dims[d]}"] = n
                    remaining &= ~short
        for f in self.filters(task):
            failing = remaining & ~f.passed[idx]
            if not failing.any():
                continue
            if f.reasons is None:
                counts[f.reason] = counts.get(f.reason, 0) + int(failing.sum())
            elif nodes is None:
                # Same counts, inserted in order of each reason's first failing node.
                found = []
                for reason, ix in self._reason_groups(f):
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

    def _reason_groups(self, f: Filter) -> list[tuple[str, IntArray]]:
        """The failing nodes of a per-node-reason filter grouped by reason (cached per filter)."""
        entry = self._groups.get(id(f))
        if entry is None or entry[0] is not f or not np.array_equal(entry[1], f.passed):
            assert f.reasons is not None
            groups: dict[str, list[int]] = {}
            for i in np.flatnonzero(~f.passed).tolist():
                groups.setdefault(f.reasons[i], []).append(i)
            entry = (f, f.passed.copy(), [(r, np.asarray(ix, dtype=np.intp)) for r, ix in groups.items()])
            self._groups[id(f)] = entry
        return entry[2]

    def fits_now(self, task: TaskInfo, i: int) -> bool:
        """Whether ``task`` fits node ``i``'s future idle and passes every predicate there."""
        fut = self.nodes.future
        for d, v in enumerate(task.req):
            if v > 0 and fut[d, i] < v:  # pods included, as Volcano's LessEqual
                return False
        return all(bool(f.passed[i]) for f in self.filters(task))

    def fits_without(self, task: TaskInfo, i: int, removed: frozenset[str]) -> bool:
        """Whether ``task`` fits node ``i``'s future idle and passes every predicate there if the
        pods ``removed`` were gone: their resources are already released in the node table (the
        dry run evicted them); predicates that can (``passes_without``) also forget the pods."""
        fut = self.nodes.future
        for d, v in enumerate(task.req):
            if v > 0 and fut[d, i] < v:
                return False
        for p in self._flat[ExtensionPoint.PREDICATE]:
            passes = getattr(p, "passes_without", None)
            if passes is not None:
                if not passes(task, i, removed):
                    return False
            elif not all(bool(f.passed[i]) for f in p.predicate(task)):
                return False
        return True

    # -- state changes (used by Statement) ----------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        """Run allocate event handlers."""
        for h in self.handlers:
            h.on_allocate(task)

    def on_deallocate(self, task: TaskInfo) -> None:
        """Run deallocate event handlers."""
        for h in self.handlers:
            h.on_deallocate(task)

    def place(self, task: TaskInfo, node: int, status: TaskStatus) -> None:
        """Move a Pending task to ``status`` on ``node`` and notify handlers."""
        if self.journal is not None:
            self.journal.touch(task, self.nodes, node)
        task.job.set_status(task, status)
        self.nodes.add(task, node)
        self.on_allocate(task)

    def unplace(self, task: TaskInfo) -> None:
        """Return an Allocated/Pipelined task to Pending and notify handlers."""
        if self.journal is not None:
            self.journal.touch(task, self.nodes, -1)
        self.nodes.remove(task)
        task.job.set_status(task, TaskStatus.PENDING)
        self.on_deallocate(task)

    def evict(self, task: TaskInfo) -> TaskStatus:
        """Mark a running task Releasing (session-only); return its previous status."""
        old = task.status
        node = task.node
        if self.journal is not None:
            self.journal.touch(task, self.nodes, -1)
        self.nodes.remove(task)
        task.job.set_status(task, TaskStatus.RELEASING)
        self.nodes.add(task, node)
        self.on_deallocate(task)
        return old

    def unevict(self, task: TaskInfo, old: TaskStatus) -> None:
        """Undo :meth:`evict`."""
        node = task.node
        if self.journal is not None:
            self.journal.touch(task, self.nodes, -1)
        self.nodes.remove(task)
        task.job.set_status(task, old)
        self.nodes.add(task, node)
        self.on_allocate(task)

    def dispatch(self, task: TaskInfo) -> None:
        """Send an Allocated task for binding (status Binding)."""
        if self.journal is not None:
            self.journal.touch(task, self.nodes, -1)
        task.job.set_status(task, TaskStatus.BINDING)
        self.binds.append(task)

    # -- reasons -------------------------------------------------------------------------------

    def set_reason(self, job: JobInfo, reason: JobReason) -> None:
        """Record why ``job`` could not progress (the latest reason wins)."""
        job.reason = reason

    # -- close ---------------------------------------------------------------------------------

    def close(self, timings: dict[str, float]) -> CycleResult:
        """Run close handlers, compute PodGroup phases and reasons, and return the result."""
        for c in self.closers:
            c.on_session_close(self)
        podgroups: dict[str, str] = {}
        reasons: dict[str, JobReason] = dict(self.dropped)
        # Kept by a SessionCache: a job this cycle did not touch (no task changed, phase, reason
        # and fit errors as opened) closes as in the last cycle that did not touch it either, so
        # its phase and reason are remembered on the JobInfo (reused only while it is unchanged).
        journal = self.journal
        touched = journal.jobs if journal is not None and not journal.abandoned else None
        unschedulable = self.unschedulable_jobs
        for key, job in self.jobs.items():
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
                    memo = job.closed = (flag, self._phase(job), self._job_reason(job))
                phase, reason = memo[1], memo[2]
            else:
                phase = self._phase(job)
                reason = self._job_reason(job)
            if phase != job.job.phase:
                podgroups[key] = str(phase)
            if reason is not None:
                reasons[key] = reason
        pipelined = {
            t.key: self.nodes.names[t.node]
            for job in self.jobs.values()
            if job.counts[TaskStatus.PIPELINED]
            for t in job.tasks.values()
            if t.status == TaskStatus.PIPELINED
        }
        return CycleResult(
            binds={t.key: self.nodes.names[t.node] for t in self.binds},
            bind_uids={t.uid: self.nodes.names[t.node] for t in self.binds},
            evictions=tuple(self.evictions),
            pipelined=pipelined,
            podgroups=podgroups,
            unschedulable=reasons,
            queue_allocated=self._queue_allocated(),
            queue_deserved=self._queue_deserved(),
            timings=timings,
        )

    def _queue_deserved(self) -> dict[str, dict[str, int]]:
        for plugins in self.tiers:
            for p in plugins:
                if isinstance(p, QueueShares):
                    return {name: self.to_dict(v) for name, v in sorted(p.queue_deserved().items())}
        return {}

    def _phase(self, job: JobInfo) -> JobPhase:
        c = job.counts
        if c[TaskStatus.RUNNING] > 0 and job.key in self.unschedulable_jobs:
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

    def _add_to_queues(self, totals: dict[str, list[float]], queue: str, v: Sequence[float], sign: float) -> None:
        """Add ``sign`` x ``v`` to ``queue`` and its ancestors in ``totals``."""
        q = queue
        seen: set[str] = set()
        while q in totals and q not in seen:
            seen.add(q)
            if sign > 0:
                vec.iadd(totals[q], v)
            else:
                vec.isub(totals[q], v)
            q = self.queues[q].parent

    def _queue_allocated(self) -> dict[str, dict[str, int]]:
        journal = self.journal
        if journal is None or journal.abandoned or not self.whole_requests:
            totals = {name: [0.0] * self.ndims for name in self.queues}
            for job in self.jobs.values():
                self._add_to_queues(totals, job.queue, job.allocated, 1.0)
            return {name: self.to_dict(v) for name, v in totals.items()}
        # Kept by a SessionCache: the opened state's sums are kept with it, and only the jobs
        # this cycle touched (journaled with their opened allocation) add their difference.
        # Whole numbers below 2**53, so the same floats as summing every job afresh.
        base = self._open_totals
        if base is None:
            base = {name: [0.0] * self.ndims for name in self.queues}
            for job in self.jobs.values():
                saved = journal.jobs.get(id(job))
                self._add_to_queues(base, job.queue, saved[3] if saved is not None else job.allocated, 1.0)
            self._open_totals = base
        totals = {name: list(v) for name, v in base.items()}
        jobs = self.jobs
        for job, _counts, _roles, allocated, _ready, _be in journal.jobs.values():
            if jobs.get(job.key) is job:
                self._add_to_queues(totals, job.queue, allocated, -1.0)
                self._add_to_queues(totals, job.queue, job.allocated, 1.0)
        if not vec.below_exact_limit(base.values()) or not vec.below_exact_limit(totals.values()):
            self._open_totals = None
            totals = {name: [0.0] * self.ndims for name in self.queues}
            for job in self.jobs.values():
                self._add_to_queues(totals, job.queue, job.allocated, 1.0)
        return {name: self.to_dict(v) for name, v in totals.items()}

    def job_fit_error(self, job: JobInfo) -> str:
        """Return Volcano's job fit error text (status histogram and first node fit error).

        Both parts are remembered for the session by what they are made of (many pending jobs
        share their status counts and their fit errors)."""
        texts = self._texts
        if len(texts) >= _CACHE_ENTRIES:
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

    def _job_reason(self, job: JobInfo) -> JobReason | None:
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
                f"resources being released: {self.job_fit_error(job)}"
            )
            return JobReason(kind, message, "", {}, numbers)
        if waiting == 0:
            return None
        return JobReason(
            ReasonKind.NOT_REACHED,
            f"{waiting}/{total} tasks not considered this cycle: {self.job_fit_error(job)}",
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


class _OrphanJob(JobInfo):
    """Placeholder job of pods that have no PodGroup in the session."""


_ORPHAN_JOB: JobInfo = _OrphanJob.__new__(_OrphanJob)
_ORPHAN_JOB.key = ""
_ORPHAN_JOB.uid = ""
_ORPHAN_JOB.queue = ""

Timer = Callable[[], float]
#: Above this many node changes since a cache was read, refresh it with one vector call.
_REFRESH_LIMIT = 32
#: Most task shapes a node-selection cache keeps before it starts over.
_CACHE_ENTRIES = 512
ALLOCATED_STATUSES = ALLOCATED
