"""The predicates, nodeorder and binpack plugins (vectorised over the session's node table)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.framework import (
    AllocateHandler,
    ArgSpec,
    NodeOrder,
    Plugin,
    Predicate,
    SharedOpenState,
    restore_shared_state,
    save_shared_state,
)
from scheduler.model import Taint, TaskStatus, TopologySpreadConstraint
from scheduler.points import BoolArray, ExtensionPoint, Filter, FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, TaskInfo

__all__ = ["BinpackPlugin", "NodeOrderPlugin", "PredicatesPlugin"]

_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_HARD_EFFECTS = ("NoSchedule", "NoExecute")


def _tolerated(task: TaskInfo, taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in task.task.tolerations)


def spread_counts(session: SessionHandle, task: TaskInfo, c: TopologySpreadConstraint) -> dict[str, int]:
    """Pods the constraint selects per domain (value of its key), over the nodes the task's
    node selector and required node affinity allow (Kubernetes' PodTopologySpread); releasing
    pods do not count."""
    table = session.nodes
    me = task.task
    sel = me.node_selector.items()
    terms = me.required_affinity
    counts: dict[str, int] = {}
    for i, n in enumerate(table.nodes):
        value = n.labels.get(c.topology_key)
        if value is None:
            continue
        if not (all(n.labels.get(k) == v for k, v in sel) and (not terms or any(t.matches(n) for t in terms))):
            continue
        found = counts.setdefault(value, 0)
        for other in table.tasks[i].values():
            if other is not task and other.status != TaskStatus.RELEASING and c.selects(other.task, me.namespace):
                found += 1
        counts[value] = found
    return counts


class PredicatesPlugin(Plugin, Predicate, AllocateHandler):
    """Kubernetes filters: pod count, unschedulable nodes, node selector and required node
    affinity, taints and tolerations. Static filters are cached per pod signature."""

    name = "predicates"
    node_local_filters = True
    failures_repeatable = True
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "predicate.NodeAffinityEnable": ArgSpec("bool", True),
        "predicate.NodePortsEnable": ArgSpec("bool", True, "accepted, no effect (no ports)"),
        "predicate.TaintTolerationEnable": ArgSpec("bool", True),
        "predicate.PodAffinityEnable": ArgSpec("bool", True, "accepted, no effect"),
        "predicate.NodeVolumeLimitsEnable": ArgSpec("bool", True, "accepted, no effect"),
        "predicate.VolumeZoneEnable": ArgSpec("bool", True, "accepted, no effect"),
        "predicate.PodTopologySpreadEnable": ArgSpec("bool", True, "accepted, no effect"),
        "predicate.VolumeBindingEnable": ArgSpec("bool", True, "accepted, no effect"),
        "predicate.DynamicResourceAllocationEnable": ArgSpec("bool", False, "accepted, no effect"),
        "predicate.CacheEnable": ArgSpec("bool", False, "accepted; caching is always on"),
        "predicate.ProportionalEnable": ArgSpec("bool", False, "accepted, no effect"),
        "predicate.GPUSharingEnable": ArgSpec("bool", False, "accepted, no effect"),
        "predicate.GPUNumberEnable": ArgSpec("bool", False, "accepted, no effect"),
    }
    argument_prefixes: ClassVar[Mapping[str, ArgSpec]] = {
        "predicate.resources": ArgSpec("str", "", "accepted, no effect")
    }

    def on_session_open(self, session: SessionHandle) -> None:
        self.session = session
        table = session.nodes
        nodes = table.nodes
        self.affinity = bool(self.args["predicate.NodeAffinityEnable"])
        self.taints = bool(self.args["predicate.TaintTolerationEnable"])
        self.unschedulable = np.array([n.unschedulable for n in nodes], dtype=np.bool_)
        self.hard_taints = [tuple(t for t in n.taints if t.effect in _HARD_EFFECTS) for n in nodes]
        self.tainted = np.array([bool(t) for t in self.hard_taints], dtype=np.bool_)
        self.max_pods = table.alloc[2]
        self._cache: dict[tuple[Any, ...], list[Filter]] = {}
        self._pods_passed: BoolArray = table.pod_count < self.max_pods
        self._seen = len(table.changes)
        self._pods_filter = Filter(self.name, self._pods_passed, "node(s) pod number exceeded", unresolvable=False)
        self._open_anti(session)

    def _open_anti(self, session: SessionHandle) -> None:
        """Inter-pod affinity and anti-affinity: on when some pod of the snapshot has required
        terms. Their filter depends on pods in the whole topology domain, so node-local caching
        is off then, and so is allocate's skipping of a job that looks like one that failed
        (pods of one shape may differ in labels and terms)."""
        self.pod_affinity = bool(self.args["predicate.PodAffinityEnable"])
        # One pass over the pods; only sessions that have such pods look closer.
        placed = [t for t in session.snapshot.tasks if t.anti_affinity or t.pod_affinity or t.topology_spread]
        self.anti = self.pod_affinity and any(t.anti_affinity or t.pod_affinity for t in placed)
        self.spread = bool(self.args["predicate.PodTopologySpreadEnable"]) and any(
            c.when_unsatisfiable == "DoNotSchedule" for t in placed for c in t.topology_spread
        )
        self.node_local_filters = not (self.anti or self.spread)
        self.failures_repeatable = self.node_local_filters

    def save_open_state(self) -> Any:
        """Static filters are shared (they depend only on nodes and pod signatures); the pod-count
        filter is copied (SessionCache)."""
        state = save_shared_state(self)
        state["_pods_passed"] = self._pods_passed.copy()
        return state

    def refresh_open_state(
        self, session: SessionHandle, state: Any, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> Any:
        """Static filters depend only on the nodes; the pod-count filter is computed again."""
        out = dict(state)
        out["_pods_passed"] = session.nodes.pod_count < state["max_pods"]
        return out

    def restore_open_state(self, session: SessionHandle, state: Any) -> None:
        """See :meth:`save_open_state`."""
        restore_shared_state(self, session, state)
        self._pods_passed = state["_pods_passed"].copy()
        self._pods_filter = Filter(self.name, self._pods_passed, "node(s) pod number exceeded", unresolvable=False)
        self._seen = len(session.nodes.changes)
        self._open_anti(session)

    def _static(self, task: TaskInfo) -> list[Filter]:
        key = task.sig[:3]
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        nodes = self.session.nodes.nodes
        filters: list[Filter] = []
        if self.unschedulable.any() and not _tolerated(task, _UNSCHEDULABLE_TAINT):
            filters.append(Filter(self.name, ~self.unschedulable, "node(s) were unschedulable"))
        t = task.task
        if self.affinity and (t.node_selector or t.required_affinity):
            sel = t.node_selector.items()
            terms = t.required_affinity
            passed = np.fromiter(
                (
                    all(n.labels.get(k) == v for k, v in sel) and (not terms or any(term.matches(n) for term in terms))
                    for n in nodes
                ),
                dtype=np.bool_,
                count=len(nodes),
            )
            filters.append(Filter(self.name, passed, "node(s) didn't match Pod's node affinity/selector"))
        if self.taints and self.tainted.any():
            passed = ~self.tainted
            reasons: list[str] = [""] * len(nodes)
            for i in np.flatnonzero(self.tainted):
                bad = next((tt for tt in self.hard_taints[i] if not _tolerated(task, tt)), None)
                if bad is None:
                    passed[i] = True
                else:
                    reasons[i] = f"node(s) had untolerated taint {{{bad.key}: {bad.value}}}"
            if not passed.all():
                filters.append(Filter(self.name, passed, "node(s) had untolerated taint", reasons=reasons))
        self._cache[key] = filters
        return filters

    def predicate(self, task: TaskInfo) -> Sequence[Filter]:
        """Pod count first (resolvable), then the cached static filters (unresolvable), then
        required inter-pod affinity (unresolvable) and anti-affinity (resolvable) when the
        session has such terms."""
        static = self._static(task)
        extra: list[Filter] = []
        if self.anti:
            affinity = self._affinity_filter(task)
            if affinity is not None:
                extra.append(affinity)
            anti = self._anti_filter(task)
            if anti is not None:
                extra.append(anti)
        if self.spread:
            spread = self._spread_filter(task)
            if spread is not None:
                extra.append(spread)
        return [self._pods_filter, *static, *extra]

    def _spread_filter(self, task: TaskInfo) -> Filter | None:
        """PodTopologySpread, DoNotSchedule constraints: a node passes when it has the key and
        placing the pod there keeps its domain within ``max_skew`` of the least-loaded domain."""
        hard = [c for c in task.task.topology_spread if c.when_unsatisfiable == "DoNotSchedule"]
        if not hard:
            return None
        nodes = self.session.nodes.nodes
        passed = np.ones(len(nodes), dtype=np.bool_)
        for c in hard:
            counts = spread_counts(self.session, task, c)
            low = min(counts.values(), default=0)
            own = 1 if c.selects(task.task, task.task.namespace) else 0
            for i, n in enumerate(nodes):
                value = n.labels.get(c.topology_key)
                if value is None or counts.get(value, 0) + own - low > c.max_skew:
                    passed[i] = False
        return Filter(self.name, passed, "node(s) didn't match pod topology spread constraints", unresolvable=False)

    def passes_without(self, task: TaskInfo, node: int, removed: frozenset[str]) -> bool:
        """Whether ``task`` passes every filter at ``node`` if the pods ``removed`` (uids) were
        gone from the cluster (topology-aware preemption's dry run)."""
        table = self.session.nodes
        gone = sum(1 for uid in removed if uid in table.tasks[node])
        if table.pod_count[node] - gone >= self.max_pods[node]:
            return False
        if not all(bool(f.passed[node]) for f in self._static(task)):
            return False
        if self.anti:
            seen = removed if self._simulates_removal() else frozenset()
            for f in (self._affinity_filter(task, seen), self._anti_filter(task, seen)):
                if f is not None and not f.passed[node]:
                    return False
        return True

    def _simulates_removal(self) -> bool:
        """Whether the dry run's removed pods reach the anti-affinity filter: Volcano hands them
        to a plugin's SimulateRemoveTask / SimulateAddTask only when the plugin's
        ``enablePreemptable`` or ``enableAllocatable`` is on (both are on unless configured
        false); otherwise the filter keeps counting them, as its PreFilter state saw them."""
        for tier in self.session.config.tiers:
            for opt in tier.plugins:
                if opt.name == self.name:
                    return opt.enabled(ExtensionPoint.PREEMPTABLE) or opt.enabled(ExtensionPoint.ALLOCATABLE)
        return True

    def _affinity_filter(self, task: TaskInfo, removed: frozenset[str] = frozenset()) -> Filter | None:
        """Kubernetes' InterPodAffinity filter, affinity half: a node passes when it has every
        term's topology key and, for each term, its domain holds a pod that matches all of the
        task's terms. When no pod anywhere matches them all and the task matches its own terms,
        it may start its group: every node with all the keys passes."""
        me = task.task
        terms = me.pod_affinity
        if not terms:
            return None
        table = self.session.nodes
        nodes = table.nodes
        found: set[tuple[str, str]] = set()
        for i, placed in enumerate(table.tasks):
            if not placed:
                continue
            labels = nodes[i].labels
            for other in placed.values():
                if other is task or other.uid in removed:
                    continue
                if all(term.selects(other.task, me.namespace) for term in terms):
                    for term in terms:
                        value = labels.get(term.topology_key)
                        if value is not None:
                            found.add((term.topology_key, value))
        first = not found and all(term.selects(me, me.namespace) for term in terms)
        keys = [term.topology_key for term in terms]
        passed = np.fromiter(
            (
                all(k in n.labels for k in keys) and (first or all((k, n.labels[k]) in found for k in keys))
                for n in nodes
            ),
            dtype=np.bool_,
            count=len(nodes),
        )
        if passed.all():
            return None
        return Filter(self.name, passed, "node(s) didn't match pod affinity rules")

    def _anti_filter(self, task: TaskInfo, removed: frozenset[str] = frozenset()) -> Filter | None:
        """Kubernetes' InterPodAffinity filter, anti-affinity half: a node fails when its
        topology domain (the node's value of the term's key) holds a pod the task's term selects,
        or a pod whose own term selects the task (symmetry). Nodes without the key pass."""
        table = self.session.nodes
        nodes = table.nodes
        me = task.task
        blocked: dict[str, set[str]] = {}
        for i, placed in enumerate(table.tasks):
            if not placed:
                continue
            labels = nodes[i].labels
            for other in placed.values():
                if other is task or other.uid in removed:
                    continue
                o = other.task
                for term in me.anti_affinity:
                    value = labels.get(term.topology_key)
                    if value is not None and term.selects(o, me.namespace):
                        blocked.setdefault(term.topology_key, set()).add(value)
                for term in o.anti_affinity:
                    value = labels.get(term.topology_key)
                    if value is not None and term.selects(me, o.namespace):
                        blocked.setdefault(term.topology_key, set()).add(value)
        if not blocked:
            return None
        passed = np.fromiter(
            (all(n.labels.get(k) not in vals for k, vals in blocked.items()) for n in nodes),
            dtype=np.bool_,
            count=len(nodes),
        )
        return Filter(self.name, passed, "node(s) didn't match pod anti-affinity rules", unresolvable=False)

    def _refresh(self) -> None:
        # Pod counts change only through the node table, which logs every changed node.
        table = self.session.nodes
        changes = table.changes
        end = len(changes)
        if self._seen != end:
            passed, count, limit = self._pods_passed, table.pod_count, self.max_pods
            for i in set(changes[self._seen : end]):
                passed[i] = count[i] < limit[i]
            self._seen = end

    def on_allocate(self, task: TaskInfo) -> None:
        """Keep the pod-count filter current."""
        self._refresh()

    def on_deallocate(self, task: TaskInfo) -> None:
        """Keep the pod-count filter current (only changed nodes are refreshed)."""
        self._refresh()


def _least_requested(requested: FloatArray, alloc: FloatArray, safe: FloatArray) -> FloatArray:
    """Kubernetes LeastAllocated per resource; ``safe`` is alloc with zeros replaced by 1."""
    score = np.floor((alloc - requested) * 100.0 / safe)
    return np.where((alloc > 0) & (requested <= alloc), score, 0.0)


def _most_requested(requested: FloatArray, alloc: FloatArray, safe: FloatArray) -> FloatArray:
    """Kubernetes MostAllocated per resource."""
    score = np.floor(np.minimum(requested, alloc) * 100.0 / safe)
    return np.where(alloc > 0, score, 0.0)


class NodeOrderPlugin(SharedOpenState, NodeOrder):
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

    def on_session_open(self, session: SessionHandle) -> None:
        self.session = session
        self.w_least = float(self.args["leastrequested.weight"])
        self.w_most = float(self.args["mostrequested.weight"])
        self.w_balanced = float(self.args["balancedresource.weight"])
        self.w_affinity = float(self.args["nodeaffinity.weight"])
        self.w_taint = float(self.args["tainttoleration.weight"])
        self.w_spread = float(self.args["podtopologyspread.weight"])
        table = session.nodes
        self.alloc_cpu = table.alloc[0].astype(np.float64)
        self.alloc_mem = table.alloc[1].astype(np.float64)
        self.safe_cpu = np.where(self.alloc_cpu > 0, self.alloc_cpu, 1.0)
        self.safe_mem = np.where(self.alloc_mem > 0, self.alloc_mem, 1.0)
        self.alloc_cpu_l: list[float] = self.alloc_cpu.tolist()
        self.alloc_mem_l: list[float] = self.alloc_mem.tolist()
        self.safe_cpu_l: list[float] = self.safe_cpu.tolist()
        self.safe_mem_l: list[float] = self.safe_mem.tolist()
        gpu = session.dim_index.get("nvidia.com/gpu")
        self.gpu = gpu
        self.prefer_taints = [tuple(t for t in n.taints if t.effect == "PreferNoSchedule") for n in table.nodes]
        self.any_prefer = any(self.prefer_taints)
        self._affinity_cache: dict[tuple[Any, ...], FloatArray] = {}
        self._taint_cache: dict[tuple[Any, ...], FloatArray] = {}
        self._open_pod_affinity(session)

    def _open_pod_affinity(self, session: SessionHandle) -> None:
        """Preferred inter-pod affinity is scored only when some pod of the snapshot has such
        terms (with Volcano's empty InterPodAffinityArgs, required terms of existing pods weigh 0)."""
        self.w_pod = float(self.args["podaffinity.weight"])
        self.pod_preferences = bool(self.w_pod) and any(
            t.preferred_pod_affinity or t.preferred_anti_affinity for t in session.snapshot.tasks
        )

    def restore_open_state(self, session: SessionHandle, state: Any) -> None:
        """Shared from the last cycle (SessionCache); whether pods have preferred pod affinity depends on
        this snapshot's pods, so it is looked up again."""
        super().restore_open_state(session, state)
        self._open_pod_affinity(session)

    def _affinity_raw(self, task: TaskInfo) -> FloatArray | None:
        terms = task.task.preferred_affinity
        if not terms or not self.w_affinity:
            return None
        key = task.sig[3]
        raw = self._affinity_cache.get(key)
        if raw is None:
            raw = np.array(
                [sum(p.weight for p in terms if p.term.matches(n)) for n in self.session.nodes.nodes], dtype=np.float64
            )
            self._affinity_cache[key] = raw
        return raw

    def _taint_raw(self, task: TaskInfo) -> FloatArray | None:
        if not self.any_prefer or not self.w_taint:
            return None
        key = task.sig[2]
        raw = self._taint_cache.get(key)
        if raw is None:
            raw = np.array(
                [sum(1 for t in ts if not _tolerated(task, t)) for ts in self.prefer_taints], dtype=np.float64
            )
            self._taint_cache[key] = raw
        return raw

    def node_order(self, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Weighted sum of the enabled Kubernetes scores for each of ``nodes``."""
        total = self.local_scores(task, nodes)
        extra = self.set_scores(task, nodes)
        if extra is not None:
            total += extra
        return total

    def node_score_key(self, task: TaskInfo) -> Any:
        """Least/most requested and balanced allocation are per node; they depend on the task's
        non-zero requests (and its GPU request when the session has GPUs)."""
        return (task.nz, task.req[self.gpu] if self.gpu is not None else None)

    def local_scores(self, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Least/most requested and balanced allocation (integer-valued floats)."""
        table = self.session.nodes
        total = np.zeros(len(nodes), dtype=np.float64)
        alloc_cpu = self.alloc_cpu[nodes]
        alloc_mem = self.alloc_mem[nodes]
        safe_cpu = self.safe_cpu[nodes]
        safe_mem = self.safe_mem[nodes]
        req_cpu = table.nz_requested[0, nodes] + task.nz[0]
        req_mem = table.nz_requested[1, nodes] + task.nz[1]
        if self.w_least:
            s = _least_requested(req_cpu, alloc_cpu, safe_cpu) + _least_requested(req_mem, alloc_mem, safe_mem)
            total += np.floor(s / 2.0) * self.w_least
        if self.w_most:
            s = _most_requested(req_cpu, alloc_cpu, safe_cpu) + _most_requested(req_mem, alloc_mem, safe_mem)
            total += np.floor(s / 2.0) * self.w_most
        if self.w_balanced:
            total += self._balanced(task, nodes, req_cpu, req_mem, safe_cpu, safe_mem)
        return total

    def local_score_at(self, task: TaskInfo, node: int) -> float:
        """:meth:`local_scores` of one node with the same IEEE operations in scalar Python."""
        if self.gpu is not None and task.req[self.gpu] and self.w_balanced:
            return super().local_score_at(task, node)
        nz = self.session.nodes.nz_requested
        req_cpu = float(int(nz[0, node])) + task.nz[0]
        req_mem = float(int(nz[1, node])) + task.nz[1]
        a_cpu, a_mem = self.alloc_cpu_l[node], self.alloc_mem_l[node]
        s_cpu, s_mem = self.safe_cpu_l[node], self.safe_mem_l[node]
        total = 0.0
        if self.w_least:
            lc = math.floor((a_cpu - req_cpu) * 100.0 / s_cpu) if a_cpu > 0 and req_cpu <= a_cpu else 0
            lm = math.floor((a_mem - req_mem) * 100.0 / s_mem) if a_mem > 0 and req_mem <= a_mem else 0
            total += math.floor((lc + lm) / 2.0) * self.w_least
        if self.w_most:
            mc = math.floor(min(req_cpu, a_cpu) * 100.0 / s_cpu) if a_cpu > 0 else 0
            mm = math.floor(min(req_mem, a_mem) * 100.0 / s_mem) if a_mem > 0 else 0
            total += math.floor((mc + mm) / 2.0) * self.w_most
        if self.w_balanced:
            f_cpu = min(req_cpu / s_cpu, 1.0)
            f_mem = min(req_mem / s_mem, 1.0)
            std = abs(f_cpu - f_mem) / 2.0
            total += math.floor((1.0 - std) * 100.0) * self.w_balanced
        return total

    def set_scores(self, task: TaskInfo, nodes: IntArray) -> FloatArray | None:
        """Preferred node affinity and PreferNoSchedule taints, normalised over ``nodes``."""
        out: FloatArray | None = None
        raw = self._affinity_raw(task)
        if raw is not None:
            sub = raw[nodes]
            top = sub.max() if len(sub) else 0.0
            if top > 0:
                out = np.floor(sub * 100.0 / top) * self.w_affinity
        raw = self._taint_raw(task)
        if raw is not None:
            sub = raw[nodes]
            top = sub.max() if len(sub) else 0.0
            score = 100.0 - np.floor(sub * 100.0 / top) if top > 0 else np.full(len(sub), 100.0)
            out = score * self.w_taint if out is None else out + score * self.w_taint
        spread = self._spread_score(task, nodes)
        if spread is not None:
            out = spread * self.w_spread if out is None else out + spread * self.w_spread
        pod = self._pod_affinity_score(task, nodes)
        if pod is not None:
            out = pod * self.w_pod if out is None else out + pod * self.w_pod
        return out

    def _pod_affinity_score(self, task: TaskInfo, nodes: IntArray) -> FloatArray | None:
        """Kubernetes' InterPodAffinity score: every placed pod adds, to the domain (topology
        key and value of its node) of each term that matches, +weight for the task's preferred
        affinity terms selecting it, -weight for the task's preferred anti-affinity terms, and
        the same for its own preferred terms selecting the task. A node scores the sum over the
        domains it belongs to, normalised over ``nodes`` to 0..100 (max-min); None when nothing
        matched (all zero)."""
        if not self.pod_preferences or not len(nodes):
            return None
        me = task.task
        mine = [(w.term, w.weight) for w in me.preferred_pod_affinity]
        mine += [(w.term, -w.weight) for w in me.preferred_anti_affinity]
        table = self.session.nodes
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

    def _spread_score(self, task: TaskInfo, nodes: IntArray) -> FloatArray | None:
        """Kubernetes' PodTopologySpread score for ScheduleAnyway constraints: per node the
        matching pods of its domains, each constraint weighted by log(domains + 2); normalised
        so the emptiest candidate gets 100; a node missing a key scores 0."""
        soft = [c for c in task.task.topology_spread if c.when_unsatisfiable == "ScheduleAnyway"]
        if not soft or not self.w_spread or not len(nodes):
            return None
        table_nodes = self.session.nodes.nodes
        raw = np.zeros(len(nodes), dtype=np.float64)
        valid = np.ones(len(nodes), dtype=np.bool_)
        for c in soft:
            counts = spread_counts(self.session, task, c)
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
        if self.gpu is None or not task.req[self.gpu]:
            std = np.abs(f_cpu - f_mem) / 2.0
        else:
            table = self.session.nodes
            g_alloc = table.alloc[self.gpu, nodes].astype(np.float64)
            g_req = table.used[self.gpu, nodes] + table.pipelined[self.gpu, nodes] + task.req[self.gpu]
            with np.errstate(divide="ignore", invalid="ignore"):
                f_gpu = np.where(g_alloc > 0, np.minimum(g_req / g_alloc, 1.0), 0.0)
            has = g_alloc > 0
            n = np.where(has, 3.0, 2.0)
            mean = (f_cpu + f_mem + np.where(has, f_gpu, 0.0)) / n
            var = ((f_cpu - mean) ** 2 + (f_mem - mean) ** 2 + np.where(has, (f_gpu - mean) ** 2, 0.0)) / n
            std = np.sqrt(var)
        out: FloatArray = np.floor((1.0 - std) * 100.0) * self.w_balanced
        return out


def _nonneg(weight: Any) -> float:
    """Binpack resets negative weights to 1."""
    return float(weight) if weight >= 0 else 1.0


class BinpackPlugin(SharedOpenState, NodeOrder):
    """Prefers fuller nodes: Σ weight x (used + request) / allocatable over requested
    resources, normalised to 0-100 and times ``binpack.weight``."""

    name = "binpack"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "binpack.weight": ArgSpec("int", 1),
        "binpack.cpu": ArgSpec("int", 1),
        "binpack.memory": ArgSpec("int", 1),
        "binpack.resources": ArgSpec("str", ""),
    }
    argument_prefixes: ClassVar[Mapping[str, ArgSpec]] = {"binpack.resources.": ArgSpec("int", 1)}

    def on_session_open(self, session: SessionHandle) -> None:
        self.session = session
        self.weight = float(self.args["binpack.weight"])
        weights: dict[int, float] = {
            0: _nonneg(self.args["binpack.cpu"]),
            1: _nonneg(self.args["binpack.memory"]),
        }
        names = [n.strip() for n in str(self.args["binpack.resources"]).split(",") if n.strip()]
        for name in names:
            w = self.args.get(f"binpack.resources.{name}", 1)
            d = session.dim_index.get(name)
            if d is not None:
                weights[d] = _nonneg(w)
        self.weights = weights

    def node_score_key(self, task: TaskInfo) -> Any:
        """The score of a node depends only on the task's requests and the node's column."""
        return task.req

    def local_scores(self, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """All of binpack's score is per node."""
        return self.node_order(task, nodes)

    def local_score_at(self, task: TaskInfo, node: int) -> float:
        """:meth:`node_order` of one node with the same IEEE operations in scalar Python."""
        if not self.weight:
            return 0.0
        table = self.session.nodes
        score = 0.0
        overflow = False
        weight_sum = 0.0
        for d, request in enumerate(task.req):
            if request <= 0 or d not in self.weights:
                continue
            w = self.weights[d]
            alloc = float(int(table.alloc[d, node]))
            used = float(int(table.used[d, node])) + request
            if w:
                rs = used * w / alloc if alloc > 0 else 0.0
                overflow = overflow or (alloc > 0 and used > alloc)
                score += rs
            weight_sum += w
        if weight_sum > 0:
            score /= weight_sum
        if overflow:
            score = 0.0
        return score * 100.0 * self.weight

    def node_order(self, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Binpack score of each of ``nodes`` (0 where the task would not fit)."""
        if not self.weight:
            return np.zeros(len(nodes), dtype=np.float64)
        table = self.session.nodes
        score = np.zeros(len(nodes), dtype=np.float64)
        overflow = np.zeros(len(nodes), dtype=np.bool_)
        weight_sum = 0.0
        for d, request in enumerate(task.req):
            if request <= 0 or d not in self.weights:
                continue
            w = self.weights[d]
            alloc = table.alloc[d, nodes].astype(np.float64)
            used = table.used[d, nodes] + request
            if w:
                with np.errstate(divide="ignore", invalid="ignore"):
                    rs = np.where(alloc > 0, used * w / alloc, 0.0)
                overflow |= (alloc > 0) & (used > alloc)
                score += rs
            weight_sum += w
        if weight_sum > 0:
            score /= weight_sum
        score = np.where(overflow, 0.0, score)
        return score * 100.0 * self.weight
