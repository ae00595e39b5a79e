"""JSON data → snapshot: the inverse of :mod:`scheduler.replay.encoding`, checking each object's shape
(raises :class:`CycleInputError` naming the field)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    PreferredSchedulingTerm,
    Queue,
    QueueState,
    Resource,
    SubGroupPolicy,
    Taint,
    Task,
    TaskStatus,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from scheduler.policies import PodDisruptionBudget, PriorityClass, ResourceQuota
from scheduler.replay.format import DEFAULT_JOB, DEFAULT_QUEUE, DEFAULT_TASK, CycleInputError
from scheduler.snapshot import Snapshot
from scheduler.vgpu import VgpuCard, VgpuPod, VgpuRequest, VgpuUse


def _dres(value: Any, field: str) -> Resource:
    if not isinstance(value, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value.values()
    ):
        raise CycleInputError(field, "expected a mapping of resource name to integer")
    return Resource.from_dict(value)


def _dres_opt(value: Any, field: str) -> Resource | None:
    return None if value is None else _dres(value, field)


def _dreq(value: Any) -> NodeSelectorRequirement:
    key, operator, values = value
    return NodeSelectorRequirement(str(key), str(operator), tuple(str(v) for v in values))


def _dterm(value: Mapping[str, Any]) -> NodeSelectorTerm:
    return NodeSelectorTerm(tuple(_dreq(r) for r in value.get("e", ())), tuple(_dreq(r) for r in value.get("f", ())))


def _dpairs(value: Any) -> tuple[tuple[str, str], ...] | None:
    return None if value is None else tuple((str(k), str(v)) for k, v in value)


def _danti(value: Any) -> PodAffinityTerm:
    key, labels, exprs, namespaces = value
    return PodAffinityTerm(str(key), _dpairs(labels), tuple(_dreq(r) for r in exprs), tuple(str(n) for n in namespaces))


def _dweighted(value: Any) -> WeightedPodAffinityTerm:
    weight, term = value
    return WeightedPodAffinityTerm(int(weight), _danti(term))


def _dspread(value: Any) -> TopologySpreadConstraint:
    skew, key, when, labels, exprs = value
    return TopologySpreadConstraint(int(skew), str(key), str(when), _dpairs(labels), tuple(_dreq(r) for r in exprs))


def _seconds(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CycleInputError(field, f"expected a number of seconds, got {value!r}")
    return float(value)


def _amounts(value: Any, field: str) -> dict[str, int]:
    if not isinstance(value, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value.values()
    ):
        raise CycleInputError(field, "expected a mapping of resource name to integer")
    return {str(k): int(v) for k, v in value.items()}


def _node(d: Mapping[str, Any], field: str) -> Node:
    return Node(
        name=str(d["name"]),
        allocatable=_dres(d["allocatable"], f"{field}.allocatable"),
        labels=dict(d.get("labels") or {}),
        taints=tuple(Taint(str(k), str(v), str(e)) for k, v, e in d.get("taints") or ()),
        unschedulable=bool(d.get("unschedulable", False)),
        usage={str(p): {str(k): float(x) for k, x in v.items()} for p, v in (d.get("usage") or {}).items()},
        usage_time=None if d.get("usage_time") is None else _seconds(d["usage_time"], f"{field}.usage_time"),
        unhealthy_gpus=tuple(int(x) for x in d.get("unhealthy_gpus") or ()),
        numa=_numa(d.get("numa")),
        vgpu=tuple(
            VgpuCard(int(i), str(u), int(n), int(m), str(k), bool(h)) for i, u, n, m, k, h in d.get("vgpu") or ()
        ),
    )


def _vgpu_pod(d: Mapping[str, Any] | None) -> VgpuPod | None:
    if d is None:
        return None
    return VgpuPod(
        requests=tuple(VgpuRequest(int(n), int(m), int(p), int(c)) for n, m, p, c in d.get("requests") or ()),
        devices=tuple(
            tuple(VgpuUse(str(u), str(k), int(m), int(c)) for u, k, m, c in cont) for cont in d.get("devices") or ()
        ),
        mode=None if d.get("mode") is None else str(d["mode"]),
        use_types=None if d.get("use_types") is None else str(d["use_types"]),
        nouse_types=None if d.get("nouse_types") is None else str(d["nouse_types"]),
        use_uuids=str(d.get("use_uuids", "")),
        nouse_uuids=str(d.get("nouse_uuids", "")),
        spread=bool(d.get("spread", False)),
        group=str(d.get("group", "")),
    )


def _numa(d: Mapping[str, Any] | None) -> NumaTopology | None:
    if d is None:
        return None
    free = d.get("allocatable")
    return NumaTopology(
        cpu_manager_policy=str(d.get("cpu_manager_policy", "static")),
        topology_policy=str(d.get("topology_policy", "none")),
        cpus=tuple((int(c), int(n), int(s), int(k)) for c, n, s, k in d.get("cpus") or ()),
        allocatable=None if free is None else tuple(int(c) for c in free),
        reserved_cpu=int(d.get("reserved_cpu", 0)),
    )


def _task(d: Mapping[str, Any], field: str) -> Task:
    t = DEFAULT_TASK
    return Task(
        uid=str(d["uid"]),
        name=str(d["name"]),
        namespace=str(d.get("namespace", t.namespace)),
        job=str(d.get("job", t.job)),
        requests=_dres(d["requests"], f"{field}.requests") if "requests" in d else t.requests,
        status=TaskStatus(d.get("status", t.status)),
        node_name=str(d.get("node_name", t.node_name)),
        priority=d.get("priority"),
        priority_class_name=str(d.get("priority_class_name", t.priority_class_name)),
        preemption_policy=str(d.get("preemption_policy", t.preemption_policy)),
        preemptable=bool(d.get("preemptable", True)),
        role=str(d.get("role", t.role)),
        node_selector=dict(d.get("node_selector") or {}),
        required_affinity=tuple(_dterm(x) for x in d.get("required_affinity") or ()),
        preferred_affinity=tuple(
            PreferredSchedulingTerm(int(w), _dterm(term)) for w, term in d.get("preferred_affinity") or ()
        ),
        tolerations=tuple(Toleration(str(k), str(o), str(v), str(e)) for k, o, v, e in d.get("tolerations") or ()),
        scheduling_gated=bool(d.get("scheduling_gated", False)),
        nominated_node=str(d.get("nominated_node", "")),
        creation=int(d.get("creation", 0)),
        labels={str(k): str(v) for k, v in (d.get("labels") or {}).items()},
        anti_affinity=tuple(_danti(a) for a in d.get("anti_affinity") or ()),
        pod_affinity=tuple(_danti(a) for a in d.get("pod_affinity") or ()),
        preferred_pod_affinity=tuple(_dweighted(w) for w in d.get("preferred_pod_affinity") or ()),
        preferred_anti_affinity=tuple(_dweighted(w) for w in d.get("preferred_anti_affinity") or ()),
        topology_spread=tuple(_dspread(c) for c in d.get("topology_spread") or ()),
        cooldown=None if d.get("cooldown") is None else _seconds(d["cooldown"], f"{field}.cooldown"),
        scheduled_at=_seconds(d.get("scheduled_at", 0.0), f"{field}.scheduled_at"),
        revocable_zone=str(d.get("revocable_zone", "")),
        scoring_type=str(d.get("scoring_type", "")),
        scoring_weights=str(d.get("scoring_weights", "")),
        gpu_index=tuple(int(x) for x in d.get("gpu_index") or ()),
        numa_policy=str(d.get("numa_policy", "")),
        guaranteed_cpus=tuple(int(x) for x in d.get("guaranteed_cpus") or ()),
        limits=_dres(d["limits"], f"{field}.limits") if "limits" in d else t.limits,
        vgpu=_vgpu_pod(d.get("vgpu")),
    )


def _job(d: Mapping[str, Any], field: str) -> Job:
    j = DEFAULT_JOB
    return Job(
        uid=str(d["uid"]),
        name=str(d["name"]),
        namespace=str(d.get("namespace", j.namespace)),
        queue=str(d.get("queue", j.queue)),
        min_member=int(d.get("min_member", j.min_member)),
        min_task_member={str(k): int(v) for k, v in (d.get("min_task_member") or {}).items()},
        min_resources=_dres_opt(d.get("min_resources"), f"{field}.min_resources"),
        priority=d.get("priority"),
        priority_class_name=str(d.get("priority_class_name", j.priority_class_name)),
        phase=JobPhase(d.get("phase", j.phase)),
        preemptable=None if d.get("preemptable") is None else bool(d["preemptable"]),
        creation=int(d.get("creation", 0)),
        created_at=_seconds(d.get("created_at", j.created_at), f"{field}.created_at"),
        sla_waiting_time=(
            None if d.get("sla_waiting_time") is None else _seconds(d["sla_waiting_time"], f"{field}.sla_waiting_time")
        ),
        network_topology=_dtopology(d.get("network_topology")),
        sub_group_policies=tuple(_dsub_group(x) for x in d.get("sub_group_policies") or ()),
        jdb_min_available=str(d.get("jdb_min_available", "")),
        jdb_max_unavailable=str(d.get("jdb_max_unavailable", "")),
        task_affinity=None if d.get("task_affinity") is None else str(d["task_affinity"]),
        task_anti_affinity=None if d.get("task_anti_affinity") is None else str(d["task_anti_affinity"]),
        task_order=None if d.get("task_order") is None else str(d["task_order"]),
        pod_templates=tuple(
            (_task(t, f"{field}.pod_templates[{i}]"), int(n)) for i, (t, n) in enumerate(d.get("pod_templates") or ())
        ),
    )


def _dtopology(value: Any) -> NetworkTopology | None:
    if value is None:
        return None
    allowed = value.get("highest_tier_allowed")
    return NetworkTopology(
        str(value.get("mode", "hard")),
        None if allowed is None else int(allowed),
        str(value.get("highest_tier_name", "")),
    )


def _dsub_group(d: Mapping[str, Any]) -> SubGroupPolicy:
    return SubGroupPolicy(
        name=str(d.get("name", "")),
        size=None if d.get("size") is None else int(d["size"]),
        min_groups=None if d.get("min_groups") is None else int(d["min_groups"]),
        match_label_keys=tuple(str(k) for k in d.get("match_label_keys") or ()),
        selector=_dpairs(d.get("selector")),
        selector_expressions=tuple(_dreq(r) for r in d.get("selector_expressions") or ()),
        network_topology=_dtopology(d.get("network_topology")),
    )


def _hyper_node(d: Mapping[str, Any], field: str) -> HyperNode:
    return HyperNode(
        name=str(d["name"]),
        tier=int(d["tier"]),
        tier_name=str(d.get("tier_name", "")),
        members=tuple(
            HyperNodeMember(
                type=str(m["type"]),
                exact=str(m.get("exact", "")),
                regex=str(m.get("regex", "")),
                match_labels=_dpairs(m.get("match_labels")),
                match_expressions=tuple(_dreq(r) for r in m.get("match_expressions") or ()),
            )
            for m in d.get("members") or ()
        ),
    )


def _queue(d: Mapping[str, Any], field: str) -> Queue:
    q = DEFAULT_QUEUE
    return Queue(
        name=str(d["name"]),
        weight=int(d.get("weight", q.weight)),
        capability=_dres_opt(d.get("capability"), f"{field}.capability"),
        guarantee=_dres_opt(d.get("guarantee"), f"{field}.guarantee"),
        deserved=_dres_opt(d.get("deserved"), f"{field}.deserved"),
        parent=str(d.get("parent", q.parent)),
        reclaimable=bool(d.get("reclaimable", q.reclaimable)),
        state=QueueState(d.get("state", q.state)),
        priority=int(d.get("priority", q.priority)),
        hierarchy=str(d.get("hierarchy", q.hierarchy)),
        hierarchy_weights=str(d.get("hierarchy_weights", q.hierarchy_weights)),
        creation=int(d.get("creation", 0)),
        uid=str(d.get("uid", "")),
        node_group_affinity=_dgroups(d.get("node_group_affinity")),
        node_group_resource_limits=str(d.get("node_group_resource_limits", "")),
    )


def _dgroups(value: Any) -> NodeGroupAffinity | None:
    if value is None:
        return None
    required, preferred, anti_required, anti_preferred = (tuple(str(g) for g in groups) for groups in value)
    return NodeGroupAffinity(required, preferred, anti_required, anti_preferred)


def _priority_class(d: Mapping[str, Any], field: str) -> PriorityClass:
    return PriorityClass(
        name=str(d["name"]),
        value=int(d["value"]),
        global_default=bool(d.get("global_default", False)),
        preemption_policy=str(d.get("preemption_policy", "PreemptLowerPriority")),
    )


def _resource_quota(d: Mapping[str, Any], field: str) -> ResourceQuota:
    return ResourceQuota(
        name=str(d["name"]),
        namespace=str(d["namespace"]),
        hard=_amounts(d.get("hard") or {}, f"{field}.hard"),
        used=_amounts(d.get("used") or {}, f"{field}.used"),
    )


def _pod_disruption_budget(d: Mapping[str, Any], field: str) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        name=str(d["name"]),
        namespace=str(d["namespace"]),
        match_labels=_dpairs(d.get("match_labels")),
        match_expressions=tuple(_dreq(r) for r in d.get("match_expressions") or ()),
        disruptions_allowed=int(d.get("disruptions_allowed", 0)),
        disrupted_pods=frozenset(str(n) for n in d.get("disrupted_pods") or ()),
    )


_DECODERS: dict[str, Any] = {
    "nodes": _node,
    "queues": _queue,
    "jobs": _job,
    "tasks": _task,
    "priority_classes": _priority_class,
    "resource_quotas": _resource_quota,
    "pod_disruption_budgets": _pod_disruption_budget,
    "hyper_nodes": _hyper_node,
}


def decode_snapshot(data: Any) -> Snapshot:
    """Return the snapshot encoded by :class:`SnapshotEncoder` (raises :class:`CycleInputError`)."""
    if not isinstance(data, Mapping):
        raise CycleInputError("snapshot", "expected a mapping")
    parts: dict[str, list[Any]] = {}
    for key, decode in _DECODERS.items():
        items = data.get(key, [])
        if not isinstance(items, list):
            raise CycleInputError(f"snapshot.{key}", "expected a list")
        decoded = []
        for i, item in enumerate(items):
            field = f"snapshot.{key}[{i}]"
            if not isinstance(item, Mapping):
                raise CycleInputError(field, "expected a mapping")
            try:
                decoded.append(decode(item, field))
            except CycleInputError:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise CycleInputError(field, f"invalid value ({type(exc).__name__}: {exc})") from None
        parts[key] = decoded
    now = data.get("now")
    return Snapshot.of(
        parts["nodes"],
        parts["queues"],
        parts["jobs"],
        parts["tasks"],
        parts["priority_classes"],
        now=None if now is None else _seconds(now, "snapshot.now"),
        resource_quotas=parts["resource_quotas"],
        pod_disruption_budgets=parts["pod_disruption_budgets"],
        hyper_nodes=parts["hyper_nodes"],
    )
