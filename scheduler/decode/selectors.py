"""Node selector requirements and terms, and label selectors: the matching rules pods, PodDisruptionBudgets
and HyperNodes share."""

from __future__ import annotations

from typing import Any

from scheduler.decode.common import Ctx
from scheduler.model import NodeSelectorRequirement, NodeSelectorTerm


def requirements(ctx: Ctx, value: Any, field: str) -> tuple[NodeSelectorRequirement, ...]:
    out = []
    for j, req in enumerate(ctx.seq(value, field)):
        f = f"{field}[{j}]"
        req = ctx.mapping(req, f)
        op = ctx.string(req.get("operator"), f"{f}.operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise ctx.error(f"{f}.operator", f"unsupported operator {op!r}")
        values = tuple(ctx.string(v, f"{f}.values") for v in ctx.seq(req.get("values"), f))
        out.append(NodeSelectorRequirement(ctx.string(req.get("key"), f"{f}.key"), op, values))
    return tuple(out)


def node_selector_term(ctx: Ctx, value: Any, field: str) -> NodeSelectorTerm:
    m = ctx.mapping(value, field)
    return NodeSelectorTerm(
        requirements(ctx, m.get("matchExpressions"), f"{field}.matchExpressions"),
        requirements(ctx, m.get("matchFields"), f"{field}.matchFields"),
    )


def label_selector(
    ctx: Ctx, selector: Any, field: str
) -> tuple[tuple[tuple[str, str], ...] | None, tuple[NodeSelectorRequirement, ...]]:
    if selector is None:
        return None, ()
    sel = ctx.mapping(selector, field)
    labels = tuple(sorted(ctx.labels(sel.get("matchLabels"), f"{field}.matchLabels").items()))
    exprs = requirements(ctx, sel.get("matchExpressions"), f"{field}.matchExpressions")
    if any(r.operator in ("Gt", "Lt") for r in exprs):
        raise ctx.error(f"{field}.matchExpressions", "operators are In, NotIn, Exists, DoesNotExist")
    return labels, exprs
