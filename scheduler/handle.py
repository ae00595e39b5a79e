"""SessionHandle: the session as plugins and actions see it, a protocol in a module of its own.

Plugins (:mod:`scheduler.plugins`) and actions (:mod:`scheduler.actions`) work on a session: they
read its state (jobs, queues, the node table, the HyperNode topology), ask its combined extension
points (orders, votes, predicates, scores) and change it through the statement API (``place``,
``evict``, ``dispatch``...). They name that session by this protocol rather than by
:class:`scheduler.session.Session`, as the Kubernetes scheduling framework hands its plugins a
narrow ``framework.Handle``: the session opens the plugins and runs the actions, so the plugins and
actions sit above this handle and below the session, and the session's module is never imported
by what it dispatches to. :class:`~scheduler.session.Session` satisfies the protocol
structurally (mypy checks it wherever a session is passed to a plugin or an action).

The handle imports only the layers below the framework: the model and its per-session views,
the node table and caches, the topology, the configuration's values and the extension points'
vocabulary (:mod:`scheduler.points`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scheduler.config_types import SchedulerConfig
    from scheduler.info import JobInfo, QueueInfo, SubJobInfo, TaskInfo
    from scheduler.journal import Journal
    from scheduler.model import Resource, TaskStatus
    from scheduler.node_cache import NodeCache
    from scheduler.nodes import NodeTable
    from scheduler.points import BoolArray, ExtensionPoint, Filter, FloatArray, IntArray
    from scheduler.result import Eviction, JobReason
    from scheduler.snapshot import Snapshot
    from scheduler.topology import JobTopology, Topology

__all__ = ["SessionHandle"]


class SessionHandle(Protocol):
    """The read, combine and statement API of one scheduling cycle's session."""

    # -- state (scheduler.session_state) --------------------------------------------------------

    snapshot: Snapshot
    config: SchedulerConfig
    journal: Journal | None
    dims: tuple[str, ...]
    dim_index: dict[str, int]
    ndims: int
    nodes: NodeTable
    total: list[float]
    whole_requests: bool
    queues: dict[str, QueueInfo]
    jobs: dict[str, JobInfo]
    dropped: dict[str, JobReason]
    binds: list[TaskInfo]
    bind_annotations: dict[str, dict[str, str]]
    evictions: list[Eviction]
    unschedulable_jobs: set[str]
    predicate_offset: int
    job_hyper_nodes: dict[str, str]

    @property
    def tasks(self) -> dict[str, TaskInfo]: ...

    @property
    def topology(self) -> Topology: ...

    def job_topology(self, job: JobInfo) -> JobTopology | None: ...

    def sub_job_topology(self, job: JobInfo, sub: SubJobInfo) -> JobTopology | None: ...

    def allocated_hyper_node(self, job: JobInfo) -> str: ...

    def vector(self, r: Resource) -> tuple[float, ...]: ...

    def capability_vector(self, r: Resource | None) -> list[float]: ...

    def to_dict(self, v: Sequence[float]) -> dict[str, int]: ...

    # -- the opened plugins (scheduler.session) -------------------------------------------------

    job_key: Callable[[JobInfo], tuple[Any, ...]] | None
    task_key: Callable[[TaskInfo], tuple[Any, ...]] | None
    node_local_filters: bool
    mask_cache: NodeCache

    @property
    def tiers(self) -> Sequence[Sequence[Any]]:
        """The plugins by tier, each bound to its state for this cycle (a
        :class:`scheduler.cycle_state.BoundPlugin`, which sits above this handle: its ``plugin``,
        its ``state``, and the plugin's methods with the state bound in)."""
        ...

    @property
    def failures_repeatable(self) -> bool: ...

    def has(self, point: ExtensionPoint) -> bool: ...

    # -- ordering -------------------------------------------------------------------------------

    def queue_less(self, a: QueueInfo, b: QueueInfo) -> bool: ...

    def victim_queue_less(self, a: QueueInfo, b: QueueInfo, preemptor: QueueInfo | None) -> bool: ...

    def job_less(self, a: JobInfo, b: JobInfo) -> bool: ...

    def task_less(self, a: TaskInfo, b: TaskInfo) -> bool: ...

    def victim_less(self, a: TaskInfo, b: TaskInfo, preemptor: TaskInfo | None) -> bool: ...

    # -- job-level votes ------------------------------------------------------------------------

    def job_valid(self, job: JobInfo) -> Any: ...

    def job_enqueueable(self, job: JobInfo) -> bool: ...

    def job_enqueued(self, job: JobInfo) -> None: ...

    def job_pipelined(self, job: JobInfo) -> bool: ...

    def job_ready(self, job: JobInfo) -> bool: ...

    def job_starving(self, job: JobInfo) -> bool: ...

    def sub_job_ready(self, job: JobInfo, sub: SubJobInfo) -> bool: ...

    def sub_job_pipelined(self, job: JobInfo, sub: SubJobInfo) -> bool: ...

    def sub_job_less(self, a: SubJobInfo, b: SubJobInfo) -> bool: ...

    def overused(self, queue: QueueInfo) -> bool: ...

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool: ...

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool: ...

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]: ...

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]: ...

    # -- node-level -----------------------------------------------------------------------------

    def victim_tasks(self, tasks: Sequence[TaskInfo] = ()) -> list[TaskInfo]: ...

    def hyper_node_gradient(
        self, job: JobInfo, root: str, allocated: str, minimum: Sequence[float], purpose: str
    ) -> list[list[str]]: ...

    def sub_job_gradient(
        self, job: JobInfo, sub: SubJobInfo, root: str, allocated: str, minimum: Sequence[float], purpose: str
    ) -> list[list[str]]: ...

    def hyper_node_scores(self, job: JobInfo | SubJobInfo, names: Sequence[str]) -> dict[str, float]: ...

    def hyper_node_rank(self, job: JobInfo, names: Sequence[str]) -> list[str] | None: ...

    def filters(self, task: TaskInfo) -> list[Filter]: ...

    def predicate_mask(self, task: TaskInfo, unresolvable_only: bool = False) -> BoolArray: ...

    def node_scores(self, task: TaskInfo, nodes: IntArray) -> FloatArray: ...

    def fit_errors(self, task: TaskInfo, nodes: IntArray | None = None) -> dict[str, int]: ...

    def fits_now(self, task: TaskInfo, i: int) -> bool: ...

    def fits_without(self, task: TaskInfo, i: int, removed: frozenset[str]) -> bool: ...

    # -- state changes (the statement API) ------------------------------------------------------

    def place(self, task: TaskInfo, node: int, status: TaskStatus) -> None: ...

    def unplace(self, task: TaskInfo) -> None: ...

    def evict(self, task: TaskInfo) -> TaskStatus: ...

    def unevict(self, task: TaskInfo, old: TaskStatus) -> None: ...

    def dispatch(self, task: TaskInfo) -> None: ...

    # -- reasons --------------------------------------------------------------------------------

    def set_reason(self, job: JobInfo, reason: JobReason) -> None: ...

    def job_fit_error(self, job: JobInfo) -> str: ...
