"""The task-topology plugin: affinity and anti-affinity between the tasks (roles) of one job.

Volcano's ``pkg/scheduler/plugins/task-topology``. A PodGroup's annotations
``volcano.sh/task-topology-affinity`` and ``volcano.sh/task-topology-anti-affinity`` (groups of task
names separated by ``;``, names by ``,``; a group of one name is about that task with itself) and
``volcano.sh/task-topology-task-order`` (task names, first placed first) shape where its pending pods go.
A job whose annotations name a task it does not have (or one twice in a group) is left alone.

At session open the pods of such a job whose task has a topology are put into *buckets* (a bucket is
meant to share a node): pods already on a node first (one bucket per node, by node name, descending),
then the pending ones in task order (the annotation's order, then the strongest topology: self
anti-affinity, inter affinity, self affinity, inter anti-affinity; then name, descending), each into the
bucket it has the most affinity with (affinity counts the bucket's pods of affine tasks, anti-affinity
subtracts; ties to the lighter bucket), or a new one when the best is negative.

* **task order**: pods in a bucket first; within a job, the fuller bucket, then the lower bucket, then
  the task order above.
* **node order**: for a pod in a bucket on a node where its node idle + releasing covers it: the pods
  of its bucket already on that node, minus the node's pods of anti-affine tasks, plus the bucket's
  pending pods, minus one for each further bucket pod needed before the bucket's remaining request
  fits the node; x ``task-topology.weight`` (1) x 100 / the largest bucket.
* **allocate events**: a placed pod counts on its node (Volcano never undoes it within the session).

The task name is the pod's role (``volcano.sh/task-spec``, annotation then label).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import AllocateHandler, ArgSpec, NodeOrder, Plugin, TaskOrder
from scheduler.model import TaskStatus
from scheduler.points import FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = ["TaskTopologyPlugin", "TaskTopologyState", "read_topology"]

#: Volcano's affinityPriority: self anti-affinity 4, inter affinity 3, self affinity 2, inter anti-affinity 1.
_SELF_ANTI, _INTER_AFF, _SELF_AFF, _INTER_ANTI = 4, 3, 2, 1


@dataclass
class Topology:
    """The parsed annotations (Volcano's ``TaskTopology``)."""

    affinity: list[list[str]] | None = None
    anti_affinity: list[list[str]] | None = None
    task_order: list[str] | None = None


def _check(roles: set[str], groups: list[list[str]]) -> str:
    for group in groups:
        seen: set[str] = set()
        for name in group:
            if not name:
                continue
            if name not in roles:
                return f"task {name} do not exist in job"
            if name in seen:
                return f"task {name} is duplicate in job"
            seen.add(name)
    return ""


def read_topology(
    roles: set[str], affinity: str | None, anti_affinity: str | None, order: str | None
) -> tuple[Topology | None, str]:
    """Volcano's ``readTopologyFromPgAnnotations``: (topology or None, error)."""
    if affinity is None and anti_affinity is None and order is None:
        return None, ""
    topo = Topology()
    if affinity is not None:
        groups = [g.split(",") for g in affinity.split(";")]
        problem = _check(roles, groups)
        if problem:
            return None, problem
        topo.affinity = groups
    if anti_affinity is not None:
        groups = [g.split(",") for g in anti_affinity.split(";")]
        problem = _check(roles, groups)
        if problem:
            return None, problem
        topo.anti_affinity = groups
    if order is not None:
        topo.task_order = order.split(",")
        problem = _check(roles, [topo.task_order])
        if problem:
            return None, problem
    return topo, ""


@dataclass
class _Bucket:
    index: int
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    names: dict[str, int] = field(default_factory=dict)
    req_score: float = 0.0
    request: list[float] = field(default_factory=list)
    bound: int = 0
    node: dict[int, int] = field(default_factory=dict)


class _Job:
    """Volcano's ``JobManager`` for one job."""

    def __init__(self, topo: Topology, ndims: int, mem_dim: int) -> None:
        self.ndims, self.mem_dim = ndims, mem_dim
        self.buckets: list[_Bucket] = []
        self.in_bucket: dict[str, int] = {}
        self.priority: dict[str, int] = {}
        self.order: dict[str, int] = {}
        self.inter_aff: dict[str, set[str]] = {}
        self.self_aff: set[str] = set()
        self.inter_anti: dict[str, set[str]] = {}
        self.self_anti: set[str] = set()
        self.max_size = 0
        self.node_names: dict[int, dict[str, int]] = {}
        for groups, self_set, inter, self_p, inter_p in (
            (topo.affinity, self.self_aff, self.inter_aff, _SELF_AFF, _INTER_AFF),
            (topo.anti_affinity, self.self_anti, self.inter_anti, _SELF_ANTI, _INTER_ANTI),
        ):
            for group in groups or ():
                if len(group) == 1:
                    self_set.add(group[0])
                    self._mark(group[0], self_p)
                    continue
                for i, src in enumerate(group):
                    for dst in group[:i]:
                        inter.setdefault(src, set()).add(dst)
                        inter.setdefault(dst, set()).add(src)
                    self._mark(src, inter_p)
        for i, name in enumerate(topo.task_order or ()):
            self.order[name] = len(topo.task_order or ()) - i

    def _mark(self, name: str, priority: int) -> None:
        if priority > self.priority.get(name, 0):
            self.priority[name] = priority

    def affinity_order(self, a: TaskInfo, b: TaskInfo) -> int:
        la, lb = a.role, b.role
        if la == lb:
            return 0
        oa, ob = self.order.get(la, 0), self.order.get(lb, 0)
        if oa != ob:
            return 1 if oa > ob else -1
        pa, pb = self.priority.get(la, 0), self.priority.get(lb, 0)
        if pa != pb:
            return 1 if pa > pb else -1
        return 0

    def set_affinity(self, name: str, names: Mapping[str, int], only_anti: bool) -> int:
        score = 0
        if not name:
            return score
        for other, count in names.items():
            same = other == name
            if not only_anti and (name in self.self_aff if same else other in self.inter_aff.get(name, ())):
                score += count
            if name in self.self_anti if same else other in self.inter_anti.get(name, ()):
                score -= count
        return score

    def bucket_of(self, task: TaskInfo) -> _Bucket | None:
        i = self.in_bucket.get(task.uid, -1)
        return None if i < 0 else self.buckets[i]

    def _req_score(self, req: Sequence[float]) -> float:
        # cpu millicores + memory MiB + scalars (Volcano's milli-units: x 1000), pods left out.
        score = req[0] + req[self.mem_dim] / 1024 / 1024
        return score + sum(req[d] * 1000 for d in range(3, self.ndims))

    def add(self, bucket: _Bucket, task: TaskInfo, node: int) -> None:
        self.in_bucket[task.uid] = bucket.index
        bucket.names[task.role] = bucket.names.get(task.role, 0) + 1
        if node >= 0:
            bucket.node[node] = bucket.node.get(node, 0) + 1
            bucket.bound += 1
        else:
            bucket.tasks[task.uid] = task
            bucket.req_score += self._req_score(task.req)
            for d, v in enumerate(task.req):
                bucket.request[d] += v
        self.max_size = max(self.max_size, len(bucket.tasks) + bucket.bound)

    def build(self, tasks: list[TaskInfo]) -> None:
        # Volcano's sort.Reverse(TaskOrder): placed pods first (node name descending), then affinity order.
        placed = sorted((t for t in tasks if t.node >= 0), key=lambda t: t.task.node_name or "", reverse=True)
        pending = [t for t in tasks if t.node < 0]

        def less(a: TaskInfo, b: TaskInfo) -> int:
            r = self.affinity_order(a, b)
            if r:
                return -r  # reversed: the higher order first
            return -1 if a.task.name > b.task.name else (1 if a.task.name < b.task.name else 0)

        pending.sort(key=functools.cmp_to_key(less))
        by_node: dict[int, _Bucket] = {}
        for t in [*placed, *pending]:
            chosen: _Bucket | None = None
            best = -(2**31)
            if t.node >= 0:
                best = 0
                chosen = by_node.get(t.node)
            else:
                for b in self.buckets:
                    aff = self.set_affinity(t.role, b.names, False)
                    if aff > best:
                        best, chosen = aff, b
                    elif aff == best and chosen is not None and b.req_score < chosen.req_score:
                        chosen = b
            if best < 0 or chosen is None:
                chosen = _Bucket(len(self.buckets), request=[0.0] * self.ndims)
                self.buckets.append(chosen)
                if t.node >= 0:
                    by_node[t.node] = chosen
            self.add(chosen, t, t.node)

    def bound(self, task: TaskInfo) -> None:
        if task.role:
            names = self.node_names.setdefault(task.node, {})
            names[task.role] = names.get(task.role, 0) + 1
        bucket = self.bucket_of(task)
        if bucket is not None:
            bucket.node[task.node] = bucket.node.get(task.node, 0) + 1
            bucket.bound += 1
            if task.uid in bucket.tasks:
                del bucket.tasks[task.uid]
                bucket.req_score -= self._req_score(task.req)
                for d, v in enumerate(task.req):
                    bucket.request[d] -= v


class TaskTopologyState(PluginState):
    """task-topology's cycle: its node-order weight and the bucket manager of each job with a topology."""

    def __init__(self, session: SessionHandle, weight: int) -> None:
        super().__init__(session)
        self.weight = weight
        #: By job key: the job's buckets (only jobs with pending pods and a valid topology).
        self.jobs: dict[str, _Job] = {}


class TaskTopologyPlugin(Plugin, TaskOrder, NodeOrder, AllocateHandler):
    """Buckets of a job's tasks that should share nodes (see the module docstring)."""

    name = "task-topology"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {"task-topology.weight": ArgSpec("int", 1, "node-order weight")}

    def open(self, session: SessionHandle) -> TaskTopologyState:
        """The buckets of every job with pending pods whose annotations give a valid topology."""
        st = TaskTopologyState(session, int(self.args["task-topology.weight"]))
        mem = session.dim_index["memory"]
        for job in session.jobs.values():
            j = job.job
            if not job.counts[TaskStatus.PENDING] or (
                j.task_affinity is None and j.task_anti_affinity is None and j.task_order is None
            ):
                continue
            roles = {t.role for t in job.tasks.values()}
            topo, problem = read_topology(roles, j.task_affinity, j.task_anti_affinity, j.task_order)
            if topo is None or problem:
                continue
            manager = _Job(topo, session.ndims, mem)
            manager.build([t for t in job.tasks.values() if t.role and t.role in manager.priority])
            st.jobs[job.key] = manager
        return st

    def task_order(self, st: TaskTopologyState, a: TaskInfo, b: TaskInfo) -> int:
        """Pods in buckets first; fuller, then lower buckets; then the task order."""
        ma, mb = st.jobs.get(a.job.key), st.jobs.get(b.job.key)
        if ma is None or mb is None:
            return 0
        ba, bb = ma.bucket_of(a), mb.bucket_of(b)
        if (ba is None) != (bb is None):
            return -1 if ba is not None else 1
        if a.job is not b.job or ba is None or bb is None:
            return 0
        if len(ba.tasks) != len(bb.tasks):
            return -1 if len(ba.tasks) > len(bb.tasks) else 1
        if ba.index == bb.index:
            return -ma.affinity_order(a, b)
        return -1 if ba.index < bb.index else 1

    def node_order(self, st: TaskTopologyState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Volcano's bucket score of each node."""
        out = np.zeros(len(nodes), dtype=np.float64)
        manager = st.jobs.get(task.job.key)
        if manager is None:
            return out
        bucket = manager.bucket_of(task)
        if bucket is None:
            return out
        table = st.session.nodes
        for k, i in enumerate(nodes.tolist()):
            room = table.idle[:, i] + table.releasing[:, i]
            if any(v > room[d] for d, v in enumerate(task.req)):
                continue
            score = bucket.node.get(i, 0)
            names = manager.node_names.get(i)
            if names:
                anti = manager.set_affinity(task.role, names, True)
                if anti < 0:
                    score += anti
            score += len(bucket.tasks)
            if not all(v <= room[d] for d, v in enumerate(bucket.request)):
                remains = list(bucket.request)
                for uid in sorted(bucket.tasks):
                    if uid == task.uid:
                        continue
                    for d, v in enumerate(bucket.tasks[uid].req):
                        remains[d] -= v
                    score -= 1
                    if all(v <= room[d] for d, v in enumerate(remains)):
                        break
            value = float(score * st.weight)
            if manager.max_size:
                value = value * 100.0 / manager.max_size
            out[k] = value
        return out

    def on_allocate(self, st: TaskTopologyState, task: TaskInfo) -> None:
        manager = st.jobs.get(task.job.key)
        if manager is not None and task.node >= 0:
            manager.bound(task)

    def on_deallocate(self, st: TaskTopologyState, task: TaskInfo) -> None:
        """Volcano's plugin registers no deallocate handler: a discarded placement still counts."""
