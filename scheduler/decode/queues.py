"""Queue objects: weight, capability, guarantee, hierarchy and node-group affinity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.decode.annotations import HIERARCHY, HIERARCHY_WEIGHTS
from scheduler.decode.common import Ctx
from scheduler.model import NodeGroupAffinity, Queue, QueueState, Resource


def decode_queue(ctx: Ctx, doc: Mapping[str, Any], creation: int) -> Queue:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    status = ctx.mapping(doc.get("status"), "status")
    name = ctx.string(meta.get("name"), "metadata.name")
    weight = ctx.integer(spec.get("weight"), "spec.weight", 1)
    if not 0 <= weight <= 65535:
        raise ctx.error("spec.weight", "must be between 1 and 65535")
    state = ctx.string(status.get("state"), "status.state", "Open") or "Open"
    try:
        qstate = QueueState(state)
    except ValueError:
        raise ctx.error("status.state", f"unknown queue state {state!r}") from None

    def res(field: str, value: Any) -> Resource | None:
        if value is None:
            return None
        return Resource.from_dict(ctx.resources(value, field))

    guarantee = ctx.mapping(spec.get("guarantee"), "spec.guarantee")
    ann = ctx.labels(meta.get("annotations"), "metadata.annotations")
    return Queue(
        name=name,
        weight=weight or 1,
        capability=res("spec.capability", spec.get("capability")),
        guarantee=res("spec.guarantee.resource", guarantee.get("resource")),
        deserved=res("spec.deserved", spec.get("deserved")),
        parent=ctx.string(spec.get("parent"), "spec.parent"),
        reclaimable=ctx.boolean(spec.get("reclaimable"), "spec.reclaimable", True),
        state=qstate,
        priority=ctx.integer(spec.get("priority"), "spec.priority", 0),
        hierarchy=ann.get(HIERARCHY, ""),
        hierarchy_weights=ann.get(HIERARCHY_WEIGHTS, ""),
        creation=creation,
        uid=ctx.string(meta.get("uid"), "metadata.uid", name),
        node_group_affinity=_node_group_affinity(ctx, spec.get("affinity")),
        node_group_resource_limits=ann.get("volcano.sh/nodegroup-resource-limits", ""),
    )


def _node_group_affinity(ctx: Ctx, value: Any) -> NodeGroupAffinity | None:
    """A queue's ``spec.affinity`` (nodeGroupAffinity / nodeGroupAntiAffinity group lists)."""
    if value is None:
        return None
    aff = ctx.mapping(value, "spec.affinity")
    lists: list[tuple[str, ...]] = []
    for part in ("nodeGroupAffinity", "nodeGroupAntiAffinity"):
        sub = ctx.mapping(aff.get(part), f"spec.affinity.{part}")
        for kind in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ):
            f = f"spec.affinity.{part}.{kind}"
            lists.append(tuple(ctx.string(g, f) for g in ctx.seq(sub.get(kind), f)))
    return NodeGroupAffinity(lists[0], lists[1], lists[2], lists[3])
