"""Kubernetes / Volcano manifests (Node, Pod, PodGroup, Queue, PriorityClass, ResourceQuota) → Snapshot."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from scheduler.hardware import NUMA_TOPOLOGY, guaranteed_cpus, parse_numa_annotation
from scheduler.model import (
    HyperNode,
    HyperNodeMember,
    Job,
    JobPhase,
    NetworkTopology,
    Node,
    NodeGroupAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NumaTopology,
    PodAffinityTerm,
    PodDisruptionBudget,
    PreferredSchedulingTerm,
    PriorityClass,
    Queue,
    QueueState,
    Resource,
    ResourceQuota,
    Taint,
    Task,
    TaskStatus,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from scheduler.quantity import SLA_ANNOTATION, QuantityError, parse_duration, parse_resource
from scheduler.snapshot import Snapshot

__all__ = [
    "GPU_INDEX",
    "GROUP_ANNOTATION",
    "HIERARCHY",
    "HIERARCHY_WEIGHTS",
    "JDB_MAX_UNAVAILABLE",
    "JDB_MIN_AVAILABLE",
    "NODE_USAGE_TIME",
    "NUMA_POLICY",
    "POD_STATUS",
    "PREEMPTABLE",
    "REVOCABLE_ZONE",
    "SCORING_TYPE",
    "SCORING_WEIGHTS",
    "TASK_AFFINITY",
    "TASK_ANTI_AFFINITY",
    "TASK_ORDER",
    "TASK_PRIORITY",
    "TASK_SPEC",
    "VOLCANO_SCHEDULERS",
    "ManifestError",
    "PodPlacement",
    "cooldown_time",
    "flag",
    "gpu_ids",
    "hyper_node",
    "load_manifests",
    "network_topology_of",
    "pod_placement",
    "sla_waiting_time",
    "snapshot_from_manifests",
    "timestamp",
]

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
ALT_GROUP_ANNOTATION = "scheduling.volcano.sh/group-name"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
PREEMPTABLE = "volcano.sh/preemptable"
TASK_SPEC = "volcano.sh/task-spec"
TASK_PRIORITY = "volcano.sh/task-priority"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
NODE_USAGE = "volcanoweb.io/node-usage"
NODE_USAGE_TIME = "volcanoweb.io/node-usage-time"
GPU_INDEX = "volcano.sh/gpu-index"
GPU_UNHEALTHY = "volcano.sh/gpu-unhealthy-ids"
NUMA_POLICY = "volcano.sh/numa-topology-policy"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
SCORING_TYPE = "volcano.sh/resource-strategy-scoring-type"
SCORING_WEIGHTS = "volcano.sh/resource-strategy-weight"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
TASK_AFFINITY = "volcano.sh/task-topology-affinity"
TASK_ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
VOLCANO_SCHEDULERS = frozenset({"volcano"})
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"

_KINDS = {
    ("v1", "Node"),
    ("v1", "Pod"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("v1", "ResourceQuota"),
    ("policy/v1", "PodDisruptionBudget"),
    ("topology.volcano.sh/v1alpha1", "HyperNode"),
}


class ManifestError(ValueError):
    """A manifest cannot be turned into scheduler input; names document, object and field."""

    def __init__(self, document: int, obj: str, field: str, message: str) -> None:
        self.document = document
        self.object = obj
        self.field = field
        self.detail = message
        where = f"document {document}"
        if obj:
            where += f" ({obj})"
        if field:
            where += f", field {field}"
        super().__init__(f"{where}: {message}")


class _Ctx:
    def __init__(self, index: int, obj: str) -> None:
        self.index = index
        self.obj = obj

    def error(self, field: str, message: str) -> ManifestError:
        return ManifestError(self.index, self.obj, field, message)

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(field, f"expected a mapping, got {type(value).__name__}")
        return value

    def seq(self, value: Any, field: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(field, f"expected a list, got {type(value).__name__}")
        return value

    def string(self, value: Any, field: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {value!r}")
        return value

    def integer(self, value: Any, field: str, default: int) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(field, f"expected an integer, got {value!r}")
        return value

    def boolean(self, value: Any, field: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(field, f"expected a boolean, got {value!r}")
        return value

    def resources(self, value: Any, field: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, q in self.mapping(value, field).items():
            try:
                out[str(name)] = parse_resource(str(name), q)
            except QuantityError as exc:
                raise self.error(f"{field}.{name}", str(exc)) from None
        return out

    def labels(self, value: Any, field: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v in self.mapping(value, field).items():
            if not isinstance(v, str):
                raise self.error(f"{field}.{k}", f"expected a string value, got {v!r}")
            out[str(k)] = v
        return out


def load_manifests(text: str) -> list[tuple[int, Mapping[str, Any]]]:
    """Return ``(document index, object)`` for every object in multi-document YAML/JSON
    (``kind: List`` documents are expanded; empty documents skipped)."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ManifestError(0, "", "", f"invalid YAML{line}: {exc}") from None
    out: list[tuple[int, Mapping[str, Any]]] = []
    for i, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise ManifestError(i, "", "", "expected a Kubernetes object (a mapping)")
        if doc.get("kind") == "List":
            items = doc.get("items")
            if not isinstance(items, list):
                raise ManifestError(i, "List", "items", "expected a list")
            for item in items:
                if not isinstance(item, Mapping):
                    raise ManifestError(i, "List", "items", "expected objects")
                out.append((i, item))
        else:
            out.append((i, doc))
    return out


def _requirements(ctx: _Ctx, value: Any, field: str) -> tuple[NodeSelectorRequirement, ...]:
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


def _term(ctx: _Ctx, value: Any, field: str) -> NodeSelectorTerm:
    m = ctx.mapping(value, field)
    return NodeSelectorTerm(
        _requirements(ctx, m.get("matchExpressions"), f"{field}.matchExpressions"),
        _requirements(ctx, m.get("matchFields"), f"{field}.matchFields"),
    )


def _pod_term(ctx: _Ctx, raw: Any, f: str) -> PodAffinityTerm:
    term = ctx.mapping(raw, f)
    key = ctx.string(term.get("topologyKey"), f"{f}.topologyKey")
    if not key:
        raise ctx.error(f"{f}.topologyKey", "required")
    labels, exprs = _selector(ctx, term.get("labelSelector"), f"{f}.labelSelector")
    namespaces = tuple(ctx.string(n, f"{f}.namespaces") for n in ctx.seq(term.get("namespaces"), f"{f}.namespaces"))
    return PodAffinityTerm(key, labels, exprs, namespaces)


def _pod_terms(
    ctx: _Ctx, spec: Mapping[str, Any], kind: str
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


def _selector(
    ctx: _Ctx, selector: Any, field: str
) -> tuple[tuple[tuple[str, str], ...] | None, tuple[NodeSelectorRequirement, ...]]:
    if selector is None:
        return None, ()
    sel = ctx.mapping(selector, field)
    labels = tuple(sorted(ctx.labels(sel.get("matchLabels"), f"{field}.matchLabels").items()))
    exprs = _requirements(ctx, sel.get("matchExpressions"), f"{field}.matchExpressions")
    if any(r.operator in ("Gt", "Lt") for r in exprs):
        raise ctx.error(f"{field}.matchExpressions", "operators are In, NotIn, Exists, DoesNotExist")
    return labels, exprs


def _spread(ctx: _Ctx, spec: Mapping[str, Any]) -> tuple[TopologySpreadConstraint, ...]:
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
        labels, exprs = _selector(ctx, c.get("labelSelector"), f"{f}.labelSelector")
        out.append(TopologySpreadConstraint(skew, key, when, labels, exprs))
    return tuple(out)


def _node(ctx: _Ctx, doc: Mapping[str, Any]) -> Node:
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
        _timestamp(ctx, annotations[NODE_USAGE_TIME], f"metadata.annotations.{NODE_USAGE_TIME}")
        if annotations.get(NODE_USAGE_TIME)
        else None,
        gpu_ids(annotations.get(GPU_UNHEALTHY, ""), strict=False),
        _numa(ctx, annotations.get(NUMA_TOPOLOGY)),
    )


def _numa(ctx: _Ctx, text: str | None) -> NumaTopology | None:
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


def node_usage(ctx: _Ctx, text: str | None) -> dict[str, dict[str, float]]:
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


def _pod_requests(ctx: _Ctx, spec: Mapping[str, Any]) -> Resource:
    total: dict[str, int] = {}
    for j, c in enumerate(ctx.seq(spec.get("containers"), "spec.containers")):
        f = f"spec.containers[{j}]"
        c = ctx.mapping(c, f)
        res = ctx.mapping(c.get("resources"), f"{f}.resources")
        for k, v in ctx.resources(res.get("requests"), f"{f}.resources.requests").items():
            total[k] = total.get(k, 0) + v
    sidecars: dict[str, int] = {}
    for j, c in enumerate(ctx.seq(spec.get("initContainers"), "spec.initContainers")):
        f = f"spec.initContainers[{j}]"
        c = ctx.mapping(c, f)
        res = ctx.mapping(c.get("resources"), f"{f}.resources")
        req = ctx.resources(res.get("requests"), f"{f}.resources.requests")
        if c.get("restartPolicy") == "Always":
            for k, v in req.items():
                sidecars[k] = sidecars.get(k, 0) + v
            continue
        for k, v in req.items():
            total[k] = max(total.get(k, 0), v + sidecars.get(k, 0))
    for k, v in sidecars.items():
        total[k] = total.get(k, 0) + v
    for k, v in ctx.resources(spec.get("overhead"), "spec.overhead").items():
        total[k] = total.get(k, 0) + v
    total["pods"] = 1
    return Resource.from_dict(total)


def _affinity(
    ctx: _Ctx, spec: Mapping[str, Any]
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
    required = tuple(_term(ctx, t, f"{rf}[{j}]") for j, t in enumerate(ctx.seq(req.get("nodeSelectorTerms"), rf)))
    pf = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for j, p in enumerate(ctx.seq(aff.get("preferredDuringSchedulingIgnoredDuringExecution"), pf)):
        p = ctx.mapping(p, f"{pf}[{j}]")
        preferred.append(
            PreferredSchedulingTerm(
                ctx.integer(p.get("weight"), f"{pf}[{j}].weight", 1),
                _term(ctx, p.get("preference"), f"{pf}[{j}].preference"),
            )
        )
    return required, tuple(preferred)


def _tolerations(ctx: _Ctx, spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
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


def _placement(ctx: _Ctx, spec: Mapping[str, Any]) -> PodPlacement:
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
    return _placement(_Ctx(0, obj), spec)


def _sla(ctx: _Ctx, annotations: Mapping[str, str]) -> float | None:
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
    return _sla(_Ctx(0, obj), annotations)


def flag(value: object) -> bool | None:
    """Return a ``volcano.sh/preemptable``-style flag: None when unset, else whether it reads as true."""
    if value is None:
        return None
    return str(value).strip().lower() in ("true", "1", "t")


POD_STATUS = {
    "Pending": TaskStatus.PENDING,
    "Running": TaskStatus.RUNNING,
    "Succeeded": TaskStatus.SUCCEEDED,
    "Failed": TaskStatus.FAILED,
    "Unknown": TaskStatus.UNKNOWN,
}


def _pod(ctx: _Ctx, doc: Mapping[str, Any], creation: int) -> tuple[Task, str, str]:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    status = ctx.mapping(doc.get("status"), "status")
    name = ctx.string(meta.get("name"), "metadata.name")
    ns = ctx.string(meta.get("namespace"), "metadata.namespace", "default")
    labels = ctx.labels(meta.get("labels"), "metadata.labels")
    ann = ctx.labels(meta.get("annotations"), "metadata.annotations")
    group = ann.get(GROUP_ANNOTATION) or ann.get(ALT_GROUP_ANNOTATION) or ""
    phase = ctx.string(status.get("phase"), "status.phase", "Pending")
    if phase not in POD_STATUS:
        raise ctx.error("status.phase", f"unknown pod phase {phase!r}")
    node = ctx.string(spec.get("nodeName"), "spec.nodeName")
    st = POD_STATUS[phase]
    if st == TaskStatus.PENDING and node:
        st = TaskStatus.BOUND
    if meta.get("deletionTimestamp") and st in (TaskStatus.PENDING, TaskStatus.BOUND, TaskStatus.RUNNING):
        st = TaskStatus.RELEASING
    pre = flag(ann.get(PREEMPTABLE))
    if pre is None:
        pre = flag(labels.get(PREEMPTABLE))
    priority: int | None = (
        ctx.integer(spec.get("priority"), "spec.priority", 0) if spec.get("priority") is not None else None
    )
    if TASK_PRIORITY in ann:
        try:
            priority = int(ann[TASK_PRIORITY])
        except ValueError:
            raise ctx.error(f"metadata.annotations.{TASK_PRIORITY}", "expected an integer") from None
    placement = _placement(ctx, spec)
    scheduler_name = ctx.string(spec.get("schedulerName"), "spec.schedulerName", "volcano")
    policy = ctx.string(spec.get("preemptionPolicy"), "spec.preemptionPolicy", "PreemptLowerPriority")
    task = Task(
        uid=ctx.string(meta.get("uid"), "metadata.uid", f"{ns}/{name}"),
        name=name,
        namespace=ns,
        job=f"{ns}/{group}" if group else "",
        requests=_pod_requests(ctx, spec),
        status=st,
        node_name=node,
        priority=priority,
        priority_class_name=ctx.string(spec.get("priorityClassName"), "spec.priorityClassName"),
        preemption_policy=policy,
        preemptable=pre if pre is not None else True,
        role=ann.get(TASK_SPEC) or labels.get(TASK_SPEC, ""),
        node_selector=ctx.labels(spec.get("nodeSelector"), "spec.nodeSelector"),
        required_affinity=placement.required_affinity,
        preferred_affinity=placement.preferred_affinity,
        tolerations=placement.tolerations,
        scheduling_gated=bool(ctx.seq(spec.get("schedulingGates"), "spec.schedulingGates")),
        nominated_node=ctx.string(status.get("nominatedNodeName"), "status.nominatedNodeName"),
        creation=creation,
        labels=labels,
        anti_affinity=placement.anti_affinity,
        pod_affinity=placement.pod_affinity,
        preferred_pod_affinity=placement.preferred_pod_affinity,
        preferred_anti_affinity=placement.preferred_anti_affinity,
        topology_spread=placement.topology_spread,
        cooldown=cooldown_time(labels, ann),
        scheduled_at=scheduled_at(ctx, status),
        revocable_zone=ann.get(REVOCABLE_ZONE, ""),
        scoring_type=ann.get(SCORING_TYPE, ""),
        scoring_weights=ann.get(SCORING_WEIGHTS, ""),
        gpu_index=gpu_ids(ann.get(GPU_INDEX, ""), strict=True),
        numa_policy=ann.get(NUMA_POLICY, ""),
        guaranteed_cpus=guaranteed_cpus(
            [c for c in ctx.seq(spec.get("containers"), "spec.containers") if isinstance(c, Mapping)],
            [c for c in ctx.seq(spec.get("initContainers"), "spec.initContainers") if isinstance(c, Mapping)],
        ),
    )
    return task, scheduler_name, ann.get(QUEUE_ANNOTATION, "")


def cooldown_time(labels: Mapping[str, str], annotations: Mapping[str, str]) -> float | None:
    """A pod's ``volcano.sh/cooldown-time`` (label, else annotation) in seconds; None when unset or
    not a Go duration (Volcano logs it and gives no protection)."""
    value = labels.get(COOLDOWN_TIME)
    if value is None:
        value = annotations.get(COOLDOWN_TIME)
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError:
        return None


def scheduled_at(ctx: _Ctx, status: Mapping[str, Any]) -> float:
    """The ``lastTransitionTime`` of a pod's ``PodScheduled`` condition that is ``True`` (0: none)."""
    for j, cond in enumerate(ctx.seq(status.get("conditions"), "status.conditions")):
        c = ctx.mapping(cond, f"status.conditions[{j}]")
        if c.get("type") == "PodScheduled" and str(c.get("status")) == "True":
            return _timestamp(ctx, c.get("lastTransitionTime"), f"status.conditions[{j}].lastTransitionTime")
    return 0.0


def _podgroup(ctx: _Ctx, doc: Mapping[str, Any], creation: int) -> Job:
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
    pre = flag(ann.get(PREEMPTABLE))
    if pre is None:
        pre = flag(labels.get(PREEMPTABLE))
    sla = _sla(ctx, ann)
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
        created_at=_timestamp(ctx, meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        sla_waiting_time=sla,
    )


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$")


def network_topology(ctx: _Ctx, value: Any, field: str) -> NetworkTopology | None:
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


def _hyper_node(ctx: _Ctx, doc: Mapping[str, Any]) -> HyperNode:
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
            labels, exprs = _selector(ctx, sel["labelMatch"], f"{f}.selector.labelMatch")
            members.append(HyperNodeMember(kind, match_labels=labels or (), match_expressions=exprs))
    return HyperNode(
        name=ctx.string(meta.get("name"), "metadata.name"),
        tier=tier,
        members=tuple(members),
        tier_name=ctx.string(spec.get("tierName"), "spec.tierName"),
    )


def timestamp(value: Any) -> float:
    """An RFC 3339 time in seconds since the epoch (raises ManifestError, a ValueError)."""
    return _timestamp(_Ctx(1, ""), value, "time")


def hyper_node(doc: Mapping[str, Any], obj: str = "") -> HyperNode:
    """Return the HyperNode of a ``topology.volcano.sh/v1alpha1`` manifest (raises ManifestError)."""
    return _hyper_node(_Ctx(1, obj), doc)


def network_topology_of(value: Any, obj: str = "") -> NetworkTopology | None:
    """Return a ``spec.networkTopology`` value as the model's (raises ManifestError)."""
    return network_topology(_Ctx(1, obj), value, "spec.networkTopology")


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _timestamp(ctx: _Ctx, value: Any, field: str) -> float:
    """Return an RFC 3339 time (YAML may have parsed it already) in epoch seconds; 0 if absent.

    A time without offset is UTC. Parsed by hand: the core imports no clock module."""
    if value is None or value == "":
        return 0.0
    text = value.isoformat() if hasattr(value, "isoformat") else value
    m = _RFC3339.match(text) if isinstance(text, str) else None
    if m is None:
        raise ctx.error(field, f"expected an RFC 3339 time such as 2024-01-01T00:00:00Z, got {value!r}")
    y, mo, d, h, mi, sec = (int(m.group(i)) for i in range(1, 7))
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and sec <= 60):
        raise ctx.error(field, f"invalid time {value!r}")
    seconds = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec + float(m.group(7) or 0)
    if m.group(9):
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        seconds -= offset if m.group(9) == "+" else -offset
    return float(seconds)


def _queue(ctx: _Ctx, doc: Mapping[str, Any], creation: int) -> Queue:
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


def _node_group_affinity(ctx: _Ctx, value: Any) -> NodeGroupAffinity | None:
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


def _priority_class(ctx: _Ctx, doc: Mapping[str, Any]) -> PriorityClass:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    if doc.get("value") is None:
        raise ctx.error("value", "required")
    return PriorityClass(
        ctx.string(meta.get("name"), "metadata.name"),
        ctx.integer(doc.get("value"), "value", 0),
        ctx.boolean(doc.get("globalDefault"), "globalDefault", False),
        ctx.string(doc.get("preemptionPolicy"), "preemptionPolicy", "PreemptLowerPriority"),
    )


def _quota_amounts(ctx: _Ctx, value: Any, field: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, amount in ctx.mapping(value, field).items():
        base = str(name).removeprefix("requests.").removeprefix("limits.")
        try:
            out[str(name)] = parse_resource(base, amount)
        except QuantityError as exc:
            raise ctx.error(f"{field}.{name}", str(exc)) from None
    return out


def _resource_quota(ctx: _Ctx, doc: Mapping[str, Any]) -> ResourceQuota:
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


def _pdb(ctx: _Ctx, doc: Mapping[str, Any]) -> PodDisruptionBudget:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    status = ctx.mapping(doc.get("status"), "status")
    labels, exprs = _selector(ctx, spec.get("selector"), "spec.selector")
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


def _describe(doc: Mapping[str, Any]) -> str:
    kind = doc.get("kind", "?")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    name = meta.get("name", "?")
    ns = meta.get("namespace")
    if kind in ("Pod", "PodGroup", "ResourceQuota", "PodDisruptionBudget"):
        return f"{kind} {ns or 'default'}/{name}"
    return f"{kind} {name}"


def _creation_ranks(items: list[tuple[int, Mapping[str, Any]]]) -> list[int]:
    """The creation order of each object: by ``metadata.creationTimestamp``, then uid (its
    ``metadata.uid``, else ``namespace/name`` as the parsers default it), as Kubernetes and Volcano
    order; an object without a timestamp comes after every one with one (it is created now), in
    file order."""
    keys: list[tuple[Any, ...]] = []
    for position, (index, doc) in enumerate(items):
        meta = doc.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        stamp = meta.get("creationTimestamp")
        if stamp is None or stamp == "":
            keys.append((1, position))
            continue
        seconds = _timestamp(_Ctx(index, _describe(doc)), stamp, "metadata.creationTimestamp")
        name = str(meta.get("name", ""))
        default = (
            name
            if doc.get("kind") in ("Queue", "Node", "PriorityClass", "HyperNode")
            else f"{meta.get('namespace') or 'default'}/{name}"
        )
        keys.append((0, seconds, str(meta.get("uid") or default), position))
    ranks = [0] * len(items)
    for rank, position in enumerate(sorted(range(len(items)), key=lambda i: keys[i])):
        ranks[position] = rank
    return ranks


def snapshot_from_manifests(objects: Iterable[tuple[int, Mapping[str, Any]]]) -> Snapshot:
    """Return the snapshot described by ``objects`` (from :func:`load_manifests`).

    Missing ``default`` and ``root`` queues are added as Volcano does at start-up. A Volcano
    pod without a group annotation gets its own PodGroup ``podgroup-<uid>`` (minMember 1,
    minResources its request), as Volcano's pg-controller does. Pods of other schedulers only
    count toward node usage. Raises :class:`ManifestError`.
    """
    nodes: list[Node] = []
    tasks: list[Task] = []
    jobs: list[Job] = []
    queues: list[Queue] = []
    classes: list[PriorityClass] = []
    quotas: list[ResourceQuota] = []
    pdbs: list[PodDisruptionBudget] = []
    hyper_nodes: list[HyperNode] = []
    seen: dict[tuple[str, str], int] = {}
    items = list(objects)
    ranks = _creation_ranks(items)
    for position, (index, doc) in enumerate(items):
        order = ranks[position]
        api, kind = doc.get("apiVersion"), doc.get("kind")
        ctx = _Ctx(index, _describe(doc))
        if (api, kind) not in _KINDS:
            raise ctx.error(
                "kind" if kind not in {k for _, k in _KINDS} else "apiVersion",
                f"unsupported object {api}/{kind}; expected one of " + ", ".join(f"{a} {k}" for a, k in sorted(_KINDS)),
            )
        meta = ctx.mapping(doc.get("metadata"), "metadata")
        if not isinstance(meta.get("name"), str) or not meta.get("name"):
            raise ctx.error("metadata.name", "required")
        ident = (str(kind), ctx.obj)
        if ident in seen:
            raise ctx.error("metadata.name", f"duplicate of document {seen[ident]}")
        seen[ident] = index
        if kind == "Node":
            nodes.append(_node(ctx, doc))
        elif kind == "Pod":
            task, scheduler_name, queue = _pod(ctx, doc, order)
            if scheduler_name not in VOLCANO_SCHEDULERS:
                from dataclasses import replace

                task = replace(task, job="")
            elif not task.job:
                from dataclasses import replace

                pg = f"podgroup-{task.uid.replace('/', '-')}"
                jobs.append(
                    Job(
                        uid=f"{task.namespace}/{pg}",
                        name=pg,
                        namespace=task.namespace,
                        queue=queue or "default",
                        min_member=1,
                        min_resources=task.requests,
                        priority_class_name=task.priority_class_name,
                        creation=order,
                    )
                )
                task = replace(task, job=f"{task.namespace}/{pg}")
            tasks.append(task)
        elif kind == "PodGroup":
            jobs.append(_podgroup(ctx, doc, order))
        elif kind == "Queue":
            queues.append(_queue(ctx, doc, order))
        elif kind == "ResourceQuota":
            quotas.append(_resource_quota(ctx, doc))
        elif kind == "PodDisruptionBudget":
            pdbs.append(_pdb(ctx, doc))
        elif kind == "HyperNode":
            hyper_nodes.append(_hyper_node(ctx, doc))
        else:
            classes.append(_priority_class(ctx, doc))
    names = {q.name for q in queues}
    if "root" not in names:
        queues.append(Queue("root", reclaimable=False, creation=-2))
    if "default" not in names:
        queues.append(Queue("default", creation=-1))
    return Snapshot.of(
        nodes,
        queues,
        jobs,
        tasks,
        classes,
        resource_quotas=quotas,
        pod_disruption_budgets=pdbs,
        hyper_nodes=hyper_nodes,
    )
