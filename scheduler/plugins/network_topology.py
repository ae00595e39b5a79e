"""The network-topology-aware plugin: HyperNode gradients, HyperNode and node scores.

Volcano's ``pkg/scheduler/plugins/network-topology-aware``:

* **HyperNode gradient** (for a job in hard mode; soft mode is hard with the top tier): a
  breadth-first walk from the search root (the given HyperNode, narrowed to the highest allowed
  ancestor of the HyperNode the job's placed pods span), keeping the HyperNodes of a tier at most
  ``highestTierAllowed`` whose idle or future idle resources (at session open) cover the job's
  minimum (any HyperNode when the job is already placed somewhere; for eviction: allocatable),
  grouped by tier, lowest first. For eviction the groups are reversed and cut to
  ``hypernode.gradient.evict.max-hypernodes`` HyperNodes. A job without a hard topology gets the
  given HyperNode alone.
* **HyperNode order**: a binpack score of the job's pods' summed request over each HyperNode
  (``Σ weight x (used + request) / allocatable`` over weighted resources, 0 if one overflows);
  HyperNodes tied at the best score add the share of the job's pods already inside them.
* **Node order**: for a job with a topology, how low the common ancestor of the node's lowest
  HyperNode and the HyperNode the job spans so far is (``(maxTier - tier) / (maxTier - minTier)``,
  1 inside it), ties at the best adding the share of the job's pods there; for other pods (when
  ``hypernode.binpack.normal-pod.enable``) a per-tier binpack score of the HyperNode holding the
  node, weighted ``fading^(tier-1)`` (a tier without such a HyperNode scores 1).
  Scores are times 100 and ``weight``.

HyperNode usage is kept from session open on (allocate/deallocate events), as Volcano's
``hyperNodeResourceCache``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import AllocateHandler, ArgSpec, HyperNodeGradient, HyperNodeOrder, NodeOrder, Plugin
from scheduler.points import FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, SubJobInfo, TaskInfo
    from scheduler.topology import JobTopology, Topology

__all__ = ["NetworkTopologyAwarePlugin", "NetworkTopologyState", "reverse_and_cap"]

_MAX_NODE_SCORE = 100.0


def reverse_and_cap(gradients: list[list[str]], limit: int) -> list[list[str]]:
    """Volcano's ``reverseAndCapEvictionGradients``: highest tier first, at most ``limit``
    HyperNodes (the last ones of a cut group); ``limit`` <= 0 keeps the gradients as they are."""
    if limit <= 0:
        return gradients
    out: list[list[str]] = []
    remaining = limit
    for group in reversed(gradients):
        if remaining == 0:
            break
        if len(group) <= remaining:
            out.append(group)
            remaining -= len(group)
        else:
            out.append(group[len(group) - remaining :])
            remaining = 0
    return out


def _weight(value: Any) -> int:
    """Volcano resets a negative weight to the default, 1."""
    return int(value) if int(value) >= 0 else 1


class NetworkTopologyState(PluginState):
    """network-topology-aware's cycle: the HyperNodes' resources summed over their nodes at session
    open (Volcano's ``hyperNodeResourceCache``, ``used`` kept up to date by the allocate events), the
    weighed dimensions and the node-to-HyperNode indexes."""

    def __init__(self, session: SessionHandle, dim_weights: list[tuple[int, int]]) -> None:
        super().__init__(session)
        topo: Topology = session.topology
        self.topo = topo
        table = session.nodes
        #: The HyperNodes (the cluster top included) by name: a HyperNode's column is ``pos[name]``.
        self.names: list[str] = sorted(topo.tier)
        self.pos = {n: i for i, n in enumerate(self.names)}
        ndims, nh = len(session.dims), len(self.names)
        #: Per dimension and HyperNode column: allocatable, used, idle and future idle.
        self.alloc = np.zeros((ndims, nh), dtype=np.float64)
        self.used = np.zeros((ndims, nh), dtype=np.float64)
        self.idle = np.zeros((ndims, nh), dtype=np.float64)
        self.future = np.zeros((ndims, nh), dtype=np.float64)
        for k, name in enumerate(self.names):
            idx = topo.nodes[name]
            self.alloc[:, k] = table.alloc[:, idx].sum(axis=1)
            self.used[:, k] = table.used[:, idx].sum(axis=1)
            self.idle[:, k] = table.idle[:, idx].sum(axis=1)
            self.future[:, k] = table.future[:, idx].sum(axis=1)
        #: (dimension, weight) of each resource HyperNode binpack weighs.
        self.dim_weights = dim_weights
        self.min_tier, self.max_tier = topo.tiers[0], topo.tiers[-1]
        # Per tier, per node: the position of the first HyperNode of that tier holding it (-1: none).
        self.tier_of_node: dict[int, IntArray] = {}
        for tier in range(self.min_tier, self.max_tier + 1):
            at = np.full(len(table), -1, dtype=np.intp)
            for name in reversed(topo.by_tier.get(tier, [])):
                at[topo.nodes[name]] = self.pos[name]
            self.tier_of_node[tier] = at
        #: The node each placed task was placed on (to undo its usage when it is unplaced).
        self.placed: dict[str, int] = {}
        #: Per node: the columns of the HyperNodes holding it.
        self.holding = [np.array([self.pos[n] for n in names], dtype=np.intp) for names in topo.holding]


class NetworkTopologyAwarePlugin(Plugin, NodeOrder, HyperNodeOrder, HyperNodeGradient, AllocateHandler):
    """Keeps gangs inside the lowest network tier they fit in (see the module docstring)."""

    name = "network-topology-aware"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "weight": ArgSpec("int", 1, "scores are times 100 and this (negative: 1)"),
        "hypernode.binpack.cpu": ArgSpec("int", 1, "HyperNode binpack weight of cpu (negative: 1)"),
        "hypernode.binpack.memory": ArgSpec("int", 1, "HyperNode binpack weight of memory (negative: 1)"),
        "hypernode.binpack.resources": ArgSpec("str", "", "further resources the HyperNode binpack weighs"),
        "hypernode.binpack.normal-pod.enable": ArgSpec(
            "bool", True, "score pods without a topology by HyperNode binpack", lenient="the default, true"
        ),
        "hypernode.binpack.normal-pod.fading": ArgSpec("float", 0.8, "tier weight fading (negative: 0.8)"),
        "hypernode.gradient.evict.max-hypernodes": ArgSpec("int", 8, "HyperNodes tried for eviction (<= 0: 8)"),
    }
    argument_prefixes: ClassVar[Mapping[str, ArgSpec]] = {"hypernode.binpack.resources.": ArgSpec("int", 1)}

    def __init__(self, args: Mapping[str, Any], hierarchy: bool = False) -> None:
        super().__init__(args, hierarchy)
        a = self.args
        self.global_weight = _weight(a["weight"])
        self.cpu_weight = _weight(a["hypernode.binpack.cpu"])
        self.memory_weight = _weight(a["hypernode.binpack.memory"])
        self.resource_weights: dict[str, int] = {}
        for name in str(a["hypernode.binpack.resources"]).split(","):
            name = name.strip()
            if name:
                self.resource_weights[name] = _weight(a.get(f"hypernode.binpack.resources.{name}", 1))
        self.normal_pods = bool(a["hypernode.binpack.normal-pod.enable"])
        fading = float(a["hypernode.binpack.normal-pod.fading"])
        self.fading = fading if fading >= 0 else 0.8
        evict = int(a["hypernode.gradient.evict.max-hypernodes"])
        self.evict_max = evict if evict > 0 else 8

    def _binpack_weight(self, name: str) -> int | None:
        """The weight of resource ``name`` in HyperNode binpack (None: not weighed)."""
        if name == "cpu":
            return self.cpu_weight
        if name == "memory":
            return self.memory_weight
        return self.resource_weights.get(name)

    # -- open ------------------------------------------------------------------------------------

    def open(self, session: SessionHandle) -> NetworkTopologyState:
        """The HyperNode resource cache over ``session``, with the dimensions HyperNode binpack weighs."""
        dim_weights: list[tuple[int, int]] = []
        for d, dim in enumerate(session.dims):
            w = self._binpack_weight(dim)
            if w is not None:
                dim_weights.append((d, w))
        return NetworkTopologyState(session, dim_weights)

    # -- events ----------------------------------------------------------------------------------

    def on_allocate(self, st: NetworkTopologyState, task: TaskInfo) -> None:
        if task.node >= 0:
            st.placed[task.uid] = task.node
            cols = st.holding[task.node]
            st.used[:, cols] += np.asarray(task.req, dtype=np.float64)[:, None]

    def on_deallocate(self, st: NetworkTopologyState, task: TaskInfo) -> None:
        # An unplaced task has left its node already: the node it was placed on is remembered.
        node = task.node if task.node >= 0 else st.placed.pop(task.uid, -1)
        if node >= 0:
            cols = st.holding[node]
            st.used[:, cols] -= np.asarray(task.req, dtype=np.float64)[:, None]

    # -- scores ----------------------------------------------------------------------------------

    def _binpack(self, st: NetworkTopologyState, request: Sequence[float], cols: IntArray) -> FloatArray:
        """Binpack score of ``request`` over HyperNode columns ``cols`` (0 where it overflows)."""
        total = np.zeros(len(cols), dtype=np.float64)
        weight = 0
        over = np.zeros(len(cols), dtype=np.bool_)
        for d, w in st.dim_weights:
            r = request[d]
            if r <= 0:
                continue
            alloc = st.alloc[d, cols]
            used = st.used[d, cols] + r
            over |= used > alloc
            with np.errstate(divide="ignore", invalid="ignore"):
                total += w * np.where(alloc > 0, used / np.where(alloc > 0, alloc, 1.0), 0.0)
            weight += w
        if weight <= 0:
            return np.zeros(len(cols), dtype=np.float64)
        return np.where(over, 0.0, total / weight)

    def _task_share(self, st: NetworkTopologyState, name: str, job: JobInfo | SubJobInfo) -> float:
        """The share of the job's (or sub-job's) pods on the nodes of HyperNode ``name``."""
        if not job.tasks:
            return 0.0
        mask = st.topo.mask(name)
        inside = sum(1 for t in job.tasks.values() if t.node >= 0 and mask[t.node])
        return inside / len(job.tasks)

    def hyper_node_base(
        self, st: NetworkTopologyState, job: JobInfo | SubJobInfo, names: Sequence[str]
    ) -> dict[str, float]:
        """The binpack part of :meth:`hyper_node_order` (before ties add the pods' share): the
        order of HyperNodes by it does not depend on which others are candidates."""
        request = [0.0] * len(st.session.dims)
        for t in job.tasks.values():
            for d, v in enumerate(t.req):
                request[d] += v
        cols = np.array([st.pos[n] for n in names], dtype=np.intp)
        return dict(zip(names, self._binpack(st, request, cols).tolist(), strict=True))

    def hyper_node_order(
        self, st: NetworkTopologyState, job: JobInfo | SubJobInfo, names: Sequence[str]
    ) -> Mapping[str, float]:
        """Volcano's ``HyperNodeOrderFn`` for a sub-job (a job without sub-group policies is its one sub-job)."""
        scores = self.hyper_node_base(st, job, names)
        if scores:
            best = max(scores.values())
            tied = [n for n in names if scores[n] == best]
            if len(tied) > 1:
                for n in tied:
                    scores[n] += self._task_share(st, n, job)
        scale = _MAX_NODE_SCORE * self.global_weight
        return {n: s * scale for n, s in scores.items()}

    def node_order(self, st: NetworkTopologyState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Volcano's ``batchNodeOrderFn``."""
        session = st.session
        job = task.job
        if job.key not in session.jobs:
            return np.zeros(len(nodes), dtype=np.float64)
        sub = job.sub_job_of(task) if job.grouped else None
        if sub is not None:  # a sub-job of a job with sub-group policies: by the sub-job's own topology
            topology = sub.network_topology
            scores = (
                self._normal_pod_scores(st, task, nodes)
                if topology is None
                else self._topology_scores(st, job.key, sub, nodes)
            )
        elif session.job_topology(job) is None:
            scores = self._normal_pod_scores(st, task, nodes)
        else:
            scores = self._topology_scores(st, job.key, job, nodes)
        return scores * (_MAX_NODE_SCORE * self.global_weight)

    def _normal_pod_scores(self, st: NetworkTopologyState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        if not self.normal_pods:
            return np.zeros(len(nodes), dtype=np.float64)
        total = np.zeros(len(nodes), dtype=np.float64)
        weights = 0.0
        for tier in range(st.min_tier, st.max_tier + 1):
            w = math.pow(self.fading, tier - 1)
            weights += w
            at = st.tier_of_node[tier][nodes]
            tier_score = np.ones(len(nodes), dtype=np.float64)
            inside = at >= 0
            if inside.any():
                cols = np.unique(at[inside])
                by_col = dict(zip(cols.tolist(), self._pod_binpack(st, task, cols).tolist(), strict=True))
                tier_score[inside] = [by_col[c] for c in at[inside].tolist()]
            total += w * tier_score
        if weights <= 0:
            return np.zeros(len(nodes), dtype=np.float64)
        return total / weights

    def _pod_binpack(self, st: NetworkTopologyState, task: TaskInfo, cols: IntArray) -> FloatArray:
        """Volcano's ``getPodHyperNodeBinPackingScore`` (0 where the pod overflows a resource)."""
        return self._binpack(st, task.req, cols)

    def _tier_score(self, st: NetworkTopologyState, tier: int) -> float:
        if st.min_tier == st.max_tier:
            return 1.0
        if st.min_tier <= tier <= st.max_tier:
            return (st.max_tier - tier) / (st.max_tier - st.min_tier)
        return 0.0

    def _topology_scores(
        self, st: NetworkTopologyState, key: str, group: JobInfo | SubJobInfo, nodes: IntArray
    ) -> FloatArray:
        """By the HyperNode job ``key`` (or its sub-job ``group``) spans so far, which allocate sets per task it
        places; ties at the best add the share of the group's pods there."""
        allocated = st.session.job_hyper_nodes.get(key, "")
        out = np.zeros(len(nodes), dtype=np.float64)
        if not allocated:
            return out
        topo = st.topo
        leaves = [topo.leaf[int(i)] for i in nodes]
        for k, leaf in enumerate(leaves):
            if not leaf:
                continue
            if leaf == allocated:
                out[k] = 1.0
                continue
            lca = topo.lca(leaf, allocated)
            if lca in topo.tier:
                out[k] = self._tier_score(st, topo.tier[lca])
        if len(out):
            best = out.max()
            tied = np.flatnonzero(out == best)
            if len(tied) > 1:
                for k in tied.tolist():
                    if leaves[k]:
                        out[k] += self._task_share(st, leaves[k], group)
        return out

    # -- gradient --------------------------------------------------------------------------------

    def hyper_node_gradient(
        self, st: NetworkTopologyState, job: JobInfo, root: str, allocated: str, minimum: Sequence[float], purpose: str
    ) -> list[list[str]]:
        """The registered gradient function: [[root]] for a job without a hard topology, else
        :meth:`gradient`, reversed and cut for eviction."""
        topology = st.session.job_topology(job)
        if topology is None or not topology.hard:
            return [[root]]
        result = self.gradient(st, root, topology.highest, allocated, minimum, purpose)
        if purpose != "evict":
            return result
        return reverse_and_cap(result, self.evict_max)

    def sub_job_gradient(
        self,
        st: NetworkTopologyState,
        topology: JobTopology | None,
        root: str,
        allocated: str,
        minimum: Sequence[float],
        purpose: str,
    ) -> list[list[str]]:
        """Volcano's ``HyperNodeGradientForSubJobFn``: as :meth:`hyper_node_gradient`, by the sub-job's topology."""
        if topology is None or not topology.hard:
            return [[root]]
        result = self.gradient(st, root, topology.highest, allocated, minimum, purpose)
        return result if purpose != "evict" else reverse_and_cap(result, self.evict_max)

    def gradient(
        self, st: NetworkTopologyState, root: str, highest: int, allocated: str, minimum: Sequence[float], purpose: str
    ) -> list[list[str]]:
        """Volcano's ``hyperNodeGradientFn`` (see the module docstring); [] when the job's
        allowed subtree and ``root`` do not meet."""
        topo = st.topo
        start = root
        if allocated:
            allowed = ""
            for a in topo.ancestors(allocated):
                if topo.tier.get(a, 0) > highest:
                    break
                allowed = a
            if not allowed:
                return []
            lca = topo.lca(root, allowed)
            if lca == allowed:
                start = root
            elif lca == root:
                start = allowed
            else:
                return []
        groups: dict[int, list[str]] = {}
        queue = [start]
        seen = {start}
        while queue:
            current = queue.pop(0)
            if self._eligible(st, current, highest, allocated, minimum, purpose):
                groups.setdefault(topo.tier[current], []).append(current)
            for child in topo.children.get(current, ()):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return [groups[t] for t in sorted(groups)]

    def _eligible(
        self, st: NetworkTopologyState, name: str, highest: int, allocated: str, minimum: Sequence[float], purpose: str
    ) -> bool:
        if st.topo.tier[name] > highest:
            return False
        if allocated:
            return True
        k = st.pos[name]

        def covers(m: np.ndarray) -> bool:
            return all(v <= m[d, k] for d, v in enumerate(minimum) if v > 0)

        if purpose == "evict":
            return covers(st.alloc)
        return covers(st.idle) or covers(st.future)
