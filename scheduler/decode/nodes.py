"""Node objects: allocatable resources, taints, and the usage, GPU health, NUMA and vGPU annotations."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scheduler.decode.annotations import GPU_UNHEALTHY, NODE_USAGE, NODE_USAGE_TIME
from scheduler.decode.common import Ctx, parse_timestamp
from scheduler.hardware import NUMA_TOPOLOGY, parse_numa_annotation
from scheduler.model import Node, NumaTopology, Resource, Taint
from scheduler.vgpu import node_vgpu_cards


def decode_node(ctx: Ctx, doc: Mapping[str, Any]) -> Node:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    status = ctx.mapping(doc.get("status"), "status")
    alloc = ctx.resources(status.get("allocatable"), "status.allocatable")
    alloc.setdefault("pods", 110)
    annotations = ctx.labels(meta.get("annotations"), "metadata.annotations")
    taints = []
    for j, t in enumerate(ctx.seq(spec.get("taints"), "spec.taints")):
        f = f"spec.taints[{j}]"
        t = ctx.mapping(t, f)
        effect = ctx.string(t.get("effect"), f"{f}.effect")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ctx.error(f"{f}.effect", f"unsupported taint effect {effect!r}")
        taints.append(Taint(ctx.string(t.get("key"), f"{f}.key"), ctx.string(t.get("value"), f"{f}.value"), effect))
    return Node(
        ctx.string(meta.get("name"), "metadata.name"),
        Resource.from_dict(alloc),
        ctx.labels(meta.get("labels"), "metadata.labels"),
        tuple(taints),
        ctx.boolean(spec.get("unschedulable"), "spec.unschedulable", False),
        node_usage(ctx, annotations.get(NODE_USAGE)),
        parse_timestamp(ctx, annotations[NODE_USAGE_TIME], f"metadata.annotations.{NODE_USAGE_TIME}")
        if annotations.get(NODE_USAGE_TIME)
        else None,
        gpu_ids(annotations.get(GPU_UNHEALTHY, ""), strict=False),
        _numa(ctx, annotations.get(NUMA_TOPOLOGY)),
        node_vgpu_cards(annotations, alloc),
    )


def _numa(ctx: Ctx, text: str | None) -> NumaTopology | None:
    if not text:
        return None
    try:
        return parse_numa_annotation(text)
    except ValueError as exc:
        raise ctx.error(f"metadata.annotations.{NUMA_TOPOLOGY}", str(exc)) from None


def gpu_ids(text: str, strict: bool) -> tuple[int, ...]:
    """A comma-separated list of GPU card ids. ``strict`` (a pod's ``volcano.sh/gpu-index``): one bad
    id makes it empty, as Volcano's ``GetGPUIndex``; else (a node's unhealthy ids) bad ids are skipped."""
    ids: list[int] = []
    for part in text.split(",") if text else ():
        try:
            ids.append(int(part))
        except ValueError:
            if strict:
                return ()
    return tuple(ids)


def node_usage(ctx: Ctx, text: str | None) -> dict[str, dict[str, float]]:
    """The ``volcanoweb.io/node-usage`` annotation: JSON ``{period: {resource: percent}}``, e.g.
    ``{"5m": {"cpu": 72.5, "memory": 40}}`` (what Volcano reads from its metrics source)."""
    if not text:
        return {}
    try:
        raw = json.loads(text)
    except ValueError:
        raise ctx.error(f"metadata.annotations.{NODE_USAGE}", "expected JSON {period: {resource: percent}}") from None
    out: dict[str, dict[str, float]] = {}
    for period, values in raw.items() if isinstance(raw, dict) else [(None, None)]:
        if not isinstance(values, dict) or not all(isinstance(v, int | float) for v in values.values()):
            raise ctx.error(f"metadata.annotations.{NODE_USAGE}", "expected JSON {period: {resource: percent}}")
        out[str(period)] = {str(k): float(v) for k, v in values.items()}
    return out
