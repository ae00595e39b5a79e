"""The numa-aware plugin: CPU pinning within NUMA nodes, as the kubelet's topology manager would admit it.

Volcano's ``pkg/scheduler/plugins/numaaware`` over ``Node.numa`` (Volcano reads the Numatopology objects of
its resource exporter; the simulated cluster declares the layout in its node pools) and the pod's
``volcano.sh/numa-topology-policy`` annotation (``Task.numa_policy``). Only pods of QoS class Guaranteed
(``Task.guaranteed_cpus``, their containers' cpu requests) are considered; the algorithms are in
``scheduler/numa.py``.

* **predicate** (unresolvable). A pod with a policy (not ``none``) fails a node without NUMA information
  (``numa info is empty``), whose CPU manager policy is not ``static``, whose topology manager policy
  differs from the pod's (``task topology policy[a] is different with node[b]``) or with no allocatable
  CPU. A pod without a policy is checked only on nodes with a static CPU manager and a topology policy
  other than ``none``. Then, container by container, the CPU manager's hints (sets of NUMA nodes with
  enough free CPUs for the container's whole CPUs; a fractional request pins nothing) are merged by the
  node's policy (best-effort, restricted, single-numa-node); a container the policy does not admit fails
  the node with ``container <i> cannot be assigned by numa``. Otherwise the CPUs Kubernetes'
  ``takeByTopology`` would give each container (the hint's NUMA nodes first) are remembered for the node.
* **node order** (pods with a policy): fewer NUMA nodes under the pod's CPUs score higher:
  ``100 - 100 * n / max n`` over the candidates (100 for all when none is pinned), times ``weight`` (1).
* A placed pod takes its CPUs off the node's free set for the rest of the session; unplaced, it gives them
  back. Volcano also records them for the resource exporter at close: nothing to record here. A node whose free
  CPUs are not reported (``allocatable`` None: the simulated cluster) pins the Guaranteed pods already on it
  first, in their order, as its topology manager would have admitted them.

Differences: the kubelet's reserved CPUs are taken by topology from all CPUs, as Volcano; Go's sort
comparators in ``takeByTopology`` are not orders, so equal CPUs are ranked by the keys they list, in turn;
containers are named by their index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from scheduler import numa
from scheduler.cycle_state import PluginState
from scheduler.framework import AllocateHandler, ArgSpec, NodeOrder, Plugin, Predicate
from scheduler.model import NumaTopology
from scheduler.points import Filter, FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = ["NumaAwarePlugin", "NumaAwareState", "node_fit", "normalize_reverse"]


def _has_policy(policy: str) -> bool:
    return policy not in ("", "none")


def node_fit(policy: str, topo: NumaTopology | None) -> tuple[bool, str]:
    """Volcano's ``filterNodeByPolicy``: whether the node is checked, and why it fails ("" none)."""
    if _has_policy(policy):
        if topo is None:
            return False, "numa info is empty"
        if topo.cpu_manager_policy != "static":
            return False, "cpu manager policy isn't static"
        if policy != topo.topology_policy:
            return False, f"task topology policy[{policy}] is different with node[{topo.topology_policy}]"
        if topo.allocatable == () or not topo.cpus:
            return False, "cpu allocatable map is empty"
        return True, ""
    if topo is None or topo.cpu_manager_policy != "static" or topo.topology_policy in ("", "none"):
        return False, ""
    return True, ""


def normalize_reverse(counts: Sequence[int], top: int = 100) -> list[int]:
    """Volcano's ``NormalizeScore(top, reverse=true)`` (integer arithmetic)."""
    most = max(counts, default=0)
    if most <= 0:
        return [top] * len(counts)
    return [top - top * c // most for c in counts]


class _NodeNuma:
    """One node's NUMA details and free CPUs in the session."""

    def __init__(self, topo: NumaTopology, pinned: Sequence[Sequence[int]]) -> None:
        self.topo = topo
        self.details = {c: numa.CpuInfo(n, s, k) for c, n, s, k in topo.cpus}
        self.nodes = sorted({i.numa for i in self.details.values()})
        reserved = -(-topo.reserved_cpu // 1000)
        taken = numa.take_by_topology(self.details, frozenset(self.details), reserved) if reserved else None
        self.reserved = taken or frozenset()
        if topo.allocatable is not None:
            self.free = frozenset(topo.allocatable)
            return
        # Not reported: the kubelet pinned each Guaranteed pod on the node as its topology manager admits it.
        self.free = frozenset(self.details)
        for containers in pinned if topo.cpu_manager_policy == "static" else ():
            got, _why = self.assign(containers)
            self.free = self.free - got

    def assign(self, containers: Sequence[int]) -> tuple[frozenset[int], str]:
        """The CPUs the node's policy gives containers of these cpu requests (millicores), or why it refuses one."""
        free = self.free - self.reserved
        chosen: set[int] = set()
        for k, millis in enumerate(containers):
            request = millis // 1000 if millis % 1000 == 0 else 0
            hints: dict[str, list[numa.Hint] | None] = {"cpu": None}
            if request:
                hints["cpu"] = numa.cpu_hints(free, self.details, request)
            best, admitted = numa.admit(self.topo.topology_policy, self.nodes, [hints])
            if not admitted:
                return frozenset(), f"container {k} cannot be assigned by numa"
            got = numa.allocate_cpus(self.details, free, request, best)
            chosen |= got
            free = free - got
        return frozenset(chosen), ""


class NumaAwareState(PluginState):
    """numa-aware's cycle: its weight, each node's NUMA details and free CPUs, and the CPUs chosen and taken."""

    def __init__(self, session: SessionHandle, weight: int, numa: list[_NodeNuma | None]) -> None:
        super().__init__(session)
        self.weight = weight
        #: Per node index, its NUMA details and free CPUs (None: no NUMA information).
        self.numa = numa
        #: Per task uid, per node index, the CPUs the predicate chose there.
        self.assigned: dict[str, dict[int, frozenset[int]]] = {}
        #: Per task uid placed in the session, the node and CPUs it took.
        self.taken: dict[str, tuple[int, frozenset[int]]] = {}


class NumaAwarePlugin(Plugin, Predicate, NodeOrder, AllocateHandler):
    """NUMA-aligned CPU placement (see the module docstring)."""

    name = "numa-aware"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {"weight": ArgSpec("int", 1, "the node order's weight")}

    def open(self, session: SessionHandle) -> NumaAwareState:
        """Each node's NUMA details, with the CPUs of the Guaranteed pods already on it taken."""
        weight = int(self.args["weight"])
        table = session.nodes
        nodes = [
            None if n.numa is None else _NodeNuma(n.numa, [t.task.guaranteed_cpus for t in table.tasks[i].values()])
            for i, n in enumerate(table.nodes)
        ]
        return NumaAwareState(session, weight, nodes)

    def _check(self, st: NumaAwareState, task: TaskInfo, i: int) -> str:
        """The node's failure for the task ("" passes), remembering the CPUs chosen."""
        fit, why = node_fit(task.task.numa_policy, st.session.nodes.nodes[i].numa)
        node_numa = st.numa[i]
        if not fit or node_numa is None:
            return why
        chosen, why = node_numa.assign(task.task.guaranteed_cpus)
        if why:
            return why
        st.assigned.setdefault(task.uid, {})[i] = chosen
        return ""

    def predicate(self, st: NumaAwareState, task: TaskInfo) -> Sequence[Filter]:
        """Nodes whose topology policy cannot admit the pod's containers fail (see the module docstring)."""
        if not task.task.guaranteed_cpus:
            return ()
        reasons = [self._check(st, task, i) for i in range(len(st.numa))]
        passed = np.array([not r for r in reasons], dtype=np.bool_)
        return [Filter(self.name, passed, "cannot be assigned by numa", True, reasons)]

    def node_order(self, st: NumaAwareState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Fewer NUMA nodes under the pod's CPUs first (pods with a policy)."""
        chosen = st.assigned.get(task.uid)
        if chosen is None or not _has_policy(task.task.numa_policy):
            return np.zeros(len(nodes), dtype=np.float64)
        counts = []
        for i in nodes:
            node_numa, cpus = st.numa[int(i)], chosen.get(int(i), frozenset())
            counts.append(0 if node_numa is None else len({node_numa.details[c].numa for c in cpus}))
        return np.array([s * st.weight for s in normalize_reverse(counts)], dtype=np.float64)

    def on_allocate(self, st: NumaAwareState, task: TaskInfo) -> None:
        cpus = st.assigned.get(task.uid, {}).get(task.node)
        node_numa = st.numa[task.node] if task.node >= 0 else None
        if cpus is None or node_numa is None:
            return
        node_numa.free = node_numa.free - cpus
        st.taken[task.uid] = (task.node, cpus)

    def on_deallocate(self, st: NumaAwareState, task: TaskInfo) -> None:
        held = st.taken.pop(task.uid, None)
        if held is not None:
            node_numa = st.numa[held[0]]
            if node_numa is not None:
                node_numa.free = node_numa.free | held[1]
