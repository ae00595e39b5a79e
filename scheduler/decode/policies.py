"""The policy objects around jobs: PriorityClasses, ResourceQuotas and PodDisruptionBudgets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.decode.common import Ctx
from scheduler.decode.selectors import label_selector
from scheduler.policies import PodDisruptionBudget, PriorityClass, ResourceQuota
from scheduler.quantity import QuantityError, parse_resource


def decode_priority_class(ctx: Ctx, doc: Mapping[str, Any]) -> PriorityClass:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    if doc.get("value") is None:
        raise ctx.error("value", "required")
    return PriorityClass(
        ctx.string(meta.get("name"), "metadata.name"),
        ctx.integer(doc.get("value"), "value", 0),
        ctx.boolean(doc.get("globalDefault"), "globalDefault", False),
        ctx.string(doc.get("preemptionPolicy"), "preemptionPolicy", "PreemptLowerPriority"),
    )


def _quota_amounts(ctx: Ctx, value: Any, field: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, amount in ctx.mapping(value, field).items():
        base = str(name).removeprefix("requests.").removeprefix("limits.")
        try:
            out[str(name)] = parse_resource(base, amount)
        except QuantityError as exc:
            raise ctx.error(f"{field}.{name}", str(exc)) from None
    return out


def decode_resource_quota(ctx: Ctx, doc: Mapping[str, Any]) -> ResourceQuota:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    status = ctx.mapping(doc.get("status"), "status")
    # Volcano reads the quota's status (hard and used, kept by the quota controller); a manifest
    # written by hand has only spec.hard, used then counts as nothing.
    hard_field = "status.hard" if status.get("hard") is not None else "spec.hard"
    hard_value = status.get("hard") if status.get("hard") is not None else spec.get("hard")
    return ResourceQuota(
        ctx.string(meta.get("name"), "metadata.name"),
        ctx.string(meta.get("namespace"), "metadata.namespace", "default"),
        _quota_amounts(ctx, hard_value, hard_field),
        _quota_amounts(ctx, status.get("used"), "status.used"),
    )


def decode_pdb(ctx: Ctx, doc: Mapping[str, Any]) -> PodDisruptionBudget:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    status = ctx.mapping(doc.get("status"), "status")
    labels, exprs = label_selector(ctx, spec.get("selector"), "spec.selector")
    allowed = ctx.integer(status.get("disruptionsAllowed"), "status.disruptionsAllowed", 0)
    disrupted = ctx.mapping(status.get("disruptedPods"), "status.disruptedPods")
    return PodDisruptionBudget(
        ctx.string(meta.get("name"), "metadata.name"),
        ctx.string(meta.get("namespace"), "metadata.namespace", "default"),
        labels,
        exprs,
        allowed,
        frozenset(str(k) for k in disrupted),
    )
