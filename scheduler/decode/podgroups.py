"""PodGroup objects: the job, its gang minimums, network topology, sub-group policies and SLA waiting time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.decode.annotations import (
    JDB_MAX_UNAVAILABLE,
    JDB_MIN_AVAILABLE,
    TASK_AFFINITY,
    TASK_ANTI_AFFINITY,
    TASK_ORDER,
    preemptable_flag,
)
from scheduler.decode.common import Ctx, parse_timestamp
from scheduler.decode.selectors import label_selector
from scheduler.model import Job, JobPhase, NetworkTopology, Resource, SubGroupPolicy
from scheduler.quantity import SLA_ANNOTATION, parse_duration


def decode_podgroup(ctx: Ctx, doc: Mapping[str, Any], creation: int) -> Job:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    status = ctx.mapping(doc.get("status"), "status")
    name = ctx.string(meta.get("name"), "metadata.name")
    ns = ctx.string(meta.get("namespace"), "metadata.namespace", "default")
    phase = ctx.string(status.get("phase"), "status.phase", "Pending") or "Pending"
    try:
        job_phase = JobPhase(phase)
    except ValueError:
        raise ctx.error("status.phase", f"unknown PodGroup phase {phase!r}") from None
    minimum = ctx.integer(spec.get("minMember"), "spec.minMember", 0)
    if minimum < 0:
        raise ctx.error("spec.minMember", "must not be negative")
    task_min = {}
    for k, v in ctx.mapping(spec.get("minTaskMember"), "spec.minTaskMember").items():
        task_min[str(k)] = ctx.integer(v, f"spec.minTaskMember.{k}", 0)
    mres = None
    if spec.get("minResources") is not None:
        mres = Resource.from_dict(ctx.resources(spec.get("minResources"), "spec.minResources"))
    labels = ctx.labels(meta.get("labels"), "metadata.labels")
    ann = ctx.labels(meta.get("annotations"), "metadata.annotations")
    pre = preemptable_flag(labels, ann)
    sla = parse_sla(ctx, ann)
    return Job(
        network_topology=network_topology(ctx, spec.get("networkTopology"), "spec.networkTopology"),
        jdb_min_available=ann.get(JDB_MIN_AVAILABLE, ""),
        jdb_max_unavailable=ann.get(JDB_MAX_UNAVAILABLE, ""),
        task_affinity=ann.get(TASK_AFFINITY),
        task_anti_affinity=ann.get(TASK_ANTI_AFFINITY),
        task_order=ann.get(TASK_ORDER),
        uid=ctx.string(meta.get("uid"), "metadata.uid", f"{ns}/{name}"),
        name=name,
        namespace=ns,
        queue=ctx.string(spec.get("queue"), "spec.queue", "default") or "default",
        min_member=minimum,
        min_task_member=task_min,
        min_resources=mres,
        priority_class_name=ctx.string(spec.get("priorityClassName"), "spec.priorityClassName"),
        phase=job_phase,
        preemptable=pre,
        creation=creation,
        created_at=parse_timestamp(ctx, meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        sla_waiting_time=sla,
        sub_group_policies=sub_group_policies(ctx, spec.get("subGroupPolicy"), "spec.subGroupPolicy"),
    )


def sub_group_policies(ctx: Ctx, value: Any, field: str) -> tuple[SubGroupPolicy, ...]:
    """A PodGroup's ``spec.subGroupPolicy``: per entry its ``name``, ``subGroupSize`` (>= 1), ``minSubGroups``
    (>= 0), ``matchLabelKeys``, ``labelSelector`` and ``networkTopology``."""
    out: list[SubGroupPolicy] = []
    for i, item in enumerate(ctx.seq(value, field)):
        f = f"{field}[{i}]"
        m = ctx.mapping(item, f)
        size = None if m.get("subGroupSize") is None else ctx.integer(m.get("subGroupSize"), f"{f}.subGroupSize", 1)
        if size is not None and size < 1:
            raise ctx.error(f"{f}.subGroupSize", "must be at least 1")
        least = None if m.get("minSubGroups") is None else ctx.integer(m.get("minSubGroups"), f"{f}.minSubGroups", 0)
        if least is not None and least < 0:
            raise ctx.error(f"{f}.minSubGroups", "must not be negative")
        keys = tuple(
            ctx.string(k, f"{f}.matchLabelKeys") for k in ctx.seq(m.get("matchLabelKeys"), f"{f}.matchLabelKeys")
        )
        selector, expressions = label_selector(ctx, m.get("labelSelector"), f"{f}.labelSelector")
        out.append(
            SubGroupPolicy(
                name=ctx.string(m.get("name"), f"{f}.name"),
                size=size,
                min_groups=least,
                match_label_keys=keys,
                selector=selector,
                selector_expressions=expressions,
                network_topology=network_topology(ctx, m.get("networkTopology"), f"{f}.networkTopology"),
            )
        )
    return tuple(out)


def sub_group_policies_of(value: Any, obj: str = "") -> tuple[SubGroupPolicy, ...]:
    """Return a ``spec.subGroupPolicy`` value as the model's (raises ManifestError)."""
    return sub_group_policies(Ctx(1, obj), value, "spec.subGroupPolicy")


def network_topology(ctx: Ctx, value: Any, field: str) -> NetworkTopology | None:
    """A PodGroup's (or Job's) ``networkTopology``: ``mode`` hard (default) or soft, and at most
    one of ``highestTierAllowed`` (>= 0) and ``highestTierName``."""
    if value is None:
        return None
    m = ctx.mapping(value, field)
    mode = ctx.string(m.get("mode"), f"{field}.mode", "hard") or "hard"
    if mode not in ("hard", "soft"):
        raise ctx.error(f"{field}.mode", f"must be hard or soft, got {mode!r}")
    allowed = None
    if m.get("highestTierAllowed") is not None:
        allowed = ctx.integer(m.get("highestTierAllowed"), f"{field}.highestTierAllowed", 0)
        if allowed < 0:
            raise ctx.error(f"{field}.highestTierAllowed", "must not be negative")
    name = ctx.string(m.get("highestTierName"), f"{field}.highestTierName")
    if allowed is not None and name:
        raise ctx.error(f"{field}.highestTierName", "highestTierName and highestTierAllowed cannot be set together")
    return NetworkTopology(mode, allowed, name)


def network_topology_of(value: Any, obj: str = "") -> NetworkTopology | None:
    """Return a ``spec.networkTopology`` value as the model's (raises ManifestError)."""
    return network_topology(Ctx(1, obj), value, "spec.networkTopology")


def parse_sla(ctx: Ctx, annotations: Mapping[str, str]) -> float | None:
    if SLA_ANNOTATION not in annotations:
        return None
    field = f"metadata.annotations.{SLA_ANNOTATION}"
    try:
        sla = parse_duration(annotations[SLA_ANNOTATION])
    except ValueError as exc:
        raise ctx.error(field, str(exc)) from None
    if sla <= 0:
        raise ctx.error(field, "must be a positive duration")
    return sla


def sla_waiting_time(annotations: Mapping[str, str], obj: str = "") -> float | None:
    """Return a PodGroup's ``sla-waiting-time`` annotation in seconds (None: not set).

    Raises :class:`ManifestError` when it is not a positive Go duration."""
    return parse_sla(Ctx(0, obj), annotations)
