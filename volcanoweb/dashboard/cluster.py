"""Nodes as the dashboard shows them: inventory, allocation from bound pods, failure injection.

The node inventory is ``clusters.Node`` (integers in scheduler units, mirrored from the backend).
Allocation comes from the pods bound to each node (``Pod.node_name``), which the runtime writes;
the database adds their requests up (:mod:`volcanoweb.dashboard.aggregates`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from volcanoweb.clusters import faults
from volcanoweb.clusters.models import Node
from volcanoweb.dashboard.aggregates import request_sums
from volcanoweb.dashboard.resources import sum_maps
from volcanoweb.jobs.models import Pod, PodPhase


@dataclass
class NodeView:
    """One node: allocatable and allocated resources (scheduler units), state and labels."""

    name: str
    allocatable: dict[str, float]
    allocated: dict[str, float] = field(default_factory=dict)
    pods: int = 0
    ready: bool = True
    unschedulable: bool = False
    pool: str = ""
    conditions: list[dict[str, Any]] = field(default_factory=list)
    taints: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)


def inventory() -> list[NodeView]:
    """Return every node of the inventory, without allocation (one query)."""
    return [
        NodeView(
            name=row.name,
            allocatable={k: float(v) for k, v in (row.allocatable or {}).items()},
            ready=row.ready,
            unschedulable=row.unschedulable,
            pool=(row.labels or {}).get("sim.volcanoweb.io/pool", ""),
            conditions=list(row.conditions or []),
            taints=list(row.taints or []),
            labels=dict(row.labels or {}),
        )
        for row in Node.objects.all()[:2000]
    ]


def bound_pods() -> QuerySet[Pod]:
    """Pods holding resources on a node: bound, Pending or Running, not being deleted."""
    active = Pod.objects.filter(phase__in=(PodPhase.PENDING, PodPhase.RUNNING), deletion_timestamp__isnull=True)
    return active.exclude(node_name="")


def list_nodes() -> list[NodeView]:
    """Return every node with what the pods bound to it request (two queries, summed in SQL)."""
    nodes = inventory()
    by_name = {node.name: node for node in nodes}
    for (node_name,), sums in sorted(request_sums(bound_pods(), "node_name").items()):
        node = by_name.get(node_name)
        if node is None:  # pods on a node the inventory does not (or no longer) list
            node = by_name[node_name] = NodeView(name=node_name, allocatable={})
            nodes.append(node)
        node.allocated = sums.requests
        node.pods = sums.pods
    return nodes


@dataclass
class HyperNodeRow:
    """One HyperNode of the topology tree: depth, tier, node count, free (allocatable - requested)
    and allocatable per main resource, as the scheduler resolves its members."""

    name: str
    tier: int
    depth: int
    nodes: int
    free: dict[str, float]
    total: dict[str, float]
    children: int


def topology_tree(nodes: list[NodeView]) -> list[HyperNodeRow]:
    """The HyperNodes as a tree (each after its parent, children by name), with free capacity summed
    over the nodes the scheduler resolves for each; empty without HyperNodes."""
    from scheduler.model import EMPTY
    from scheduler.model import Node as CoreNode
    from scheduler.topology import CLUSTER_TOP, Topology
    from volcanoweb.scheduling.converters import hyper_nodes

    specs = hyper_nodes()
    if not specs:
        return []
    ordered = sorted(nodes, key=lambda n: n.name)
    topo = Topology(specs, [CoreNode(n.name, EMPTY, dict(n.labels)) for n in ordered])
    rows: list[HyperNodeRow] = []

    def visit(name: str, depth: int) -> None:
        members = [ordered[int(i)] for i in topo.nodes.get(name, [])]
        total = sum_maps(m.allocatable for m in members)
        used = sum_maps(m.allocated for m in members)
        free = {k: max(0.0, v - used.get(k, 0.0)) for k, v in total.items()}
        kids = topo.children.get(name, [])
        rows.append(HyperNodeRow(name, topo.tier[name], depth, len(members), free, total, len(kids)))
        for child in kids:
            visit(child, depth + 1)

    for root in topo.children[CLUSTER_TOP]:
        visit(root, 0)
    return rows


def capacity(nodes: list[NodeView] | None = None) -> dict[str, float]:
    """Return the allocatable resources of the schedulable, ready nodes (``nodes``: the inventory)."""
    nodes = inventory() if nodes is None else nodes
    return sum_maps(n.allocatable for n in nodes if n.ready and not n.unschedulable)


def allocated_total() -> dict[str, float]:
    """Return Σ requests of every pod bound to a node (one query)."""
    sums = request_sums(bound_pods()).get(())
    return sums.requests if sums is not None else {}


def capacity_and_allocated() -> tuple[dict[str, float], dict[str, float]]:
    """Return (capacity, allocation) of the cluster as :func:`totals` does, without a per-node pass."""
    return capacity(), allocated_total()


def totals(nodes: list[NodeView]) -> tuple[dict[str, float], dict[str, float]]:
    """Return (capacity of schedulable ready nodes, allocation on all nodes)."""
    return capacity(nodes), sum_maps(n.allocated for n in nodes)


def inject(access: Any, action: str, name: str) -> None:
    """Fail, recover, cordon or uncordon a node through the cluster service; LookupError for another action."""
    if action == "fail":
        faults.fail_node(access, name)
    elif action == "recover":
        faults.recover_node(access, name)
    elif action in ("cordon", "uncordon"):
        faults.cordon_node(access, name, unschedulable=action == "cordon")
    else:
        raise LookupError(f"unknown action {action!r}")
