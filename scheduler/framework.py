"""Plugin and action bases and the capability classes (one per extension point).

They name the session by the narrow handle plugins and actions see (:mod:`scheduler.handle`);
the values they exchange (extension point names, votes, fits, filters) are :mod:`scheduler.points`.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.points import ExtensionPoint, Filter, Fit, FloatArray, IntArray, Vote

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, QueueInfo, SubJobInfo, TaskInfo
    from scheduler.topology import JobTopology

__all__ = [
    "ALWAYS_ON",
    "CAPABILITIES",
    "Action",
    "Allocatable",
    "AllocateHandler",
    "ArgSpec",
    "Capability",
    "GangEvictable",
    "HyperNodeGradient",
    "HyperNodeOrder",
    "JobEnqueueable",
    "JobEnqueued",
    "JobOrder",
    "JobPipelined",
    "JobReady",
    "JobStarving",
    "JobValid",
    "NodeOrder",
    "Overused",
    "Plugin",
    "PluginClasses",
    "Predicate",
    "Preemptable",
    "Preemptive",
    "QueueOrder",
    "Reclaimable",
    "SessionClose",
    "SharedState",
    "SubJobOrder",
    "SubJobPipelined",
    "SubJobReady",
    "TaskOrder",
    "VictimQueueOrder",
    "VictimTasks",
    "build_plugin",
    "restore_shared",
]


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """The type and default of a plugin or action argument.

    ``kind`` is ``int`` (YAML int), ``float`` (int or float), ``bool`` (bool or "true"/"false"),
    ``str``, ``map`` (a mapping) or ``any`` (structured YAML), the last two checked by ``check``.
    """

    kind: str
    default: Any = None
    doc: str = ""
    #: Optional further check of a well-typed value: returns an error message, or None if valid.
    check: Callable[[Any], str | None] | None = None
    #: Where Volcano logs a bad value and runs without it: what happens instead (the value is dropped
    #: and the configuration's ``warnings`` say so). None: a bad value is a configuration error.
    lenient: str | None = None


class Capability:
    """Marker base of capability classes; a plugin inherits the ones it implements."""

    point: ClassVar[ExtensionPoint]


class QueueOrder(Capability, ABC):
    """``queue_order(a, b) -> int``: negative ⇒ a first. Combine: first non-zero over tiers and
    plugins; fallback: earlier creation, then smaller uid/name."""

    point = ExtensionPoint.QUEUE_ORDER

    @abstractmethod
    def queue_order(self, state: Any, a: QueueInfo, b: QueueInfo) -> int: ...


class VictimQueueOrder(Capability, ABC):
    """``victim_queue_order(a, b, preemptor_queue) -> int``: negative ⇒ evict from a first.
    Combine: first non-zero; fallback: reverse queue order (least favoured queue first)."""

    point = ExtensionPoint.VICTIM_QUEUE_ORDER

    @abstractmethod
    def victim_queue_order(self, state: Any, a: QueueInfo, b: QueueInfo, preemptor: QueueInfo | None) -> int: ...


class JobOrder(Capability, ABC):
    """``job_order(a, b) -> int``: negative ⇒ a first. Combine: first non-zero; fallback:
    earlier creation, then smaller uid."""

    point = ExtensionPoint.JOB_ORDER
    #: Set by plugins whose order is a sort key: ``job_order(a, b)`` is then exactly the sign of
    #: ``cmp(job_order_key(a), job_order_key(b))``, and keys only change when the job's own tasks
    #: change. Queues of jobs then compare precomputed tuples instead of calling back.
    has_job_order_key: ClassVar[bool] = False

    @abstractmethod
    def job_order(self, state: Any, a: JobInfo, b: JobInfo) -> int: ...

    def job_order_key(self, state: Any, job: JobInfo) -> Any:
        """The sort key equivalent to :meth:`job_order` (only if ``has_job_order_key``)."""
        raise NotImplementedError


class TaskOrder(Capability, ABC):
    """``task_order(a, b) -> int``: negative ⇒ a first. Combine: first non-zero; fallback:
    pod-name index, then creation, then uid."""

    point = ExtensionPoint.TASK_ORDER
    #: As ``JobOrder.has_job_order_key``; the key must depend only on the task's immutable fields.
    has_task_order_key: ClassVar[bool] = False

    @abstractmethod
    def task_order(self, state: Any, a: TaskInfo, b: TaskInfo) -> int: ...

    def task_order_key(self, state: Any, task: TaskInfo) -> Any:
        """The sort key equivalent to :meth:`task_order` (only if ``has_task_order_key``)."""
        raise NotImplementedError


class JobValid(Capability, ABC):
    """``job_valid(job) -> Fit | None``: None = valid. Combine: the first failure wins (no
    switch can disable it)."""

    point = ExtensionPoint.JOB_VALID

    @abstractmethod
    def job_valid(self, state: Any, job: JobInfo) -> Fit | None: ...


class JobEnqueueable(Capability, ABC):
    """``job_enqueueable(job) -> Vote``. Combine: any REJECT ⇒ no; at the end of a tier, a
    PERMIT in that tier ⇒ yes; all tiers abstain ⇒ yes. A rejecting plugin may record the reason
    with ``session.record_enqueue_failure``."""

    point = ExtensionPoint.JOB_ENQUEUEABLE

    @abstractmethod
    def job_enqueueable(self, state: Any, job: JobInfo) -> Vote: ...


class JobEnqueued(Capability, ABC):
    """``job_enqueued(job)``: notification after admission; every enabled plugin is called."""

    point = ExtensionPoint.JOB_ENQUEUED

    @abstractmethod
    def job_enqueued(self, state: Any, job: JobInfo) -> None: ...


class JobReady(Capability, ABC):
    """``job_ready(job) -> bool``. Combine: AND over all plugins; nobody ⇒ true."""

    point = ExtensionPoint.JOB_READY

    @abstractmethod
    def job_ready(self, state: Any, job: JobInfo) -> bool: ...


class JobPipelined(Capability, ABC):
    """``job_pipelined(job) -> Vote``. Combine: as job_enqueueable."""

    point = ExtensionPoint.JOB_PIPELINED

    @abstractmethod
    def job_pipelined(self, state: Any, job: JobInfo) -> Vote: ...


class JobStarving(Capability, ABC):
    """``job_starving(job) -> bool``. Combine: AND within the first tier that has a plugin
    implementing it; that tier decides; nobody ⇒ false."""

    point = ExtensionPoint.JOB_STARVING

    @abstractmethod
    def job_starving(self, state: Any, job: JobInfo) -> bool: ...


class Predicate(Capability, ABC):
    """``predicate(task) -> filters`` over all nodes. Combine: a node must pass every filter of
    every plugin; the first failing filter (tier, plugin, filter order) is the node's reason.

    Resource fit (``request ≤ future idle``) is checked by the actions, as in Volcano.
    Implementations should cache static filters per task signature.
    """

    point = ExtensionPoint.PREDICATE
    #: Set by plugins whose filters are arrays that, within a session, change only at nodes whose
    #: state changed in the node table (``NodeTable.changes``). Node selection then keeps the
    #: feasible mask per task shape and refreshes only those nodes. A plugin may clear it for a
    #: cycle by setting the attribute on its state (in ``open`` / ``restore_state``).
    node_local_filters: bool = False

    @abstractmethod
    def predicate(self, state: Any, task: TaskInfo) -> Sequence[Filter]: ...


class NodeOrder(Capability, ABC):
    """``node_order(task, nodes) -> scores`` for the node indices ``nodes``. Combine: sum over
    plugins (each plugin applies its own configured weights); the highest total wins, ties go to
    the first candidate in scan order."""

    point = ExtensionPoint.NODE_ORDER

    @abstractmethod
    def node_order(self, state: Any, task: TaskInfo, nodes: IntArray) -> FloatArray: ...

    def node_score_key(self, state: Any, task: TaskInfo) -> Any:
        """Optional split for caching. None (the default): no split. Otherwise a hashable key such
        that ``node_order(task, nodes) == local_scores(task, nodes) + set_scores(task, nodes)``
        (exactly, in floating point), where ``local_scores`` of node ``i`` depends only on the key
        and node ``i``'s node-table column, so the session caches it per key and refreshes only
        changed nodes."""
        return None

    def local_scores(self, state: Any, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """The per-node part of the split (see :meth:`node_score_key`)."""
        raise NotImplementedError

    def local_score_at(self, state: Any, task: TaskInfo, node: int) -> float:
        """``local_scores(task, [node])[0]``, computed with the same float operations."""
        return float(self.local_scores(state, task, np.array([node], dtype=np.int64))[0])

    def set_scores(self, state: Any, task: TaskInfo, nodes: IntArray) -> FloatArray | None:
        """The part of the split that depends on the whole candidate set (None: zero)."""
        return None


class Preemptable(Capability, ABC):
    """``preemptable(preemptor, candidates) -> list | None`` (None = abstain). Combine: within a
    tier the first non-abstaining list seeds the set and later ones intersect it; an empty
    result discards the tier; the first tier with a non-empty set decides; else no victims."""

    point = ExtensionPoint.PREEMPTABLE

    @abstractmethod
    def preemptable(self, state: Any, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None: ...


class Reclaimable(Capability, ABC):
    """``reclaimable(reclaimer, candidates) -> list | None``. Combine: as preemptable."""

    point = ExtensionPoint.RECLAIMABLE

    @abstractmethod
    def reclaimable(self, state: Any, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None: ...


class GangEvictable(Capability, ABC):
    """``gang_evictable(action, job, candidates) -> list | None`` (None = abstain): which running
    pods the gang actions (``gangpreempt`` / ``gangreclaim``, named by ``action``) may evict for
    ``job``, Volcano's ``UnifiedEvictableFn``. Combine: as preemptable, but with no switch (every
    configured plugin implementing it is asked, as Volcano's ``UnifiedEvictable``)."""

    @abstractmethod
    def gang_evictable(
        self, state: Any, action: str, job: JobInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo] | None: ...


class Preemptive(Capability, ABC):
    """``preemptive(queue, task) -> bool``: may this queue reclaim for ``task``. Combine: AND."""

    point = ExtensionPoint.PREEMPTIVE

    @abstractmethod
    def preemptive(self, state: Any, queue: QueueInfo, task: TaskInfo) -> bool: ...


class Overused(Capability, ABC):
    """``overused(queue) -> bool``. Combine: OR; nobody ⇒ false."""

    point = ExtensionPoint.OVERUSED

    @abstractmethod
    def overused(self, state: Any, queue: QueueInfo) -> bool: ...


class Allocatable(Capability, ABC):
    """``allocatable(queue, task) -> bool``: may ``task`` be allocated within the queue's quota.
    Combine: AND; nobody ⇒ true. A refusing plugin records why via
    ``session.record_quota_failure``."""

    point = ExtensionPoint.ALLOCATABLE

    @abstractmethod
    def allocatable(self, state: Any, queue: QueueInfo, task: TaskInfo) -> bool: ...


class VictimTasks(Capability, ABC):
    """``victim_tasks(tasks) -> [task]``: running pods a plugin wants evicted (Volcano's
    ``VictimTasksFn``, used by the ``shuffle`` action and the rescheduling plugins). Combine: the
    union over a tier's plugins; the first tier with any victim decides."""

    point = ExtensionPoint.VICTIM_TASKS

    @abstractmethod
    def victim_tasks(self, state: Any, tasks: Sequence[TaskInfo]) -> list[TaskInfo]: ...


class HyperNodeOrder(Capability, ABC):
    """``hyper_node_order(job, names) -> {name: score}``: how well the pods of a job (its one sub-job) or of a
    sub-job fit each candidate HyperNode (Volcano's ``HyperNodeOrderFn``). Combine: sum over plugins; the
    highest total wins, ties go to the first candidate."""

    point = ExtensionPoint.HYPERNODE_ORDER

    @abstractmethod
    def hyper_node_order(self, state: Any, job: JobInfo | SubJobInfo, names: Sequence[str]) -> Mapping[str, float]: ...


class HyperNodeGradient(Capability, ABC):
    """``hyper_node_gradient(job, root, allocated, minimum, purpose) -> [[name, ...], ...]``: the
    HyperNodes under ``root`` the job may be placed in, grouped in the order to try them
    (Volcano's ``HyperNodeGradientForJobFn``; ``purpose`` is ``allocate`` or ``evict``,
    ``allocated`` the HyperNode the job's placed pods already span, ``minimum`` the request the
    search pre-filters by); ``sub_job_gradient(topology, ...)`` the same for a sub-job of that effective
    topology (``HyperNodeGradientForSubJobFn``). Combine: the first plugin decides; nobody ⇒ ``[[root]]``."""

    point = ExtensionPoint.HYPERNODE_GRADIENT

    @abstractmethod
    def hyper_node_gradient(
        self, state: Any, job: JobInfo, root: str, allocated: str, minimum: Sequence[float], purpose: str
    ) -> list[list[str]]: ...

    @abstractmethod
    def sub_job_gradient(
        self,
        state: Any,
        topology: JobTopology | None,
        root: str,
        allocated: str,
        minimum: Sequence[float],
        purpose: str,
    ) -> list[list[str]]: ...


class SubJobReady(Capability, ABC):
    """``sub_job_ready(sub) -> bool``: whether a sub-job of a job with sub-group policies has its gang (Volcano's
    ``SubJobReadyFn``). Combine: AND; nobody ⇒ ready."""

    point = ExtensionPoint.SUB_JOB_READY

    @abstractmethod
    def sub_job_ready(self, state: Any, sub: SubJobInfo) -> bool: ...


class SubJobPipelined(Capability, ABC):
    """``sub_job_pipelined(sub) -> Vote`` (Volcano's ``SubJobPipelinedFn``). Combine: the tier vote of
    job_pipelined; nobody ⇒ pipelined."""

    point = ExtensionPoint.SUB_JOB_PIPELINED

    @abstractmethod
    def sub_job_pipelined(self, state: Any, sub: SubJobInfo) -> Vote: ...


class SubJobOrder(Capability, ABC):
    """``sub_job_order(a, b) -> int``: negative ⇒ a first (Volcano's ``SubJobOrderFn``). Combine: first
    non-zero; fallback: the smaller match index, then id."""

    point = ExtensionPoint.SUB_JOB_ORDER

    @abstractmethod
    def sub_job_order(self, state: Any, a: SubJobInfo, b: SubJobInfo) -> int: ...


#: The capability class of each extension point (those with a switch; GangEvictable has none), in the order
#: defined above: what the session opens its dispatch lists by.
CAPABILITIES: dict[ExtensionPoint, type[Capability]] = {
    c.point: c for c in Capability.__subclasses__() if "point" in vars(c)
}
#: Extension points no switch can disable (Volcano: jobValid, victimQueueOrder).
ALWAYS_ON = frozenset({ExtensionPoint.JOB_VALID, ExtensionPoint.VICTIM_QUEUE_ORDER})


class AllocateHandler(ABC):
    """Event handler: called after a task is allocated/pipelined (``allocate``) and after it is
    evicted, unallocated or unpipelined (``deallocate``). Not switchable, as in Volcano."""

    @abstractmethod
    def on_allocate(self, state: Any, task: TaskInfo) -> None: ...

    @abstractmethod
    def on_deallocate(self, state: Any, task: TaskInfo) -> None: ...


class SessionClose(ABC):
    """``on_session_close(session)``: called once when the session closes."""

    @abstractmethod
    def on_session_close(self, state: Any, session: SessionHandle) -> None: ...


class Plugin:
    """Base of scheduler plugins: built once from its arguments, it keeps nothing of a cycle.

    Subclasses set ``name``, declare their ``arguments`` (exact keys) and ``argument_prefixes``
    (keys starting with a prefix, e.g. ``binpack.resources.``), build their per-cycle state in
    :meth:`open` (a :class:`~scheduler.cycle_state.PluginState`, which the session keeps in its
    :class:`~scheduler.cycle_state.CycleState`) and receive that state as the first argument of
    every capability method. Once the framework has built a plugin (:func:`build_plugin`) its
    attributes can no longer be set: a cycle's values belong in its state.
    """

    name: ClassVar[str] = ""
    arguments: ClassVar[Mapping[str, ArgSpec]] = {}
    argument_prefixes: ClassVar[Mapping[str, ArgSpec]] = {}
    #: Set by plugins whose ``allocatable``, ``job_ready``, ``job_pipelined`` and ``predicate``
    #: answers (those they implement) have no side effect unless they refuse and, for a job
    #: without per-role minimums, depend only on the node table and queue state (which change
    #: only through logged node-table changes), the job's queue, status counts, pending
    #: BestEffort count, minAvailable and task count, and the task's request, signature and role.
    #: Its ``overused`` answer (if implemented) depends only on the queue state. Allocate then
    #: records a job's failure to find a node without trying again when an identical job failed
    #: since the last change, and asks whether a queue is overused again only after a change
    #: (``actions/allocate.py``). A plugin may set it per cycle on its state (predicates does,
    #: off when pods have inter-pod terms or spread constraints, which depend on labels the
    #: signature lacks).
    failures_repeatable: bool = False

    def __init__(self, args: Mapping[str, Any], hierarchy: bool = False) -> None:
        merged = {k: spec.default for k, spec in self.arguments.items()}
        merged.update(args)
        self.args: Mapping[str, Any] = merged
        self.hierarchy = hierarchy

    def __setattr__(self, attr: str, value: Any) -> None:
        if self.__dict__.get("_built"):
            raise AttributeError(
                f"plugin {self.name!r} keeps nothing of a cycle: {attr!r} belongs in its state (Plugin.open)"
            )
        object.__setattr__(self, attr, value)

    @classmethod
    def check_arguments(cls, args: Mapping[str, Any]) -> tuple[str, str] | None:
        """A problem with the given arguments taken together, which each alone cannot show (the argument to
        name, what is wrong), or None (the default). The configuration refuses to load with it, as Volcano
        refuses to start."""
        return None

    def open(self, session: SessionHandle) -> Any:
        """This cycle's state of the plugin over ``session`` (the default: the session alone)."""
        return PluginState(session)

    def save_state(self, state: Any) -> Any:
        """What a ``SessionCache`` keeps of ``state`` right after every plugin's :meth:`open`, to
        restore the next cycle over the same opened state (None, the default: the plugin is simply
        opened again each cycle). Must not share anything the cycle modifies later."""
        return None

    def restore_state(self, session: SessionHandle, saved: Any) -> Any:
        """The state :meth:`open` would return over ``session``, from what :meth:`save_state` kept
        for a session with the same opened state (it must stay usable for the next restore)."""
        raise NotImplementedError

    def refresh_state(
        self, session: SessionHandle, saved: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> Any:
        """What :meth:`save_state` would keep for ``session``, given ``saved`` kept over the
        previous opened state, or None (the default) to be opened again.

        Called by ``SessionCache`` when the snapshot changed only in PodGroups and pods: nodes,
        queues, priority classes and resource dimensions are the same, the jobs in ``removed``
        are gone (their JobInfos still hold their old opened state), those in ``added`` are new
        (PodGroups rebuilt because their Job or pods changed appear in both), every other job is
        the same JobInfo in the same opened state, and the node table holds the new columns.
        The result must not share anything with ``saved`` that either side modifies later."""
        return None


def build_plugin(cls: type[Plugin], args: Mapping[str, Any], hierarchy: bool = False) -> Plugin:
    """A plugin built from its arguments, its attributes fixed from now on (see :class:`Plugin`)."""
    plugin = cls(args, hierarchy)
    object.__setattr__(plugin, "_built", True)
    return plugin


def intersect_victims(tiers: Sequence[Sequence[Any]], choose: Callable[[Any], list[TaskInfo] | None]) -> list[TaskInfo]:
    """Volcano's victim rule over plugin tiers (preemptable, reclaimable, the gang actions' evictable):
    in each tier, intersect the choices of the plugins that answer (``choose(plugin)``; None = abstain);
    a plugin answering an empty list vetoes the tier; the first tier with victims decides."""
    for tier in tiers:
        victims: list[TaskInfo] | None = None
        for plugin in tier:
            chosen = choose(plugin)
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


def restore_shared(session: SessionHandle, saved: Any) -> Any:
    """A shallow copy of the state ``saved`` opened over ``session``: what :class:`SharedState`
    restores (its values are shared from one cycle to the next; only the session is the new one)."""
    state = copy.copy(saved)
    state.session = session
    return state


class SharedState(Plugin):
    """Base of plugins whose state is never modified after :meth:`open` (lazily filled caches that
    depend only on the opened state are fine) and depends on nothing a ``SessionCache`` update
    changes (jobs and pods): the cache shares it from one cycle to the next instead of opening the
    plugin again."""

    def save_state(self, state: Any) -> Any:
        """The state itself, shared (SessionCache)."""
        return state

    def restore_state(self, session: SessionHandle, saved: Any) -> Any:
        """See :func:`restore_shared`."""
        return restore_shared(session, saved)

    def refresh_state(
        self, session: SessionHandle, saved: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> Any:
        """Nothing depends on the jobs (SessionCache)."""
        return saved


class PluginClasses(Protocol):
    """Where a session finds the class of each configured plugin, by name: a
    :class:`scheduler.registry.Registry`, which whoever builds the session passes in (the
    registry is assembled from the built-in plugins above the session, which never imports it)."""

    @property
    def plugins(self) -> Mapping[str, type[Plugin]]: ...


class Action(ABC):
    """Base of actions. ``arguments`` declares the keys accepted under ``configurations``."""

    name: ClassVar[str] = ""
    arguments: ClassVar[Mapping[str, ArgSpec]] = {}

    def __init__(self, args: Mapping[str, Any]) -> None:
        merged = {k: spec.default for k, spec in self.arguments.items()}
        merged.update(args)
        self.args: Mapping[str, Any] = merged

    @abstractmethod
    def execute(self, session: SessionHandle) -> None:
        """Run the action over ``session``."""


class QueueShares(ABC):
    """``queue_deserved()``: each queue's deserved resources as this session computed them.

    Implemented by the fair-share plugins (proportion, capacity); the first such plugin in
    the tiers reports the shares in :attr:`CycleResult.queue_deserved`.
    """

    @abstractmethod
    def queue_deserved(self, state: Any) -> Mapping[str, Sequence[float]]: ...
