"""Where a pod spec lets the pod go: node affinity, tolerations, pod (anti-)affinity and topology spread
constraints, the one converter of these fields (manifests and the web app's snapshot both use it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.decode.common import Ctx
from scheduler.decode.selectors import label_selector, node_selector_term
from scheduler.model import (
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)


def _affinity(
    ctx: Ctx, spec: Mapping[str, Any]
) -> tuple[tuple[NodeSelectorTerm, ...], tuple[PreferredSchedulingTerm, ...]]:
    aff = ctx.mapping(
        ctx.mapping(spec.get("affinity"), "spec.affinity").get("nodeAffinity"), "spec.affinity.nodeAffinity"
    )
    base = "spec.affinity.nodeAffinity"
    req = ctx.mapping(
        aff.get("requiredDuringSchedulingIgnoredDuringExecution"),
        f"{base}.requiredDuringSchedulingIgnoredDuringExecution",
    )
    rf = f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    required = tuple(
        node_selector_term(ctx, t, f"{rf}[{j}]") for j, t in enumerate(ctx.seq(req.get("nodeSelectorTerms"), rf))
    )
    pf = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for j, p in enumerate(ctx.seq(aff.get("preferredDuringSchedulingIgnoredDuringExecution"), pf)):
        p = ctx.mapping(p, f"{pf}[{j}]")
        preferred.append(
            PreferredSchedulingTerm(
                ctx.integer(p.get("weight"), f"{pf}[{j}].weight", 1),
                node_selector_term(ctx, p.get("preference"), f"{pf}[{j}].preference"),
            )
        )
    return required, tuple(preferred)


def _tolerations(ctx: Ctx, spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    out = []
    for j, t in enumerate(ctx.seq(spec.get("tolerations"), "spec.tolerations")):
        f = f"spec.tolerations[{j}]"
        t = ctx.mapping(t, f)
        op = ctx.string(t.get("operator"), f"{f}.operator", "Equal")
        if op not in ("Equal", "Exists"):
            raise ctx.error(f"{f}.operator", f"unsupported operator {op!r}")
        out.append(
            Toleration(
                ctx.string(t.get("key"), f"{f}.key"),
                op,
                ctx.string(t.get("value"), f"{f}.value"),
                ctx.string(t.get("effect"), f"{f}.effect"),
            )
        )
    return tuple(out)


def _pod_term(ctx: Ctx, raw: Any, f: str) -> PodAffinityTerm:
    term = ctx.mapping(raw, f)
    key = ctx.string(term.get("topologyKey"), f"{f}.topologyKey")
    if not key:
        raise ctx.error(f"{f}.topologyKey", "required")
    labels, exprs = label_selector(ctx, term.get("labelSelector"), f"{f}.labelSelector")
    namespaces = tuple(ctx.string(n, f"{f}.namespaces") for n in ctx.seq(term.get("namespaces"), f"{f}.namespaces"))
    return PodAffinityTerm(key, labels, exprs, namespaces)


def _pod_terms(
    ctx: Ctx, spec: Mapping[str, Any], kind: str
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    """Required and preferred terms of ``spec.affinity.<kind>`` (podAffinity or podAntiAffinity)."""
    base = f"spec.affinity.{kind}"
    aff = ctx.mapping(ctx.mapping(spec.get("affinity"), "spec.affinity").get(kind), base)
    rf = f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_term(ctx, raw, f"{rf}[{j}]")
        for j, raw in enumerate(ctx.seq(aff.get("requiredDuringSchedulingIgnoredDuringExecution"), rf))
    )
    pf = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for j, raw in enumerate(ctx.seq(aff.get("preferredDuringSchedulingIgnoredDuringExecution"), pf)):
        f = f"{pf}[{j}]"
        p = ctx.mapping(raw, f)
        weight = ctx.integer(p.get("weight"), f"{f}.weight", 1)
        if not 1 <= weight <= 100:
            raise ctx.error(f"{f}.weight", "must be in the range 1-100")
        preferred.append(
            WeightedPodAffinityTerm(weight, _pod_term(ctx, p.get("podAffinityTerm"), f"{f}.podAffinityTerm"))
        )
    return required, tuple(preferred)


def _spread(ctx: Ctx, spec: Mapping[str, Any]) -> tuple[TopologySpreadConstraint, ...]:
    base = "spec.topologySpreadConstraints"
    out = []
    for j, raw in enumerate(ctx.seq(spec.get("topologySpreadConstraints"), base)):
        f = f"{base}[{j}]"
        c = ctx.mapping(raw, f)
        skew = ctx.integer(c.get("maxSkew"), f"{f}.maxSkew", 0)
        if skew < 1:
            raise ctx.error(f"{f}.maxSkew", "must be at least 1")
        key = ctx.string(c.get("topologyKey"), f"{f}.topologyKey")
        if not key:
            raise ctx.error(f"{f}.topologyKey", "required")
        when = ctx.string(c.get("whenUnsatisfiable"), f"{f}.whenUnsatisfiable", "DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ctx.error(f"{f}.whenUnsatisfiable", "expected DoNotSchedule or ScheduleAnyway")
        labels, exprs = label_selector(ctx, c.get("labelSelector"), f"{f}.labelSelector")
        out.append(TopologySpreadConstraint(skew, key, when, labels, exprs))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PodPlacement:
    """What a pod spec says about where the pod may go (the placement fields of :class:`Task`)."""

    required_affinity: tuple[NodeSelectorTerm, ...] = ()
    preferred_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()


_NO_PLACEMENT = PodPlacement()


def placement_of(ctx: Ctx, spec: Mapping[str, Any]) -> PodPlacement:
    if not (spec.get("affinity") or spec.get("tolerations") or spec.get("topologySpreadConstraints")):
        return _NO_PLACEMENT
    required, preferred = _affinity(ctx, spec)
    pod_required, pod_preferred = _pod_terms(ctx, spec, "podAffinity")
    anti_required, anti_preferred = _pod_terms(ctx, spec, "podAntiAffinity")
    return PodPlacement(
        required,
        preferred,
        _tolerations(ctx, spec),
        anti_required,
        _spread(ctx, spec),
        pod_required,
        pod_preferred,
        anti_preferred,
    )


def pod_placement(spec: Mapping[str, Any], obj: str = "") -> PodPlacement:
    """Return the node affinity, tolerations, pod affinity and anti-affinity (required and
    preferred) and topology spread constraints of a pod ``spec`` (the one converter of these
    fields: manifests and the web app's snapshot both use it). Raises :class:`ManifestError`
    (document 0, object ``obj``) on bad input."""
    return placement_of(Ctx(0, obj), spec)
