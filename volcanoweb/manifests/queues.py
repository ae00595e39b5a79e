"""Volcano Queue admission: defaults, field rules and the hierarchical checks of Volcano's queue webhook.

The hierarchical checks take plain values (:class:`QueueNode`) so they need no database; the
caller builds the nodes for the queue's parent chain, siblings and children.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from scheduler.quantity import format_quantity
from volcanoweb.core.errors import Errors
from volcanoweb.manifests.fields import (
    check_enum,
    check_resource_list,
    expect,
    get_bool,
    get_int,
    get_map,
    get_str,
    show,
)

MAX_QUEUE_DEPTH = 5
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
RESOURCE_FIELDS = ("capability", "deserved", "guarantee")


@dataclass
class QueueSpec:
    """A queue's checked spec: the defaulted manifest spec plus parsed resource vectors (scheduler units)."""

    spec: dict[str, Any]
    parent: str
    capability: dict[str, int] = field(default_factory=dict)
    deserved: dict[str, int] = field(default_factory=dict)
    guarantee: dict[str, int] = field(default_factory=dict)


@dataclass
class QueueNode:
    """A queue as the hierarchical checks see it."""

    name: str
    parent: str | None
    capability: dict[str, int]
    deserved: dict[str, int]
    guarantee: dict[str, int]


def parse_queue_resources(spec: dict[str, Any]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Return (capability, deserved, guarantee) of a stored, valid spec in scheduler units."""
    errors = Errors()
    return (
        check_resource_list(errors, "", spec.get("capability")),
        check_resource_list(errors, "", spec.get("deserved")),
        check_resource_list(errors, "", (spec.get("guarantee") or {}).get("resource")),
    )


def check_queue_spec(
    errors: Errors, name: str, spec: Any, annotations: dict[str, str], status: Any, *, creating: bool
) -> QueueSpec | None:
    """Return the defaulted, checked spec of a Queue, recording Volcano's field-level failures."""
    if spec is None:
        spec = {}
    if not expect(errors, "spec", spec, dict, "object"):
        return None
    parent, capability, deserved, guarantee = _check_queue_fields(errors, spec, status, creating=creating)
    _check_hierarchy_annotations(errors, annotations)
    if errors:
        return None
    _check_resource_order(errors, spec, capability, deserved, guarantee)
    if parent == name and name:
        errors.add("spec.parent", f"queue {name} cannot use itself as parent")
    if errors:
        return None
    defaulted = _default_queue_spec(name, spec)
    return QueueSpec(defaulted, defaulted.get("parent", ""), capability, deserved, guarantee)


def _check_queue_fields(
    errors: Errors, spec: dict[str, Any], status: Any, *, creating: bool
) -> tuple[str, dict[str, int], dict[str, int], dict[str, int]]:
    """Check each field of a Queue's spec (and a new queue's status state) on its own; return the parent's
    name and the capability, deserved and guarantee vectors (scheduler units)."""
    weight = get_int(errors, spec, "weight", "spec.weight")
    if weight is not None and not 0 <= weight <= 65535:
        errors.add("spec.weight", f"Invalid value: {weight}: spec.weight in body should be between 1 and 65535")
    get_bool(errors, spec, "reclaimable", "spec.reclaimable")
    priority = get_int(errors, spec, "priority", "spec.priority")
    if priority is not None and priority < 0:
        errors.add(
            "spec.priority", f"Invalid value: {priority}: spec.priority in body should be greater than or equal to 0"
        )
    parent = get_str(errors, spec, "parent", "spec.parent") or ""
    strategy = spec.get("dequeueStrategy")
    if strategy is not None:
        check_enum(errors, "spec.dequeueStrategy", strategy, ("fifo", "traverse"))
    capability = check_resource_list(errors, "spec.capability", spec.get("capability"))
    deserved = check_resource_list(errors, "spec.deserved", spec.get("deserved"))
    guarantee_obj = get_map(errors, spec, "guarantee", "spec.guarantee")
    guarantee = check_resource_list(errors, "spec.guarantee.resource", guarantee_obj.get("resource"))
    if creating and isinstance(status, dict) and status.get("state") not in (None, "", "Open", "Closed"):
        errors.add("status.state", f"Invalid value: {show(status.get('state'))}: queue state must be in [Open Closed]")
    return parent, capability, deserved, guarantee


def _check_resource_order(
    errors: Errors,
    spec: dict[str, Any],
    capability: dict[str, int],
    deserved: dict[str, int],
    guarantee: dict[str, int],
) -> None:
    """Volcano's order of a queue's own resources: guarantee <= deserved <= capability."""
    for resource, amount in guarantee.items():
        if resource in deserved and deserved[resource] < amount:
            errors.add(
                "spec.deserved",
                f"deserved[{resource}]={spec['deserved'][resource]} must be >= "
                f"guarantee[{resource}]={spec['guarantee']['resource'][resource]}",
            )
        elif deserved and resource not in deserved:
            errors.add(
                "spec.deserved",
                f"deserved[{resource}] must be >= guarantee[{resource}]={spec['guarantee']['resource'][resource]}",
            )
        if resource in capability and capability[resource] < amount:
            errors.add(
                "spec.guarantee.resource",
                f"guarantee[{resource}]={spec['guarantee']['resource'][resource]} must be <= "
                f"capability[{resource}]={spec['capability'][resource]}",
            )
    for resource, amount in deserved.items():
        if resource in capability and amount > capability[resource]:
            errors.add(
                "spec.deserved",
                f"deserved[{resource}]={spec['deserved'][resource]} must be <= "
                f"capability[{resource}]={spec['capability'][resource]}",
            )


def _default_queue_spec(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Volcano's defaults of a valid Queue spec: weight 1, reclaimable (except root), parent root."""
    defaulted = copy.deepcopy(spec)
    if not defaulted.get("weight"):
        defaulted["weight"] = 1
    if defaulted.get("reclaimable") is None:
        defaulted["reclaimable"] = name != "root"
    if name != "root" and not defaulted.get("parent"):
        defaulted["parent"] = "root"
    return defaulted


def default_hierarchy_annotations(annotations: dict[str, str]) -> dict[str, str]:
    """Volcano's queue mutation: prefix hierarchy paths not starting at root with ``root/`` and weights with ``1/``."""
    path, weights = annotations.get(HIERARCHY_ANNOTATION), annotations.get(HIERARCHY_WEIGHTS_ANNOTATION)
    if path and weights and not path.startswith("root"):
        return {**annotations, HIERARCHY_ANNOTATION: f"root/{path}", HIERARCHY_WEIGHTS_ANNOTATION: f"1/{weights}"}
    return annotations


def _check_hierarchy_annotations(errors: Errors, annotations: dict[str, str]) -> None:
    path, weights = annotations.get(HIERARCHY_ANNOTATION), annotations.get(HIERARCHY_WEIGHTS_ANNOTATION)
    if path is None and weights is None:
        return
    parts, weight_parts = (path or "").split("/"), (weights or "").split("/")
    if len(parts) != len(weight_parts):
        errors.add(
            f"metadata.annotations.{HIERARCHY_ANNOTATION}",
            f"{HIERARCHY_ANNOTATION} must have the same length with {HIERARCHY_WEIGHTS_ANNOTATION}",
        )
        return
    for item in weight_parts:
        try:
            ok = float(item) > 0
        except ValueError:
            ok = False
        if not ok:
            errors.add(
                f"metadata.annotations.{HIERARCHY_WEIGHTS_ANNOTATION}",
                f"{HIERARCHY_WEIGHTS_ANNOTATION} must be a positive float value, got {item}",
            )
            return


def _exceeds(child: dict[str, int], parent: dict[str, int]) -> str | None:
    """Return the first resource where child > parent (missing parent dims count as 0)."""
    for resource, amount in sorted(child.items()):
        if amount > parent.get(resource, 0):
            return resource
    return None


def _sum(vectors: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for vector in vectors:
        for resource, amount in vector.items():
            total[resource] = total.get(resource, 0) + amount
    return total


def _q(resource: str, amount: int) -> str:
    return format_quantity(resource, amount)


def _fmt(vector: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {format_quantity(k, v)}" for k, v in sorted(vector.items())) + "}"


def check_hierarchy(
    errors: Errors,
    queue: QueueNode,
    ancestors: list[QueueNode],
    siblings: list[QueueNode],
    children: list[QueueNode],
    subtree_capabilities: dict[str, dict[str, int]],
) -> None:
    """Volcano's hierarchical resource checks, plus ours: guarantee within ancestors' capability.

    ``ancestors`` nearest first and ending at root; ``siblings`` excludes the queue itself;
    ``subtree_capabilities`` maps each child to the per-resource max capability in its subtree.
    """
    if len(ancestors) > MAX_QUEUE_DEPTH:
        errors.add("spec.parent", f"queue {queue.name} exceeds the maximum allowed depth of {MAX_QUEUE_DEPTH}")
        return
    _check_within_ancestors(errors, queue, [a for a in ancestors if a.name != "root"])
    _check_sum_of_siblings(errors, queue, ancestors[0] if ancestors else None, siblings)
    if children:
        _check_children(errors, queue, children, subtree_capabilities)


def _check_within_ancestors(errors: Errors, queue: QueueNode, below_root: list[QueueNode]) -> None:
    """The queue's capability and guarantee within the capability of the nearest ancestor (below root) that
    sets it, resource by resource."""
    for resource, amount in sorted(queue.capability.items()):
        holder = next((a for a in below_root if resource in a.capability), None)
        if holder is not None and amount > holder.capability[resource]:
            errors.add(
                f"spec.capability[{resource}]",
                f"queue {queue.name} capability[{resource}]={_q(resource, amount)} exceeds the capability of "
                f"its ancestor queue {holder.name} ({_q(resource, holder.capability[resource])})",
            )
    for resource, amount in sorted(queue.guarantee.items()):
        holder = next((a for a in below_root if resource in a.capability), None)
        if holder is not None and amount > holder.capability[resource]:
            errors.add(
                f"spec.guarantee.resource[{resource}]",
                f"queue {queue.name} guarantee[{resource}] exceeds the capability of its ancestor queue {holder.name}",
            )


def _check_sum_of_siblings(
    errors: Errors, queue: QueueNode, parent: QueueNode | None, siblings: list[QueueNode]
) -> None:
    """The guarantees (and the deserved) of a parent's children, the queue's included, add up to at most the
    parent's (not checked under root)."""
    if parent is not None and parent.name != "root":
        for label, attr, path in (
            ("guarantee", "guarantee", "spec.guarantee.resource"),
            ("deserved", "deserved", "spec.deserved"),
        ):
            total = _sum([getattr(q, attr) for q in [*siblings, queue]])
            if getattr(queue, attr) and _exceeds(total, getattr(parent, attr)):
                errors.add(
                    path,
                    f"the sum of {label} of the child queues of {parent.name} {_fmt(total)} exceeds "
                    f"the {label} of {parent.name} {_fmt(getattr(parent, attr))}",
                )


def _check_children(
    errors: Errors, queue: QueueNode, children: list[QueueNode], subtree_capabilities: dict[str, dict[str, int]]
) -> None:
    """The queue's capability covers its descendants' capabilities, and its guarantee and deserved the sums
    of its children's."""
    for child in children:
        worst = subtree_capabilities.get(child.name, {})
        exceeded = next((r for r in sorted(worst) if r in queue.capability and worst[r] > queue.capability[r]), None)
        if exceeded is not None:
            errors.add(
                "spec.capability",
                f"queue {queue.name} capability[{exceeded}] is less than the capability of its "
                f"descendant in the subtree of {child.name}",
            )
    for label, attr, path in (
        ("guarantee", "guarantee", "spec.guarantee.resource"),
        ("deserved", "deserved", "spec.deserved"),
    ):
        total = _sum([getattr(c, attr) for c in children])
        if total and _exceeds(total, getattr(queue, attr)):
            errors.add(
                path,
                f"the sum of {label} of the child queues of {queue.name} {_fmt(total)} exceeds "
                f"its {label} {_fmt(getattr(queue, attr))}",
            )
