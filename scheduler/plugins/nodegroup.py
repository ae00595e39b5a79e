"""The nodegroup plugin: queue-to-node-group affinity, as Volcano's ``nodegroup`` plugin.

A node's group is its ``volcano.sh/nodegroup-name`` label; a queue names groups in its
``spec.affinity`` (``nodeGroupAffinity`` / ``nodeGroupAntiAffinity``, each with required and
preferred lists). With ``enableHierarchy`` a queue without ``spec.affinity`` inherits that of its
nearest ancestor (``spec.parent``, "" meaning ``root``).

Predicate (UnschedulableAndUnresolvable): a node without a group fails unless ``strict`` is false
and the queue names no group; a grouped node fails when the queue names no group; otherwise the
group must be required or preferred (affinity) and not anti-required, an anti-preferred group
being allowed again. Score: 100 for a required group, + 50 for a preferred one (with
``enablePreferredOrder``: 50 x (n - index) / n by its place in the preferred list), -1 for an
anti-preferred group (overriding the rest); 0 for nodes without a group or queues without affinity.

Resource limits: the queue annotation ``volcano.sh/nodegroup-resource-limits`` (JSON
``{"group1": {"cpu": "3", "memory": "8Gi"}}``) caps what the queue's pods may hold in each group:
a node of a limited group fails when the queue's allocated pods there (Allocated, Binding, Bound,
Running, and pods allocated or pipelined in the session) plus the task exceed the limit on a named
resource (resources not named are unlimited); an annotation that is not such JSON fails every
node for the queue's pods.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import AllocateHandler, ArgSpec, NodeOrder, Plugin, Predicate
from scheduler.info import ALLOCATED
from scheduler.points import Filter, FloatArray, IntArray
from scheduler.quantity import QuantityError, parse_resource

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo
    from scheduler.model import NodeGroupAffinity

__all__ = ["NODE_GROUP_LABEL", "NodeGroupPlugin", "NodeGroupState"]

NODE_GROUP_LABEL = "volcano.sh/nodegroup-name"
BASE_SCORE = 100.0
LABEL_NOT_FOUND = "node group label not found"
AFFINITY_NOT_FOUND = "node group affinity not specified"
UNSATISFIED = "node does not satisfy the node group affinity"
LIMIT_INVALID = "node group resource limit annotation invalid"
LIMIT_EXCEEDED = "node group resource limit exceeded"


def parse_limits(raw: str) -> dict[str, dict[str, int]] | None:
    """Return ``{group: {resource: amount}}`` of a limits annotation ({} when empty, None when invalid)."""
    if not raw:
        return {}
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            return None
        out: dict[str, dict[str, int]] = {}
        for group, amounts in data.items():
            if not isinstance(amounts, dict):
                return None
            out[str(group)] = {str(k): parse_resource(str(k), v) for k, v in amounts.items()}
        return out
    except (ValueError, QuantityError, TypeError):
        return None


def allows(aff: NodeGroupAffinity, group: str) -> bool:
    """Volcano's ``queueGroupAffinity.predicate``: may a pod of the queue run in ``group``."""
    ok = group in aff.required or group in aff.preferred
    if group in aff.anti_required:
        ok = False
    if group in aff.anti_preferred:
        ok = True
    return ok


def score(aff: NodeGroupAffinity, group: str, preferred_order: bool) -> float:
    """Volcano's ``queueGroupAffinity.score`` of a node in ``group``."""
    value = 0.0
    if group in aff.required:
        value += BASE_SCORE
    if preferred_order:
        order = {g: i for i, g in enumerate(aff.preferred)}  # a repeated group keeps its last index, as Go's map
        if group in order:
            n = len(order)
            value += 0.5 * BASE_SCORE * float(n - order[group]) / float(n)
    elif group in aff.preferred:
        value += 0.5 * BASE_SCORE
    if group in aff.anti_preferred:
        value = -1.0
    return value


class NodeGroupState(PluginState):
    """Nodegroup's cycle: its arguments, each node's group, each queue's affinity and resource limits (None
    for an invalid annotation; queues without limits absent), the queues' use of each group and which task
    is counted where, and the filters and scores by queue (filled lazily)."""

    def __init__(
        self,
        session: SessionHandle,
        strict: bool,
        preferred_order: bool,
        groups: list[str | None],
        affinity: dict[str, NodeGroupAffinity | None],
        limits: dict[str, dict[str, dict[str, int]] | None],
    ) -> None:
        super().__init__(session)
        self.strict = strict
        self.preferred_order = preferred_order
        self.groups = groups
        self.affinity = affinity
        self.limits = limits
        #: (queue, group) -> resource -> amount held by the queue's allocated pods in the group.
        self.used: dict[tuple[str, str], dict[str, float]] = {}
        #: task uid -> the (queue, group) it is counted in.
        self.counted: dict[str, tuple[str, str]] = {}
        self.filters: dict[str, list[Filter]] = {}
        self.scores: dict[str, FloatArray] = {}


class NodeGroupPlugin(Plugin, Predicate, NodeOrder, AllocateHandler):
    """Queue-to-node-group affinity (predicate and node order)."""

    name = "nodegroup"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "strict": ArgSpec("bool", True, "nodes without a group are refused even to queues without affinity"),
        "enablePreferredOrder": ArgSpec("bool", False, "score preferred groups by their list order"),
    }

    def open(self, session: SessionHandle) -> NodeGroupState:
        """Each node's group, each queue's affinity and limits, and the limited queues' use of each group."""
        limits: dict[str, dict[str, dict[str, int]] | None] = {}
        for name, q in session.queues.items():
            parsed = parse_limits(q.queue.node_group_resource_limits)
            if parsed != {}:
                limits[name] = parsed
        st = NodeGroupState(
            session,
            bool(self.args["strict"]),
            bool(self.args["enablePreferredOrder"]),
            [n.labels.get(NODE_GROUP_LABEL) for n in session.nodes.nodes],
            self._affinity(session),
            limits,
        )
        if st.limits:
            for job in session.jobs.values():
                if job.queue not in st.limits:
                    continue
                for t in job.tasks.values():
                    if t.status in ALLOCATED and t.node >= 0:
                        self.on_allocate(st, t)
        return st

    def _affinity(self, session: SessionHandle) -> dict[str, NodeGroupAffinity | None]:
        """Each queue's affinity: its own, else (with ``enableHierarchy``) its nearest ancestor's."""
        own = {name: q.queue.node_group_affinity for name, q in session.queues.items()}
        affinity: dict[str, NodeGroupAffinity | None] = dict(own)
        if self.hierarchy:
            for name in own:
                if own[name] is not None:
                    continue
                seen = {name}
                cur = session.queues[name].queue.parent or ("" if name == "root" else "root")
                while cur and cur in own and cur not in seen:
                    if own[cur] is not None:
                        affinity[name] = own[cur]
                        break
                    seen.add(cur)
                    cur = session.queues[cur].queue.parent or ("" if cur == "root" else "root")
        return affinity

    def on_allocate(self, st: NodeGroupState, task: TaskInfo) -> None:
        """Count the task in its queue's use of its node's group (queues with limits only)."""
        queue = task.job.queue
        if queue not in st.limits or task.node < 0 or task.uid in st.counted:
            return
        group = st.groups[task.node]
        if group is None:
            return
        used = st.used.setdefault((queue, group), {})
        for name, d in st.session.dim_index.items():
            if task.req[d]:
                used[name] = used.get(name, 0.0) + task.req[d]
        st.counted[task.uid] = (queue, group)

    def on_deallocate(self, st: NodeGroupState, task: TaskInfo) -> None:
        """Take the task out of its queue's group use."""
        key = st.counted.pop(task.uid, None)
        if key is None:
            return
        used = st.used[key]
        for name, d in st.session.dim_index.items():
            if task.req[d]:
                used[name] = used.get(name, 0.0) - task.req[d]

    def _limit_filter(self, st: NodeGroupState, task: TaskInfo, queue: str) -> Filter:
        limits = st.limits[queue]
        reasons = []
        for group in st.groups:
            if limits is None:
                reasons.append(LIMIT_INVALID)
                continue
            limit = limits.get(group) if group is not None else None
            if group is None or not limit:
                reasons.append("")
                continue
            used = st.used.get((queue, group), {})
            dims = st.session.dim_index
            over = any(
                used.get(name, 0.0) + (task.req[dims[name]] if name in dims else 0.0) > amount
                for name, amount in limit.items()
            )
            reasons.append(LIMIT_EXCEEDED if over else "")
        passed = np.array([not r for r in reasons], dtype=np.bool_)
        return Filter(self.name, passed, LIMIT_EXCEEDED, True, reasons)

    def predicate(self, st: NodeGroupState, task: TaskInfo) -> Sequence[Filter]:
        """One unresolvable filter, the same for every pod of a queue."""
        queue = task.job.queue
        cached = st.filters.get(queue)
        if cached is None:
            aff = st.affinity.get(queue)
            unset = aff is None or aff.empty
            reasons = []
            for group in st.groups:
                if group is None:
                    reasons.append("" if not st.strict and unset else LABEL_NOT_FOUND)
                elif aff is None or unset:
                    reasons.append(AFFINITY_NOT_FOUND)
                else:
                    reasons.append("" if allows(aff, group) else UNSATISFIED)
            passed = np.array([not r for r in reasons], dtype=np.bool_)
            cached = st.filters[queue] = [Filter(self.name, passed, UNSATISFIED, True, reasons)]
        if queue in st.limits:
            # Volcano checks an invalid annotation first, then affinity, then the limit.
            limit = self._limit_filter(st, task, queue)
            if st.limits[queue] is None:
                return [limit]
            return [cached[0], limit]
        return cached

    def node_order(self, st: NodeGroupState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """The queue's affinity score of each node's group."""
        queue = task.job.queue
        scores = st.scores.get(queue)
        if scores is None:
            aff = st.affinity.get(queue)
            scores = np.array(
                [0.0 if g is None or aff is None else score(aff, g, st.preferred_order) for g in st.groups],
                dtype=np.float64,
            )
            st.scores[queue] = scores
        out: FloatArray = scores[nodes]
        return out
