"""Nodes as the dashboard shows them: inventory, allocation from bound pods, failure injection.

The node inventory is ``clusters.Node`` (integers in scheduler units, mirrored from the backend).
Allocation comes from the pods bound to each node (``Pod.node_name``), which the runtime writes;
the database adds their requests up (:mod:`volcanoweb.dashboard.aggregates`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from volcanoweb.clusters import services as cluster_services
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
        cluster_services.fail_node(access, name)
    elif action == "recover":
        cluster_services.recover_node(access, name)
    elif action in ("cordon", "uncordon"):
        cluster_services.cordon_node(access, name, unschedulable=action == "cordon")
    else:
        raise LookupError(f"unknown action {action!r}")
