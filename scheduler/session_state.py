"""The state of one scheduling cycle, built from a snapshot: resource dimensions, the node table,
queues, jobs and their tasks (``TaskInfo``), and the per-cycle decisions (binds, evictions).

:class:`SessionState` is the base of :class:`scheduler.session.Session`, which adds the plugins and
the extension-point dispatch. A ``SessionCache`` keeps this state between cycles: it is rolled back
by the cache's journal and brought to a changed snapshot by :mod:`scheduler.session_reuse`, which
reads and updates the bookkeeping kept here for it (``_pod_groups``, ``_scalar_uses``, ...).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from scheduler import vec
from scheduler.info import ON_NODE, JobInfo, QueueInfo, SubJobInfo, TaskInfo, derive
from scheduler.model import Job, Resource, Task, TaskStatus
from scheduler.nodes import NodeTable
from scheduler.result import Eviction, JobReason, ReasonKind
from scheduler.topology import JobTopology, Topology, job_topology, sub_job_topology

if TYPE_CHECKING:
    from scheduler.snapshot import Snapshot

__all__ = ["PodGroupPods", "SessionState", "count_names", "group_by", "group_tasks", "queue_missing"]

_UID = operator.attrgetter("uid")
#: Volcano's ``AllocatedStatus``.
_ALLOCATED = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
_JOB_OF = operator.attrgetter("job")
_T = TypeVar("_T")
_K = TypeVar("_K")


def group_by(items: Iterable[_T], key: Callable[[_T], _K]) -> dict[_K, list[_T]]:
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


def group_tasks(tasks: Sequence[Task]) -> dict[str, list[Task]]:
    """The pods by PodGroup key (``Task.job``), each group in input order."""
    return group_by(tasks, _JOB_OF)


class PodGroupPods:
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


def queue_missing(j: Job) -> JobReason:
    """The reason of a PodGroup dropped because its queue does not exist."""
    return JobReason(
        ReasonKind.QUEUE_MISSING,
        f"queue {j.queue!r} of podgroup {j.key} does not exist",
        numbers={"queue": j.queue},
    )


def count_names(uses: dict[str, int], names: Mapping[str, int], delta: int) -> None:
    """Add ``delta`` to the use count of each of ``names`` in ``uses`` (dropping those at 0)."""
    for name in names:
        left = uses.get(name, 0) + delta
        if left:
            uses[name] = left
        else:
            del uses[name]


def _resolve_priority(explicit: int | None, class_name: str, classes: dict[str, int], default: int) -> int:
    if explicit is not None:
        return explicit
    if class_name and class_name in classes:
        return classes[class_name]
    return default


class SessionState:
    """The mutable state of one cycle over ``snapshot`` (tasks, jobs, queues, node table) and
    the decisions taken so far in it."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        #: Set by ``session_reuse.update_state`` for the plugins' refresh: (removed, added) jobs.
        self._changed_jobs: tuple[list[JobInfo], list[JobInfo]] | None = None
        self._open_state()

    # -- open ----------------------------------------------------------------------------------

    def _dims_of(self, snap: Snapshot) -> tuple[str, ...]:
        """The session's dimensions; keeps how many pods and PodGroups name each scalar resource
        (for ``session_reuse.update_state``)."""
        node_scalars: set[str] = set()
        for n in snap.nodes:
            if n.allocatable.scalars:
                node_scalars.update(n.allocatable.scalars)
        uses: dict[str, int] = {}
        for t in snap.tasks:
            if t.requests.scalars:
                count_names(uses, t.requests.scalars, 1)
        for j in snap.jobs:
            if j.min_resources is not None and j.min_resources.scalars:
                count_names(uses, j.min_resources.scalars, 1)
        self._node_scalars = node_scalars
        self._scalar_uses = uses
        return ("cpu", "memory", "pods", *sorted(node_scalars | uses.keys()))

    def _open_state(self) -> None:
        snap = self.snapshot
        self.dims: tuple[str, ...] = self._dims_of(snap)
        self.dim_index = {d: i for i, d in enumerate(self.dims)}
        self.ndims = len(self.dims)
        self.nodes = NodeTable(snap.nodes, self.dims)
        self._topology: Topology | None = None
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
                self.dropped[j.key] = queue_missing(j)
                continue
            self.jobs[j.key] = self._job_info(j, minimums)
        jobs = self.jobs
        vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]] = {}
        by_job = group_tasks(snap.tasks)
        groups = {key: PodGroupPods(by_job[key], jobs.get(key)) for key in sorted(by_job)}
        # Every TaskInfo is new: the placed ones in (job, uid) order.
        placed = self._build_groups([(group, None) for group in groups.values()], vectors)
        self.nodes.add_bulk(placed, [t.node for t in placed])
        #: Per PodGroup key (``Task.job``): the snapshot's pods and what the session built from
        #: them, reused by ``session_reuse.update_state`` when neither the Job nor its pods changed.
        self._pod_groups = groups
        #: For ``session_reuse.update_state`` (computed there): the PodGroups by key and the pods by id.
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
        todo: Sequence[tuple[PodGroupPods, PodGroupPods | None]],
        vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]],
    ) -> list[TaskInfo]:
        """Build the TaskInfos of each group (pods in (job, uid) order) into its job, or as
        orphans when it has none; ``group.placed`` gets those sitting on a node (their ``node`` is
        set). Groups are built in the order given.

        With an old group (the previous build of the same key, in its opened state), the
        TaskInfo of a pod object it already had is moved over instead of built again (it is the
        same value). Returns the placed TaskInfos that are new, in build order."""
        fresh: list[TaskInfo] = []
        for group, old in todo:
            self._build_group(group, _reusable_infos(group, old), vectors, fresh)
        return fresh

    def _build_group(
        self,
        group: PodGroupPods,
        reuse: dict[int, TaskInfo],
        vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]],
        fresh: list[TaskInfo],
    ) -> None:
        """Build the TaskInfos of one group (see :meth:`_build_groups`), moving over those ``reuse``
        has for a pod object (by id); the new placed ones are appended to ``fresh``."""
        on_node = ON_NODE
        pending, bound = TaskStatus.PENDING, TaskStatus.BOUND
        node_index = self.nodes.index
        classes, default_priority = self._classes, self._default_priority
        vector = self.vector
        job = group.info
        placed = group.placed
        infos = group.infos
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
                _add_orphan(group, t, node, status, vd, fresh)
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

    @property
    def topology(self) -> Topology:
        """The HyperNodes over this session's nodes (built on first use; nodes and HyperNodes
        are the same for every cycle over an opened state)."""
        topo = self._topology
        if topo is None:
            topo = self._topology = Topology(self.snapshot.hyper_nodes, self.nodes.nodes)
        return topo

    def job_topology(self, job: JobInfo) -> JobTopology | None:
        """The job's effective network topology (see :func:`scheduler.topology.job_topology`)."""
        if job.job.network_topology is None:
            return None
        topo = self.topology
        return job_topology(job.job, topo.tier_names, topo.top_tier)

    def sub_job_topology(self, job: JobInfo, sub: SubJobInfo) -> JobTopology | None:
        """A sub-job's effective network topology (see :func:`scheduler.topology.sub_job_topology`)."""
        if sub.network_topology is None:
            return None
        topo = self.topology
        return sub_job_topology(sub.network_topology, job.job, topo.tier_names, topo.top_tier)

    def allocated_hyper_node(self, job: JobInfo) -> str:
        """The lowest HyperNode holding every node the job's allocated pods sit on (Volcano's
        ``recoverAllocatedHyperNode``); "" when none is placed."""
        placed = sorted({t.node for t in job.tasks.values() if t.node >= 0 and t.status in _ALLOCATED})
        return self.topology.lowest_holding(placed)

    def _reset_cycle(self) -> None:
        self.binds: list[TaskInfo] = []
        #: Annotations plugins record on pods they place (deviceshare's ``volcano.sh/gpu-index``), by
        #: task uid; the result carries those of the pods bound.
        self.bind_annotations: dict[str, dict[str, str]] = {}
        self.evictions: list[Eviction] = []
        self.unschedulable_jobs: set[str] = set()
        self.predicate_offset = 0
        #: Per job with a network topology, the HyperNode its pods span while allocate places it
        #: (Volcano's ``task.JobAllocatedHyperNode``, read by network-topology-aware's node order).
        self.job_hyper_nodes: dict[str, str] = {}

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


def _reusable_infos(group: PodGroupPods, old: PodGroupPods | None) -> dict[int, TaskInfo]:
    """The TaskInfos of ``old`` (the previous build of ``group``'s key) by pod object id; none when
    one of the two has a job and the other not (the pods are then built again)."""
    reuse: dict[int, TaskInfo] = {}
    if old is not None and (old.info is None) == (group.info is None):
        for t, ti in zip(old.ordered, old.infos, strict=True):
            if ti is not None:
                reuse[id(t)] = ti
    return reuse


def _add_orphan(
    group: PodGroupPods,
    t: Task,
    node: int,
    status: TaskStatus,
    vd: tuple[tuple[float, ...], tuple[bool, tuple[float, float]]],
    fresh: list[TaskInfo],
) -> None:
    """Add a pod without a (known) PodGroup to ``group``: a TaskInfo of the orphan job when it sits on
    a node (also appended to ``fresh``), else None."""
    if node >= 0 and status in ON_NODE:
        orphan = TaskInfo(t, _ORPHAN_JOB, vd[0], 0, vd[1])
        orphan.status = status
        orphan.preemptable = False
        orphan.node = node
        group.placed.append(orphan)
        fresh.append(orphan)
        group.infos.append(orphan)
    else:
        group.infos.append(None)


class _OrphanJob(JobInfo):
    """Placeholder job of pods that have no PodGroup in the session."""


_ORPHAN_JOB: JobInfo = _OrphanJob.__new__(_OrphanJob)
_ORPHAN_JOB.key = ""
_ORPHAN_JOB.uid = ""
_ORPHAN_JOB.queue = ""
