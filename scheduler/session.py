"""Session: builds the per-cycle state from a snapshot, dispatches extension points over tiers
and turns the final state into a CycleResult."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

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
from scheduler.info import ALLOCATED, ON_NODE, SCHEDULED, JobInfo, QueueInfo, TaskInfo, derive
from scheduler.model import JobPhase, Resource, Task, TaskStatus
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


def _sorted_tasks(tasks: Sequence[Task]) -> list[Task]:
    """``sorted(tasks, key=lambda t: (t.job, t.uid))`` (stable), grouping by job first: many
    small sorts are much cheaper than one sort on tuple keys."""
    by_job: dict[str, list[Task]] = {}
    for t in tasks:
        group = by_job.get(t.job)
        if group is None:
            by_job[t.job] = [t]
        else:
            group.append(t)
    out: list[Task] = []
    for job in sorted(by_job):
        group = by_job[job]
        if len(group) > 1:
            group.sort(key=_UID)
        out.extend(group)
    return out


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
        self._open_state()
        self._open_plugins()

    def reopen(self, snapshot: Snapshot) -> None:
        """Start a new cycle over a snapshot made of the same objects (``SessionCache``): the
        opened state has been rolled back, so only the per-cycle fields and plugins are new."""
        self.snapshot = snapshot
        self._reset_cycle()
        self._open_plugins()

    # -- open ----------------------------------------------------------------------------------

    def _open_state(self) -> None:
        snap = self.snapshot
        scalar_names: set[str] = set()
        for n in snap.nodes:
            scalar_names.update(n.allocatable.scalars)
        for t in snap.tasks:
            scalar_names.update(t.requests.scalars)
        for j in snap.jobs:
            if j.min_resources is not None:
                scalar_names.update(j.min_resources.scalars)
        self.dims: tuple[str, ...] = ("cpu", "memory", "pods", *sorted(scalar_names))
        self.dim_index = {d: i for i, d in enumerate(self.dims)}
        self.ndims = len(self.dims)
        self.nodes = NodeTable(snap.nodes, self.dims)
        self.total: list[float] = [float(x) for x in self.nodes.alloc.sum(axis=1)]

        classes = {pc.name: pc.value for pc in snap.priority_classes}
        defaults = [pc for pc in snap.priority_classes if pc.global_default]
        default_priority = max((pc.value for pc in defaults), default=0)

        self.queues: dict[str, QueueInfo] = {q.name: QueueInfo(q) for q in sorted(snap.queues, key=lambda q: q.name)}
        for q in self.queues.values():
            parent = self.queues.get(q.parent)
            if parent is not None:
                parent.children.append(q.name)
        self.jobs: dict[str, JobInfo] = {}
        self.dropped: dict[str, JobReason] = {}
        for j in sorted(snap.jobs, key=lambda j: j.key):
            if j.queue not in self.queues:
                self.dropped[j.key] = JobReason(
                    ReasonKind.QUEUE_MISSING,
                    f"queue {j.queue!r} of podgroup {j.key} does not exist",
                    numbers={"queue": j.queue},
                )
                continue
            info = JobInfo(
                j,
                _resolve_priority(j.priority, j.priority_class_name, classes, default_priority),
                self.ndims,
            )
            if j.min_resources is not None:
                info.min_resources = self.vector(j.min_resources)
            self.jobs[j.key] = info
        self.tasks: dict[str, TaskInfo] = {}
        on_node = ON_NODE
        pending, bound = TaskStatus.PENDING, TaskStatus.BOUND
        node_index = self.nodes.index
        jobs = self.jobs
        vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]] = {}
        placed: list[TaskInfo] = []
        placed_on: list[int] = []
        for t in _sorted_tasks(snap.tasks):
            node = node_index.get(t.node_name, -1) if t.node_name else -1
            job = jobs.get(t.job)
            status = t.status
            if status == pending and t.node_name:
                status = bound
            # Request vectors are derived once per Resource object (snapshots share them).
            r = t.requests
            vd = vectors.get(id(r))
            if vd is None:
                req = self.vector(r)
                vd = vectors[id(r)] = (req, derive(req))
            if job is None:
                # Pods without a (known) PodGroup are not scheduled, but they use node resources.
                if node >= 0 and status in on_node:
                    orphan = TaskInfo(t, _ORPHAN_JOB, vd[0], 0, vd[1])
                    orphan.status = status
                    orphan.preemptable = False
                    placed.append(orphan)
                    placed_on.append(node)
                continue
            prio = t.priority
            if prio is None:
                prio = _resolve_priority(None, t.priority_class_name, classes, default_priority)
            info_t = TaskInfo(t, job, vd[0], prio, vd[1])
            info_t.status = status
            job.add_task(info_t)
            self.tasks[t.uid] = info_t
            if node >= 0 and status in on_node:
                placed.append(info_t)
                placed_on.append(node)
        self.nodes.add_bulk(placed, placed_on)
        self._reset_cycle()

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
        saved: list[Any] | None = getattr(self, "_plugin_states", None)
        flat: list[Plugin] = []
        for tier in self.config.tiers:
            plugins: list[Plugin] = []
            for opt in tier.plugins:
                cls = self.registry.plugins[opt.name]
                plugin = cls(opt.arguments, opt.hierarchy)
                state = saved[len(flat)] if saved is not None else None
                if state is not None:
                    plugin.restore_open_state(self, state)
                else:
                    plugin.on_session_open(self)
                plugins.append(plugin)
                flat.append(plugin)
            self.tiers.append(plugins)
        if self.journal is not None and saved is None:
            # Kept by a SessionCache: the next cycle over the same opened state restores these.
            self._plugin_states = [p.save_open_state() for p in flat]
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
        total = np.zeros(len(nodes), dtype=np.float64)
        for p in self._flat[ExtensionPoint.NODE_ORDER]:
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
        key = (tuple((d, v) for d, v in enumerate(task.req) if v > 0 and d != vec.PODS), *(id(f) for f in filters))
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
            if v > 0 and d != vec.PODS:
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
            if v > 0 and d != vec.PODS and fut[d, i] < v:
                return False
        return all(bool(f.passed[i]) for f in self.filters(task))

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
        for key, job in self.jobs.items():
            phase = self._phase(job)
            if phase != job.job.phase:
                podgroups[key] = str(phase)
            reason = self._job_reason(job)
            if reason is not None:
                reasons[key] = reason
        pipelined = {
            t.key: self.nodes.names[t.node]
            for job in self.jobs.values()
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
        scheduled = sum(c[s] for s in SCHEDULED)
        scheduled += sum(1 for t in job.tasks.values() if t.status == TaskStatus.RELEASING and t.node >= 0)
        completed = c[TaskStatus.SUCCEEDED] + c[TaskStatus.FAILED]
        if scheduled >= job.min_available and (scheduled > 0 or job.phase != JobPhase.PENDING):
            return JobPhase.COMPLETED if scheduled == completed and scheduled else JobPhase.RUNNING
        if job.phase != JobPhase.INQUEUE:
            return JobPhase.PENDING
        return JobPhase.INQUEUE

    def _queue_allocated(self) -> dict[str, dict[str, int]]:
        totals = {name: [0.0] * self.ndims for name in self.queues}
        for job in self.jobs.values():
            q = job.queue
            seen: set[str] = set()
            while q in totals and q not in seen:
                seen.add(q)
                vec.iadd(totals[q], job.allocated)
                q = self.queues[q].parent
        return {name: self.to_dict(v) for name, v in totals.items()}

    def job_fit_error(self, job: JobInfo) -> str:
        """Return Volcano's job fit error text (status histogram and first node fit error)."""
        hist = {str(s): n for s, n in job.counts.items() if n}
        hist["minAvailable"] = job.min_available
        ready = "pod group is ready" if job.is_ready() else "pod group is not ready"
        parts = sorted(f"{n} {s}" for s, n in hist.items())
        msg = f"{ready}, {', '.join(parts)}"
        if job.fit_errors:
            name, errs, total = next(iter(job.fit_errors.values()))
            msg += f". Origin reason is {name}: {format_fit_errors(errs, total)}"
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
