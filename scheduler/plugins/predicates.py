"""The predicates plugin: Kubernetes' filters (node selector and affinity, taints, unschedulable
nodes, pod count, topology spread, inter-pod affinity and anti-affinity), vectorised over the
session's node table. The domain counts of a topology spread constraint (``spread_counts``) and the
toleration check serve nodeorder's scores too."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import AllocateHandler, ArgSpec, Plugin, Predicate, restore_shared
from scheduler.model import Taint, TaskStatus, TopologySpreadConstraint
from scheduler.points import BoolArray, ExtensionPoint, Filter, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, TaskInfo

__all__ = ["PredicatesPlugin", "PredicatesState", "spread_counts", "tolerated"]

_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_HARD_EFFECTS = ("NoSchedule", "NoExecute")


def tolerated(task: TaskInfo, taint: Taint) -> bool:
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


class PredicatesState(PluginState):
    """Predicates' cycle: the node-derived arrays of the static filters and their cache per pod
    signature, the pod-count filter kept current, and whether this session's pods have inter-pod
    terms or spread constraints (which turn off node-local caching and repeatable failures)."""

    affinity: bool
    taints: bool
    pod_affinity: bool
    #: Per node: cordoned; its NoSchedule/NoExecute taints; whether it has any; its pod limit.
    unschedulable: BoolArray
    hard_taints: list[tuple[Taint, ...]]
    tainted: BoolArray
    max_pods: IntArray
    #: The static filters per pod signature (``task.sig[:3]``); shared across cached cycles.
    _cache: dict[tuple[Any, ...], list[Filter]]
    #: The pod-count filter's mask, refreshed at the nodes the node table logs as changed.
    _pods_passed: BoolArray
    _seen: int
    _pods_filter: Filter
    anti: bool
    spread: bool
    node_local_filters: bool
    failures_repeatable: bool


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

    def open(self, session: SessionHandle) -> PredicatesState:
        """The node-derived arrays, an empty static-filter cache, the pod-count filter and the
        inter-pod flags of this session."""
        st = PredicatesState(session)
        table = session.nodes
        nodes = table.nodes
        st.affinity = bool(self.args["predicate.NodeAffinityEnable"])
        st.taints = bool(self.args["predicate.TaintTolerationEnable"])
        st.unschedulable = np.array([n.unschedulable for n in nodes], dtype=np.bool_)
        st.hard_taints = [tuple(t for t in n.taints if t.effect in _HARD_EFFECTS) for n in nodes]
        st.tainted = np.array([bool(t) for t in st.hard_taints], dtype=np.bool_)
        st.max_pods = table.alloc[2]
        st._cache = {}
        st._pods_passed = table.pod_count < st.max_pods
        st._seen = len(table.changes)
        st._pods_filter = Filter(self.name, st._pods_passed, "node(s) pod number exceeded", unresolvable=False)
        self._open_anti(st)
        return st

    def _open_anti(self, st: PredicatesState) -> None:
        """Inter-pod affinity and anti-affinity: on when some pod of the snapshot has required
        terms. Their filter depends on pods in the whole topology domain, so node-local caching
        is off then, and so is allocate's skipping of a job that looks like one that failed
        (pods of one shape may differ in labels and terms)."""
        st.pod_affinity = bool(self.args["predicate.PodAffinityEnable"])
        # One pass over the pods; only sessions that have such pods look closer.
        placed = [t for t in st.session.snapshot.tasks if t.anti_affinity or t.pod_affinity or t.topology_spread]
        st.anti = st.pod_affinity and any(t.anti_affinity or t.pod_affinity for t in placed)
        st.spread = bool(self.args["predicate.PodTopologySpreadEnable"]) and any(
            c.when_unsatisfiable == "DoNotSchedule" for t in placed for c in t.topology_spread
        )
        st.node_local_filters = not (st.anti or st.spread)
        st.failures_repeatable = st.node_local_filters

    def save_state(self, st: PredicatesState) -> PredicatesState:
        """Static filters are shared (they depend only on nodes and pod signatures); the pod-count
        filter is copied (SessionCache)."""
        saved = copy.copy(st)
        saved._pods_passed = st._pods_passed.copy()
        return saved

    def refresh_state(
        self, session: SessionHandle, saved: PredicatesState, removed: Sequence[JobInfo], added: Sequence[JobInfo]
    ) -> PredicatesState:
        """Static filters depend only on the nodes; the pod-count filter is computed again."""
        out = copy.copy(saved)
        out._pods_passed = session.nodes.pod_count < saved.max_pods
        return out

    def restore_state(self, session: SessionHandle, saved: PredicatesState) -> PredicatesState:
        """See :meth:`save_state`."""
        st: PredicatesState = restore_shared(session, saved)
        st._pods_passed = saved._pods_passed.copy()
        st._pods_filter = Filter(self.name, st._pods_passed, "node(s) pod number exceeded", unresolvable=False)
        st._seen = len(session.nodes.changes)
        self._open_anti(st)
        return st

    def _static(self, st: PredicatesState, task: TaskInfo) -> list[Filter]:
        key = task.sig[:3]
        cached = st._cache.get(key)
        if cached is not None:
            return cached
        nodes = st.session.nodes.nodes
        filters: list[Filter] = []
        if st.unschedulable.any() and not tolerated(task, _UNSCHEDULABLE_TAINT):
            filters.append(Filter(self.name, ~st.unschedulable, "node(s) were unschedulable"))
        t = task.task
        if st.affinity and (t.node_selector or t.required_affinity):
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
        if st.taints and st.tainted.any():
            passed = ~st.tainted
            reasons: list[str] = [""] * len(nodes)
            for i in np.flatnonzero(st.tainted):
                bad = next((tt for tt in st.hard_taints[i] if not tolerated(task, tt)), None)
                if bad is None:
                    passed[i] = True
                else:
                    reasons[i] = f"node(s) had untolerated taint {{{bad.key}: {bad.value}}}"
            if not passed.all():
                filters.append(Filter(self.name, passed, "node(s) had untolerated taint", reasons=reasons))
        st._cache[key] = filters
        return filters

    def predicate(self, st: PredicatesState, task: TaskInfo) -> Sequence[Filter]:
        """Pod count first (resolvable), then the cached static filters (unresolvable), then
        required inter-pod affinity (unresolvable) and anti-affinity (resolvable) when the
        session has such terms."""
        static = self._static(st, task)
        extra: list[Filter] = []
        if st.anti:
            affinity = self._affinity_filter(st, task)
            if affinity is not None:
                extra.append(affinity)
            anti = self._anti_filter(st, task)
            if anti is not None:
                extra.append(anti)
        if st.spread:
            spread = self._spread_filter(st, task)
            if spread is not None:
                extra.append(spread)
        return [st._pods_filter, *static, *extra]

    def _spread_filter(self, st: PredicatesState, task: TaskInfo) -> Filter | None:
        """PodTopologySpread, DoNotSchedule constraints: a node passes when it has the key and
        placing the pod there keeps its domain within ``max_skew`` of the least-loaded domain."""
        hard = [c for c in task.task.topology_spread if c.when_unsatisfiable == "DoNotSchedule"]
        if not hard:
            return None
        nodes = st.session.nodes.nodes
        passed = np.ones(len(nodes), dtype=np.bool_)
        for c in hard:
            counts = spread_counts(st.session, task, c)
            low = min(counts.values(), default=0)
            own = 1 if c.selects(task.task, task.task.namespace) else 0
            for i, n in enumerate(nodes):
                value = n.labels.get(c.topology_key)
                if value is None or counts.get(value, 0) + own - low > c.max_skew:
                    passed[i] = False
        return Filter(self.name, passed, "node(s) didn't match pod topology spread constraints", unresolvable=False)

    def passes_without(self, st: PredicatesState, task: TaskInfo, node: int, removed: frozenset[str]) -> bool:
        """Whether ``task`` passes every filter at ``node`` if the pods ``removed`` (uids) were
        gone from the cluster (topology-aware preemption's dry run)."""
        table = st.session.nodes
        gone = sum(1 for uid in removed if uid in table.tasks[node])
        if table.pod_count[node] - gone >= st.max_pods[node]:
            return False
        if not all(bool(f.passed[node]) for f in self._static(st, task)):
            return False
        if st.anti:
            seen = removed if self._simulates_removal(st) else frozenset()
            for f in (self._affinity_filter(st, task, seen), self._anti_filter(st, task, seen)):
                if f is not None and not f.passed[node]:
                    return False
        return True

    def _simulates_removal(self, st: PredicatesState) -> bool:
        """Whether the dry run's removed pods reach the anti-affinity filter: Volcano hands them
        to a plugin's SimulateRemoveTask / SimulateAddTask only when the plugin's
        ``enablePreemptable`` or ``enableAllocatable`` is on (both are on unless configured
        false); otherwise the filter keeps counting them, as its PreFilter state saw them."""
        for tier in st.session.config.tiers:
            for opt in tier.plugins:
                if opt.name == self.name:
                    return opt.enabled(ExtensionPoint.PREEMPTABLE) or opt.enabled(ExtensionPoint.ALLOCATABLE)
        return True

    def _affinity_filter(
        self, st: PredicatesState, task: TaskInfo, removed: frozenset[str] = frozenset()
    ) -> Filter | None:
        """Kubernetes' InterPodAffinity filter, affinity half: a node passes when it has every
        term's topology key and, for each term, its domain holds a pod that matches all of the
        task's terms. When no pod anywhere matches them all and the task matches its own terms,
        it may start its group: every node with all the keys passes."""
        me = task.task
        terms = me.pod_affinity
        if not terms:
            return None
        table = st.session.nodes
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

    def _anti_filter(self, st: PredicatesState, task: TaskInfo, removed: frozenset[str] = frozenset()) -> Filter | None:
        """Kubernetes' InterPodAffinity filter, anti-affinity half: a node fails when its
        topology domain (the node's value of the term's key) holds a pod the task's term selects,
        or a pod whose own term selects the task (symmetry). Nodes without the key pass."""
        table = st.session.nodes
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

    def _refresh(self, st: PredicatesState) -> None:
        # Pod counts change only through the node table, which logs every changed node.
        table = st.session.nodes
        changes = table.changes
        end = len(changes)
        if st._seen != end:
            passed, count, limit = st._pods_passed, table.pod_count, st.max_pods
            for i in set(changes[st._seen : end]):
                passed[i] = count[i] < limit[i]
            st._seen = end

    def on_allocate(self, st: PredicatesState, task: TaskInfo) -> None:
        """Keep the pod-count filter current."""
        self._refresh(st)

    def on_deallocate(self, st: PredicatesState, task: TaskInfo) -> None:
        """Keep the pod-count filter current (only changed nodes are refreshed)."""
        self._refresh(st)
