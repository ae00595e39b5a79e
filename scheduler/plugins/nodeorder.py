"""The nodeorder plugin: Kubernetes' scores (least/most requested, balanced allocation, preferred
node affinity, PreferNoSchedule taints, topology spread, preferred inter-pod affinity), vectorised
over the session's node table."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import ArgSpec, NodeOrder, SharedState, restore_shared
from scheduler.plugins.predicates import spread_counts, tolerated
from scheduler.points import FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo
    from scheduler.model import Taint
    from scheduler.nodes import NodeTable

__all__ = ["NodeOrderPlugin", "NodeOrderState"]


def _least_requested(requested: FloatArray, alloc: FloatArray, safe: FloatArray) -> FloatArray:
    """Kubernetes LeastAllocated per resource; ``safe`` is alloc with zeros replaced by 1."""
    score = np.floor((alloc - requested) * 100.0 / safe)
    return np.where((alloc > 0) & (requested <= alloc), score, 0.0)


def _most_requested(requested: FloatArray, alloc: FloatArray, safe: FloatArray) -> FloatArray:
    """Kubernetes MostAllocated per resource."""
    score = np.floor(np.minimum(requested, alloc) * 100.0 / safe)
    return np.where(alloc > 0, score, 0.0)


def _affinity_domains(task: TaskInfo, table: NodeTable) -> dict[tuple[str, str], int]:
    """The weights inter-pod affinity scoring adds per domain (topology key, value): for every
    placed pod other than ``task``, the task's preferred terms selecting it (+weight for affinity,
    -weight for anti-affinity) and its own preferred terms selecting the task, each at the domain
    of its node."""
    me = task.task
    mine = [(w.term, w.weight) for w in me.preferred_pod_affinity]
    mine += [(w.term, -w.weight) for w in me.preferred_anti_affinity]
    table_nodes = table.nodes
    domains: dict[tuple[str, str], int] = {}

    def add(key: str, labels: Mapping[str, str], weight: int) -> None:
        value = labels.get(key)
        if value is not None:
            domain = (key, value)
            domains[domain] = domains.get(domain, 0) + weight

    for i, placed in enumerate(table.tasks):
        if not placed:
            continue
        labels = table_nodes[i].labels
        if not labels:
            continue
        for other in placed.values():
            if other is task:
                continue
            o = other.task
            for term, weight in mine:
                if term.selects(o, me.namespace):
                    add(term.topology_key, labels, weight)
            for w in o.preferred_pod_affinity:
                if w.term.selects(me, o.namespace):
                    add(w.term.topology_key, labels, w.weight)
            for w in o.preferred_anti_affinity:
                if w.term.selects(me, o.namespace):
                    add(w.term.topology_key, labels, -w.weight)
    return domains


class NodeOrderState(PluginState):
    """Nodeorder's cycle: the scores' weights, the nodes' cpu and memory capacity (arrays for the
    vector scores, lists for the scalar one), PreferNoSchedule taints, the raw node-affinity and
    taint scores per pod signature, and whether this snapshot's pods have preferred pod affinity."""

    w_least: float
    w_most: float
    w_balanced: float
    w_affinity: float
    w_taint: float
    w_spread: float
    w_pod: float
    alloc_cpu: FloatArray
    alloc_mem: FloatArray
    #: ``alloc_*`` with zeros replaced by 1 (safe denominators).
    safe_cpu: FloatArray
    safe_mem: FloatArray
    alloc_cpu_l: list[float]
    alloc_mem_l: list[float]
    safe_cpu_l: list[float]
    safe_mem_l: list[float]
    #: The GPU dimension, when the session has one.
    gpu: int | None
    prefer_taints: list[tuple[Taint, ...]]
    any_prefer: bool
    #: Raw preferred node-affinity scores per ``task.sig[3]``, untolerated PreferNoSchedule counts
    #: per ``task.sig[2]`` (lazily filled; shared across cached cycles).
    _affinity_cache: dict[tuple[Any, ...], FloatArray]
    _taint_cache: dict[tuple[Any, ...], FloatArray]
    pod_preferences: bool


class NodeOrderPlugin(SharedState, NodeOrder):
    """Kubernetes scores: least/most requested, balanced allocation, preferred node affinity,
    PreferNoSchedule taints, topology spread, preferred inter-pod affinity; each 0-100 score
    times its weight, summed."""

    name = "nodeorder"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "leastrequested.weight": ArgSpec("int", 1),
        "mostrequested.weight": ArgSpec("int", 0),
        "balancedresource.weight": ArgSpec("int", 1),
        "nodeaffinity.weight": ArgSpec("int", 2),
        "tainttoleration.weight": ArgSpec("int", 3),
        "podaffinity.weight": ArgSpec("int", 2, "preferred inter-pod affinity and anti-affinity"),
        "imagelocality.weight": ArgSpec("int", 1, "accepted, no effect (no images)"),
        "podtopologyspread.weight": ArgSpec("int", 2, "ScheduleAnyway topology spread constraints"),
        "selectorspread.weight": ArgSpec("int", 0, "accepted, no effect"),
        "volumebinding.weight": ArgSpec("int", 1, "accepted, no effect"),
    }

    def open(self, session: SessionHandle) -> NodeOrderState:
        """The weights, the nodes' capacities and PreferNoSchedule taints, empty score caches."""
        st = NodeOrderState(session)
        st.w_least = float(self.args["leastrequested.weight"])
        st.w_most = float(self.args["mostrequested.weight"])
        st.w_balanced = float(self.args["balancedresource.weight"])
        st.w_affinity = float(self.args["nodeaffinity.weight"])
        st.w_taint = float(self.args["tainttoleration.weight"])
        st.w_spread = float(self.args["podtopologyspread.weight"])
        table = session.nodes
        st.alloc_cpu = table.alloc[0].astype(np.float64)
        st.alloc_mem = table.alloc[1].astype(np.float64)
        st.safe_cpu = np.where(st.alloc_cpu > 0, st.alloc_cpu, 1.0)
        st.safe_mem = np.where(st.alloc_mem > 0, st.alloc_mem, 1.0)
        st.alloc_cpu_l = st.alloc_cpu.tolist()
        st.alloc_mem_l = st.alloc_mem.tolist()
        st.safe_cpu_l = st.safe_cpu.tolist()
        st.safe_mem_l = st.safe_mem.tolist()
        st.gpu = session.dim_index.get("nvidia.com/gpu")
        st.prefer_taints = [tuple(t for t in n.taints if t.effect == "PreferNoSchedule") for n in table.nodes]
        st.any_prefer = any(st.prefer_taints)
        st._affinity_cache = {}
        st._taint_cache = {}
        self._open_pod_affinity(st)
        return st

    def _open_pod_affinity(self, st: NodeOrderState) -> None:
        """Preferred inter-pod affinity is scored only when some pod of the snapshot has such
        terms (with Volcano's empty InterPodAffinityArgs, required terms of existing pods weigh 0)."""
        st.w_pod = float(self.args["podaffinity.weight"])
        st.pod_preferences = bool(st.w_pod) and any(
            t.preferred_pod_affinity or t.preferred_anti_affinity for t in st.session.snapshot.tasks
        )

    def restore_state(self, session: SessionHandle, saved: NodeOrderState) -> NodeOrderState:
        """Shared from the last cycle (SessionCache); whether pods have preferred pod affinity depends on
        this snapshot's pods, so it is looked up again."""
        st: NodeOrderState = restore_shared(session, saved)
        self._open_pod_affinity(st)
        return st

    def _affinity_raw(self, st: NodeOrderState, task: TaskInfo) -> FloatArray | None:
        terms = task.task.preferred_affinity
        if not terms or not st.w_affinity:
            return None
        key = task.sig[3]
        raw = st._affinity_cache.get(key)
        if raw is None:
            raw = np.array(
                [sum(p.weight for p in terms if p.term.matches(n)) for n in st.session.nodes.nodes], dtype=np.float64
            )
            st._affinity_cache[key] = raw
        return raw

    def _taint_raw(self, st: NodeOrderState, task: TaskInfo) -> FloatArray | None:
        if not st.any_prefer or not st.w_taint:
            return None
        key = task.sig[2]
        raw = st._taint_cache.get(key)
        if raw is None:
            raw = np.array([sum(1 for t in ts if not tolerated(task, t)) for ts in st.prefer_taints], dtype=np.float64)
            st._taint_cache[key] = raw
        return raw

    def node_order(self, st: NodeOrderState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Weighted sum of the enabled Kubernetes scores for each of ``nodes``."""
        total = self.local_scores(st, task, nodes)
        extra = self.set_scores(st, task, nodes)
        if extra is not None:
            total += extra
        return total

    def node_score_key(self, st: NodeOrderState, task: TaskInfo) -> Any:
        """Least/most requested and balanced allocation are per node; they depend on the task's
        non-zero requests (and its GPU request when the session has GPUs)."""
        return (task.nz, task.req[st.gpu] if st.gpu is not None else None)

    def local_scores(self, st: NodeOrderState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Least/most requested and balanced allocation (integer-valued floats)."""
        table = st.session.nodes
        total = np.zeros(len(nodes), dtype=np.float64)
        alloc_cpu = st.alloc_cpu[nodes]
        alloc_mem = st.alloc_mem[nodes]
        safe_cpu = st.safe_cpu[nodes]
        safe_mem = st.safe_mem[nodes]
        req_cpu = table.nz_requested[0, nodes] + task.nz[0]
        req_mem = table.nz_requested[1, nodes] + task.nz[1]
        if st.w_least:
            s = _least_requested(req_cpu, alloc_cpu, safe_cpu) + _least_requested(req_mem, alloc_mem, safe_mem)
            total += np.floor(s / 2.0) * st.w_least
        if st.w_most:
            s = _most_requested(req_cpu, alloc_cpu, safe_cpu) + _most_requested(req_mem, alloc_mem, safe_mem)
            total += np.floor(s / 2.0) * st.w_most
        if st.w_balanced:
            total += self._balanced(st, task, nodes, req_cpu, req_mem, safe_cpu, safe_mem)
        return total

    def local_score_at(self, st: NodeOrderState, task: TaskInfo, node: int) -> float:
        """:meth:`local_scores` of one node with the same IEEE operations in scalar Python."""
        if st.gpu is not None and task.req[st.gpu] and st.w_balanced:
            return super().local_score_at(st, task, node)
        nz = st.session.nodes.nz_requested
        req_cpu = float(int(nz[0, node])) + task.nz[0]
        req_mem = float(int(nz[1, node])) + task.nz[1]
        a_cpu, a_mem = st.alloc_cpu_l[node], st.alloc_mem_l[node]
        s_cpu, s_mem = st.safe_cpu_l[node], st.safe_mem_l[node]
        total = 0.0
        if st.w_least:
            lc = math.floor((a_cpu - req_cpu) * 100.0 / s_cpu) if a_cpu > 0 and req_cpu <= a_cpu else 0
            lm = math.floor((a_mem - req_mem) * 100.0 / s_mem) if a_mem > 0 and req_mem <= a_mem else 0
            total += math.floor((lc + lm) / 2.0) * st.w_least
        if st.w_most:
            mc = math.floor(min(req_cpu, a_cpu) * 100.0 / s_cpu) if a_cpu > 0 else 0
            mm = math.floor(min(req_mem, a_mem) * 100.0 / s_mem) if a_mem > 0 else 0
            total += math.floor((mc + mm) / 2.0) * st.w_most
        if st.w_balanced:
            f_cpu = min(req_cpu / s_cpu, 1.0)
            f_mem = min(req_mem / s_mem, 1.0)
            std = abs(f_cpu - f_mem) / 2.0
            total += math.floor((1.0 - std) * 100.0) * st.w_balanced
        return total

    def set_scores(self, st: NodeOrderState, task: TaskInfo, nodes: IntArray) -> FloatArray | None:
        """Preferred node affinity and PreferNoSchedule taints, normalised over ``nodes``."""
        out: FloatArray | None = None
        raw = self._affinity_raw(st, task)
        if raw is not None:
            sub = raw[nodes]
            top = sub.max() if len(sub) else 0.0
            if top > 0:
                out = np.floor(sub * 100.0 / top) * st.w_affinity
        raw = self._taint_raw(st, task)
        if raw is not None:
            sub = raw[nodes]
            top = sub.max() if len(sub) else 0.0
            score = 100.0 - np.floor(sub * 100.0 / top) if top > 0 else np.full(len(sub), 100.0)
            out = score * st.w_taint if out is None else out + score * st.w_taint
        spread = self._spread_score(st, task, nodes)
        if spread is not None:
            out = spread * st.w_spread if out is None else out + spread * st.w_spread
        pod = self._pod_affinity_score(st, task, nodes)
        if pod is not None:
            out = pod * st.w_pod if out is None else out + pod * st.w_pod
        return out

    def _pod_affinity_score(self, st: NodeOrderState, task: TaskInfo, nodes: IntArray) -> FloatArray | None:
        """Kubernetes' InterPodAffinity score: every placed pod adds, to the domain (topology
        key and value of its node) of each term that matches, +weight for the task's preferred
        affinity terms selecting it, -weight for the task's preferred anti-affinity terms, and
        the same for its own preferred terms selecting the task. A node scores the sum over the
        domains it belongs to, normalised over ``nodes`` to 0..100 (max-min); None when nothing
        matched (all zero)."""
        if not st.pod_preferences or not len(nodes):
            return None
        table_nodes = st.session.nodes.nodes
        domains = _affinity_domains(task, st.session.nodes)
        if not domains:
            return None
        keys = sorted({k for k, _ in domains})
        raw = np.array(
            [
                sum(domains.get((k, table_nodes[i].labels[k]), 0) for k in keys if k in table_nodes[i].labels)
                for i in nodes.tolist()
            ],
            dtype=np.float64,
        )
        low, top = float(raw.min()), float(raw.max())
        if top == low:
            return np.zeros(len(nodes), dtype=np.float64)
        out: FloatArray = np.floor(100.0 * ((raw - low) / (top - low)))
        return out

    def _spread_score(self, st: NodeOrderState, task: TaskInfo, nodes: IntArray) -> FloatArray | None:
        """Kubernetes' PodTopologySpread score for ScheduleAnyway constraints: per node the
        matching pods of its domains, each constraint weighted by log(domains + 2); normalised
        so the emptiest candidate gets 100; a node missing a key scores 0."""
        soft = [c for c in task.task.topology_spread if c.when_unsatisfiable == "ScheduleAnyway"]
        if not soft or not st.w_spread or not len(nodes):
            return None
        table_nodes = st.session.nodes.nodes
        raw = np.zeros(len(nodes), dtype=np.float64)
        valid = np.ones(len(nodes), dtype=np.bool_)
        for c in soft:
            counts = spread_counts(st.session, task, c)
            weight = math.log(len(counts) + 2)
            for j, i in enumerate(nodes.tolist()):
                value = table_nodes[i].labels.get(c.topology_key)
                if value is None:
                    valid[j] = False
                else:
                    raw[j] += counts.get(value, 0) * weight
        raw = np.round(raw)
        if not valid.any():
            return np.zeros(len(nodes), dtype=np.float64)
        top, low = float(raw[valid].max()), float(raw[valid].min())
        score = np.full(len(nodes), 100.0) if top == 0 else np.floor(100.0 * (top + low - raw) / top)
        out: FloatArray = np.where(valid, score, 0.0)
        return out

    def _balanced(
        self,
        st: NodeOrderState,
        task: TaskInfo,
        nodes: IntArray,
        req_cpu: FloatArray,
        req_mem: FloatArray,
        alloc_cpu: FloatArray,
        alloc_mem: FloatArray,
    ) -> FloatArray:
        # Nodes without cpu/memory have safe denominators of 1 and requests > 0: capped at 1.
        f_cpu = np.minimum(req_cpu / alloc_cpu, 1.0)
        f_mem = np.minimum(req_mem / alloc_mem, 1.0)
        if st.gpu is None or not task.req[st.gpu]:
            std = np.abs(f_cpu - f_mem) / 2.0
        else:
            table = st.session.nodes
            g_alloc = table.alloc[st.gpu, nodes].astype(np.float64)
            g_req = table.used[st.gpu, nodes] + table.pipelined[st.gpu, nodes] + task.req[st.gpu]
            with np.errstate(divide="ignore", invalid="ignore"):
                f_gpu = np.where(g_alloc > 0, np.minimum(g_req / g_alloc, 1.0), 0.0)
            has = g_alloc > 0
            n = np.where(has, 3.0, 2.0)
            mean = (f_cpu + f_mem + np.where(has, f_gpu, 0.0)) / n
            var = ((f_cpu - mean) ** 2 + (f_mem - mean) ** 2 + np.where(has, (f_gpu - mean) ** 2, 0.0)) / n
            std = np.sqrt(var)
        out: FloatArray = np.floor((1.0 - std) * 100.0) * st.w_balanced
        return out
