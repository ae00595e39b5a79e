"""HyperNode objects (``topology.volcano.sh/v1alpha1``): the network topology's tiers and members."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scheduler.decode.common import Ctx
from scheduler.decode.selectors import label_selector
from scheduler.model import HyperNode, HyperNodeMember


def decode_hyper_node(ctx: Ctx, doc: Mapping[str, Any]) -> HyperNode:
    """A ``topology.volcano.sh/v1alpha1`` HyperNode (``spec.tier`` >= 0, members of type Node
    or HyperNode selected by ``exactMatch``, ``regexMatch`` or, for nodes, ``labelMatch``)."""
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    tier = ctx.integer(spec.get("tier"), "spec.tier", 0)
    if tier < 0:
        raise ctx.error("spec.tier", "must not be negative")
    members: list[HyperNodeMember] = []
    for j, raw in enumerate(ctx.seq(spec.get("members"), "spec.members")):
        f = f"spec.members[{j}]"
        m = ctx.mapping(raw, f)
        kind = ctx.string(m.get("type"), f"{f}.type")
        if kind not in ("Node", "HyperNode"):
            raise ctx.error(f"{f}.type", f"must be Node or HyperNode, got {kind!r}")
        sel = ctx.mapping(m.get("selector"), f"{f}.selector")
        chosen = [k for k in ("exactMatch", "regexMatch", "labelMatch") if sel.get(k) is not None]
        if len(chosen) != 1:
            raise ctx.error(f"{f}.selector", "exactly one of exactMatch, regexMatch and labelMatch is required")
        if chosen[0] == "exactMatch":
            name = ctx.string(
                ctx.mapping(sel["exactMatch"], f"{f}.selector.exactMatch").get("name"), f"{f}.selector.exactMatch.name"
            )
            if not name:
                raise ctx.error(f"{f}.selector.exactMatch.name", "required")
            members.append(HyperNodeMember(kind, exact=name))
        elif chosen[0] == "regexMatch":
            pattern = ctx.string(
                ctx.mapping(sel["regexMatch"], f"{f}.selector.regexMatch").get("pattern"),
                f"{f}.selector.regexMatch.pattern",
            )
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ctx.error(f"{f}.selector.regexMatch.pattern", f"invalid regular expression: {exc}") from None
            if kind != "Node":
                raise ctx.error(f"{f}.selector", "a HyperNode member is selected by exactMatch only")
            members.append(HyperNodeMember(kind, regex=pattern))
        else:
            if kind != "Node":
                raise ctx.error(f"{f}.selector", "a HyperNode member is selected by exactMatch only")
            labels, exprs = label_selector(ctx, sel["labelMatch"], f"{f}.selector.labelMatch")
            members.append(HyperNodeMember(kind, match_labels=labels or (), match_expressions=exprs))
    return HyperNode(
        name=ctx.string(meta.get("name"), "metadata.name"),
        tier=tier,
        members=tuple(members),
        tier_name=ctx.string(spec.get("tierName"), "spec.tierName"),
    )


def hyper_node(doc: Mapping[str, Any], obj: str = "") -> HyperNode:
    """Return the HyperNode of a ``topology.volcano.sh/v1alpha1`` manifest (raises ManifestError)."""
    return decode_hyper_node(Ctx(1, obj), doc)
