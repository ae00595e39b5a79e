"""Nodes as the dashboard shows them: inventory, allocation from bound pods, failure injection.

The node inventory comes from ``clusters.Node`` when the runtime provides that model. Until then,
with the simulated backend, the configured pool (``SIM_NODE_POOL``) is shown and labelled as such.
Allocation always comes from the pods bound to each node (``Pod.node_name``), which the runtime writes;
the database adds their requests up (:mod:`volcanoweb.dashboard.aggregates`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db.models import QuerySet

from volcanoweb.dashboard.aggregates import request_sums
from volcanoweb.dashboard.resources import parse_map, sum_maps
from volcanoweb.jobs.models import Pod, PodPhase

ACTIONS = {"fail": "Fail node", "recover": "Recover node", "cordon": "Cordon", "uncordon": "Uncordon"}


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


def node_model() -> Any:
    """Return the runtime's Node model, or None while it does not exist."""
    try:
        return apps.get_model("clusters", "Node")
    except LookupError:
        return None


def _amounts(values: dict[str, Any]) -> dict[str, float]:
    """Node rows hold integers in scheduler units; accept quantity strings too."""
    ints = {k: float(v) for k, v in values.items() if isinstance(v, int | float)}
    return ints | {k: float(v) for k, v in parse_map({k: v for k, v in values.items() if isinstance(v, str)}).items()}


def _from_model(model: Any) -> list[NodeView]:
    out = []
    for row in model.objects.all()[:2000]:
        allocatable = getattr(row, "allocatable", None) or getattr(row, "capacity", None) or {}
        labels = getattr(row, "labels", None) or {}
        conditions = getattr(row, "conditions", None) or []
        ready = getattr(row, "ready", None)
        if ready is None:
            ready = not any(c.get("type") == "Ready" and c.get("status") != "True" for c in conditions)
        out.append(
            NodeView(
                name=row.name,
                allocatable=_amounts(allocatable),
                ready=bool(ready),
                unschedulable=bool(getattr(row, "unschedulable", False)),
                pool=labels.get("sim.volcanoweb.io/pool", ""),
                conditions=list(conditions),
                taints=list(getattr(row, "taints", None) or []),
                labels=dict(labels),
            )
        )
    return out


def _from_sim_pool() -> list[NodeView]:
    from volcanoweb.clusters.backends.sim import parse_pool_spec

    return [
        NodeView(
            name=info.name,
            allocatable=dict(parse_map(info.allocatable)),
            ready=info.ready,
            unschedulable=info.unschedulable,
            pool=info.labels.get("sim.volcanoweb.io/pool", ""),
            labels=dict(info.labels),
        )
        for info in parse_pool_spec(settings.SIM_NODE_POOL)
    ]


def inventory_source() -> str:
    """Return where the node list comes from: "live", "configured" (sim pool) or "none"."""
    if node_model() is not None:
        return "live"
    return "configured" if settings.CLUSTER_BACKEND == "sim" else "none"


def inventory() -> list[NodeView]:
    """Return every node of the inventory, without allocation (one query, or none for the sim pool)."""
    model = node_model()
    if model is not None:
        return _from_model(model)
    if settings.CLUSTER_BACKEND == "sim":
        return _from_sim_pool()
    return []


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


def injection_service() -> Any:
    """Return the runtime's node service module when it offers failure injection, else None."""
    try:
        module = importlib.import_module("volcanoweb.clusters.services")
    except ImportError:
        return None
    return module if all(hasattr(module, f"{a}_node") for a in ("fail", "recover")) else None


def inject(access: Any, action: str, name: str) -> None:
    """Call the runtime's ``<action>_node(access, name)``; raise LookupError when unavailable."""
    if action not in ACTIONS:
        raise LookupError(f"unknown action {action!r}")
    module = injection_service()
    if action in ("cordon", "uncordon") and module is not None:
        module.cordon_node(access, name, unschedulable=action == "cordon")
        return
    func = getattr(module, f"{action}_node", None) if module is not None else None
    if func is None:
        raise LookupError("failure injection is not available: the cluster runtime does not provide it yet")
    func(access, name)
