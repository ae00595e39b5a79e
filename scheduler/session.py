"""Session: one scheduling cycle. Builds its state from a snapshot (:mod:`scheduler.session_state`),
opens the configured plugins in tiers and dispatches every extension point over them, and closes
into a ``CycleResult`` (:mod:`scheduler.reasons`).

Where the rest lives: the incremental update of a kept state is :mod:`scheduler.session_reuse`
(used by ``SessionCache``), the per-node caches of node selection :mod:`scheduler.node_cache`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler import reasons
from scheduler.cycle_state import BoundPlugin, CycleState
from scheduler.framework import (
    ALWAYS_ON,
    CAPABILITIES,
    AllocateHandler,
    Plugin,
    PluginClasses,
    SessionClose,
    build_plugin,
    intersect_victims,
)
from scheduler.info import JobInfo, QueueInfo, SubJobInfo, TaskInfo
from scheduler.model import TaskStatus
from scheduler.node_cache import CACHE_ENTRIES, NodeCache
from scheduler.points import BoolArray, ExtensionPoint, Filter, FloatArray, IntArray, Vote
from scheduler.result import CycleResult, JobReason
from scheduler.session_state import SessionState

if TYPE_CHECKING:
    from scheduler.config_types import SchedulerConfig
    from scheduler.journal import Journal
    from scheduler.snapshot import Snapshot

__all__ = ["Session"]


class Session(SessionState):
    """One scheduling cycle over a snapshot.

    Holds the mutable state (tasks, jobs, queues, node table; :class:`SessionState`), the plugin
    instances arranged in tiers, and the combine logic of every extension point (see
    docs/scheduler.md).
    """

    def __init__(
        self,
        snapshot: Snapshot,
        config: SchedulerConfig,
        registry: PluginClasses,
        journal: Journal | None = None,
        plugins: Sequence[Plugin] | None = None,
    ) -> None:
        self.config = config
        self.registry = registry
        #: Set when the session is kept by a ``SessionCache``: records changes for rollback.
        self.journal = journal
        self._plugin_states: list[Any] | None = None
        #: The configured plugins, in configuration order: ``plugins`` (built by ``build_plugin`` from
        #: this config and registry, e.g. by an earlier session) or built at the first open; kept for
        #: every cycle of this session.
        self.plugins: list[Plugin] = list(plugins or ())
        super().__init__(snapshot)
        self._open_plugins()

    def reopen(self, snapshot: Snapshot) -> None:
        """Start a new cycle over the opened state (``SessionCache``): the state has been rolled
        back (and, for a changed snapshot, updated by ``session_reuse.update_state``), so only
        the per-cycle fields and plugins are new. Plugins restore their saved open state,
        refreshed for the jobs that changed, or are opened again."""
        self.snapshot = snapshot
        self._reset_cycle()
        self._open_plugins()

    def _open_plugins(self) -> None:
        self.tiers: list[list[BoundPlugin]] = []
        self._points: dict[ExtensionPoint, list[list[Any]]] = {}
        self._instantiate_plugins()
        handlers: list[BoundPlugin] = []
        closers: list[BoundPlugin] = []
        for point, cap in CAPABILITIES.items():
            tiers: list[list[Any]] = []
            for tier, plugins in zip(self.config.tiers, self.tiers, strict=True):
                tiers.append(
                    [
                        p
                        for opt, p in zip(tier.plugins, plugins, strict=True)
                        if isinstance(p.plugin, cap) and (point in ALWAYS_ON or opt.enabled(point))
                    ]
                )
            self._points[point] = [t for t in tiers if t]
        for plugins in self.tiers:
            for p in plugins:
                if isinstance(p.plugin, AllocateHandler):
                    handlers.append(p)
                if isinstance(p.plugin, SessionClose):
                    closers.append(p)
        self.handlers = handlers
        self.closers = closers
        self._flat = {point: [p for t in tiers for p in t] for point, tiers in self._points.items()}
        self.job_key = self._job_key_fn()
        self.task_key = self._task_key_fn()
        self.node_local_filters = all(p.node_local_filters for p in self._flat[ExtensionPoint.PREDICATE])
        #: Node-selection caches (see node_cache.py and actions/common.py): feasible/idle masks per task shape and
        #: per-node scores per plugin key, each with the position in ``nodes.changes`` it is
        #: current up to.
        self.mask_cache = NodeCache(self.nodes, 2048)
        self._score_cache = NodeCache(self.nodes, CACHE_ENTRIES)
        self._groups: dict[int, tuple[Filter, BoolArray, list[tuple[str, IntArray]]]] = {}
        self._fit_cache: dict[Any, tuple[int, dict[str, int], list[Filter]]] = {}
        #: Parts of reason messages by what they are made of (see job_fit_error).
        self._texts: dict[tuple[Any, ...], str] = {}

    def _instantiate_plugins(self) -> None:
        """Append to ``tiers`` every configured plugin bound to its state for this cycle, tier by
        tier: the plugins are built once per session (they keep nothing of a cycle), their states
        written into the cycle's :class:`CycleState`, each opened on this session from its saved
        state (refreshed for the jobs that changed) when the session is kept by a ``SessionCache``
        and reopened, else by ``Plugin.open``."""
        saved = self._plugin_states
        changed = self._changed_jobs
        self._changed_jobs = None
        self.cycle_state = CycleState()
        built = self.plugins
        first = not built
        flat: list[BoundPlugin] = []
        states: list[Any] = []
        opened: list[int] = []
        for tier in self.config.tiers:
            plugins: list[BoundPlugin] = []
            for opt in tier.plugins:
                k = len(flat)
                if first:
                    built.append(build_plugin(self.registry.plugins[opt.name], opt.arguments, opt.hierarchy))
                plugin = built[k]
                keep = saved[k] if saved is not None else None
                if keep is not None and changed is not None:
                    keep = plugin.refresh_state(self, keep, changed[0], changed[1])
                if keep is not None:
                    state = plugin.restore_state(self, keep)
                else:
                    state = plugin.open(self)
                    opened.append(k)
                entry = BoundPlugin(plugin, state)
                self.cycle_state.write(plugin.name, state)
                plugins.append(entry)
                flat.append(entry)
                states.append(keep)
            self.tiers.append(plugins)
        if self.journal is not None:
            # Kept by a SessionCache: the next cycle over this opened state restores these.
            for k in opened:
                states[k] = built[k].save_state(flat[k].state)
            self._plugin_states = states

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

    def plugin(self, name: str) -> BoundPlugin:
        """Return plugin ``name`` bound to its state for this cycle (KeyError if not configured)."""
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

    def _vote(self, point: ExtensionPoint, method: str, job: JobInfo | SubJobInfo) -> bool:
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

    def sub_job_ready(self, job: JobInfo, sub: SubJobInfo) -> bool:
        """Volcano's ``SubJobReady``: the job's readiness without sub-group policies, else AND over sub_job_ready."""
        if not job.grouped:
            return self.job_ready(job)
        return all(p.sub_job_ready(sub) for p in self._flat[ExtensionPoint.SUB_JOB_READY])

    def sub_job_pipelined(self, job: JobInfo, sub: SubJobInfo) -> bool:
        """Volcano's ``SubJobPipelined``: job_pipelined without sub-group policies, else the tier vote."""
        if not job.grouped:
            return self.job_pipelined(job)
        return self._vote(ExtensionPoint.SUB_JOB_PIPELINED, "sub_job_pipelined", sub)

    def sub_job_less(self, a: SubJobInfo, b: SubJobInfo) -> bool:
        """Return whether sub-job ``a`` is served before ``b`` (fallback: match index, then id)."""
        for p in self._flat[ExtensionPoint.SUB_JOB_ORDER]:
            r = p.sub_job_order(a, b)
            if r:
                return bool(r < 0)
        return (a.match_index, a.uid) < (b.match_index, b.uid)

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
        return intersect_victims(self._points[point], lambda p: getattr(p, method)(actor, candidates))

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims for ``preemptor`` among ``candidates`` (tier intersection rule)."""
        return self._victims(ExtensionPoint.PREEMPTABLE, "preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims for ``reclaimer`` among ``candidates`` (tier intersection rule)."""
        return self._victims(ExtensionPoint.RECLAIMABLE, "reclaimable", reclaimer, candidates)

    # -- node-level ----------------------------------------------------------------------------

    def victim_tasks(self, tasks: Sequence[TaskInfo] = ()) -> list[TaskInfo]:
        """Volcano's ``ssn.VictimTasks``: the union of a tier's plugins' victims, the first tier
        with any deciding (in uid order)."""
        for tier in self._points[ExtensionPoint.VICTIM_TASKS]:
            chosen: dict[str, TaskInfo] = {}
            for p in tier:
                for t in p.victim_tasks(tasks):
                    chosen[t.uid] = t
            if chosen:
                return [chosen[k] for k in sorted(chosen)]
        return []

    def hyper_node_gradient(
        self, job: JobInfo, root: str, allocated: str, minimum: Sequence[float], purpose: str
    ) -> list[list[str]]:
        """The HyperNode gradients of ``job`` under ``root`` (the first plugin decides; none:
        ``[[root]]``)."""
        for p in self._flat[ExtensionPoint.HYPERNODE_GRADIENT]:
            gradient: list[list[str]] = p.hyper_node_gradient(job, root, allocated, minimum, purpose)
            return gradient
        return [[root]]

    def sub_job_gradient(
        self, job: JobInfo, sub: SubJobInfo, root: str, allocated: str, minimum: Sequence[float], purpose: str
    ) -> list[list[str]]:
        """The HyperNode gradients of sub-job ``sub`` under ``root`` (the first plugin decides; none: ``[[root]]``)."""
        topology = self.sub_job_topology(job, sub)
        for p in self._flat[ExtensionPoint.HYPERNODE_GRADIENT]:
            return list(p.sub_job_gradient(topology, root, allocated, minimum, purpose))
        return [[root]]

    def hyper_node_scores(self, job: JobInfo | SubJobInfo, names: Sequence[str]) -> dict[str, float]:
        """The summed HyperNode-order scores of ``names`` for ``job`` (0 when nobody scores)."""
        total = dict.fromkeys(names, 0.0)
        for p in self._flat[ExtensionPoint.HYPERNODE_ORDER]:
            for name, score in p.hyper_node_order(job, names).items():
                if name in total:
                    total[name] += score
        return total

    def hyper_node_rank(self, job: JobInfo, names: Sequence[str]) -> list[str] | None:
        """``names`` in the order in which the best of any subset of them by HyperNode order
        *alone* (no pods' share added for ties: each scored as the only candidate) is its first:
        by score, then position. None when that order is not known without scoring each subset
        (a HyperNode-order plugin that does not give its scores apart, or more than one)."""
        plugins = self._flat[ExtensionPoint.HYPERNODE_ORDER]
        if not plugins:
            return list(names)
        base_of = getattr(plugins[0], "hyper_node_base", None) if len(plugins) == 1 else None
        if base_of is None:
            return None
        base: dict[str, float] = base_of(job, names)
        pos = {n: i for i, n in enumerate(names)}
        return sorted(names, key=lambda n: (-base[n], pos[n]))

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

    def _local_scores(self, p: BoundPlugin, key: Any, task: TaskInfo) -> FloatArray:
        return self._score_cache.get(
            (id(p), key),
            lambda: p.local_scores(task, np.arange(len(self.nodes), dtype=np.intp)).astype(np.float64, copy=True),
            lambda i: p.local_score_at(task, i),
            lambda nodes: p.local_scores(task, nodes),
            p,
        )

    def fit_errors(self, task: TaskInfo, nodes: IntArray | None = None) -> dict[str, int]:
        """Return ``{reason: node count}`` for why ``task`` fits on none of ``nodes`` (all);
        see :func:`scheduler.reasons.fit_errors`."""
        return reasons.fit_errors(self, task, nodes)

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
        return reasons.build_result(self, timings)

    def job_fit_error(self, job: JobInfo) -> str:
        """Return Volcano's job fit error text (status histogram and first node fit error); see
        :func:`scheduler.reasons.job_fit_error`."""
        return reasons.job_fit_error(self, job)
