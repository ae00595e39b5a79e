"""Pod objects: the task, its status, requests, priority and the pod-level annotations Volcano reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.decode.annotations import (
    ALT_GROUP_ANNOTATION,
    COOLDOWN_TIME,
    GPU_INDEX,
    GROUP_ANNOTATION,
    NUMA_POLICY,
    QUEUE_ANNOTATION,
    REVOCABLE_ZONE,
    SCORING_TYPE,
    SCORING_WEIGHTS,
    TASK_PRIORITY,
    TASK_SPEC,
    preemptable_flag,
)
from scheduler.decode.common import Ctx, parse_timestamp
from scheduler.decode.nodes import gpu_ids
from scheduler.decode.placement import placement_of
from scheduler.hardware import guaranteed_cpus, pod_limits
from scheduler.model import EMPTY, Resource, Task, TaskStatus
from scheduler.quantity import parse_duration
from scheduler.vgpu import VgpuPod, vgpu_pod

POD_STATUS = {
    "Pending": TaskStatus.PENDING,
    "Running": TaskStatus.RUNNING,
    "Succeeded": TaskStatus.SUCCEEDED,
    "Failed": TaskStatus.FAILED,
    "Unknown": TaskStatus.UNKNOWN,
}


def _pod_requests(ctx: Ctx, spec: Mapping[str, Any]) -> Resource:
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


def decode_pod(ctx: Ctx, doc: Mapping[str, Any], creation: int) -> tuple[Task, str, str]:
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    spec = ctx.mapping(doc.get("spec"), "spec")
    status = ctx.mapping(doc.get("status"), "status")
    name = ctx.string(meta.get("name"), "metadata.name")
    ns = ctx.string(meta.get("namespace"), "metadata.namespace", "default")
    labels = ctx.labels(meta.get("labels"), "metadata.labels")
    ann = ctx.labels(meta.get("annotations"), "metadata.annotations")
    group = ann.get(GROUP_ANNOTATION) or ann.get(ALT_GROUP_ANNOTATION) or ""
    st, node = _pod_status(ctx, meta, spec, status)
    pre = preemptable_flag(labels, ann)
    priority = _pod_priority(ctx, spec, ann)
    placement = placement_of(ctx, spec)
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
        guaranteed_cpus=_guaranteed_cpus(ctx, spec),
        limits=_pod_limits(ctx, spec),
        vgpu=_vgpu(ctx, spec, ns, ann),
    )
    return task, scheduler_name, ann.get(QUEUE_ANNOTATION, "")


def _pod_status(
    ctx: Ctx, meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[TaskStatus, str]:
    """The task status of a pod's phase (Bound once it names a node, Releasing once it is being deleted)
    and the node it names."""
    phase = ctx.string(status.get("phase"), "status.phase", "Pending")
    if phase not in POD_STATUS:
        raise ctx.error("status.phase", f"unknown pod phase {phase!r}")
    node = ctx.string(spec.get("nodeName"), "spec.nodeName")
    st = POD_STATUS[phase]
    if st == TaskStatus.PENDING and node:
        st = TaskStatus.BOUND
    if meta.get("deletionTimestamp") and st in (TaskStatus.PENDING, TaskStatus.BOUND, TaskStatus.RUNNING):
        st = TaskStatus.RELEASING
    return st, node


def _pod_priority(ctx: Ctx, spec: Mapping[str, Any], ann: Mapping[str, str]) -> int | None:
    """``spec.priority``, overridden by the ``volcano.sh/task-priority`` annotation (None: neither set)."""
    priority: int | None = (
        ctx.integer(spec.get("priority"), "spec.priority", 0) if spec.get("priority") is not None else None
    )
    if TASK_PRIORITY in ann:
        try:
            priority = int(ann[TASK_PRIORITY])
        except ValueError:
            raise ctx.error(f"metadata.annotations.{TASK_PRIORITY}", "expected an integer") from None
    return priority


def _guaranteed_cpus(ctx: Ctx, spec: Mapping[str, Any]) -> tuple[int, ...]:
    return guaranteed_cpus(
        [c for c in ctx.seq(spec.get("containers"), "spec.containers") if isinstance(c, Mapping)],
        [c for c in ctx.seq(spec.get("initContainers"), "spec.initContainers") if isinstance(c, Mapping)],
    )


def _pod_limits(ctx: Ctx, spec: Mapping[str, Any]) -> Resource:
    """The pod's limits (``scheduler.hardware.pod_limits``), each quantity checked where it is written."""
    kinds = {"containers": ctx.seq(spec.get("containers"), "spec.containers")}
    kinds["initContainers"] = ctx.seq(spec.get("initContainers"), "spec.initContainers")
    for kind, containers in kinds.items():
        for j, c in enumerate(containers):
            f = f"spec.{kind}[{j}]"
            res = ctx.mapping(ctx.mapping(c, f).get("resources"), f"{f}.resources")
            ctx.resources(res.get("limits"), f"{f}.resources.limits")
    overhead = ctx.mapping(spec.get("overhead"), "spec.overhead")
    limits = pod_limits(kinds["containers"], kinds["initContainers"], overhead)
    return Resource.from_dict(limits) if limits else EMPTY


def _vgpu(ctx: Ctx, spec: Mapping[str, Any], namespace: str, ann: Mapping[str, str]) -> VgpuPod | None:
    """What the vGPU device reads of the pod (``scheduler.vgpu.vgpu_pod``)."""
    containers = []
    for j, c in enumerate(ctx.seq(spec.get("containers"), "spec.containers")):
        f = f"spec.containers[{j}].resources"
        res = ctx.mapping(ctx.mapping(c, f"spec.containers[{j}]").get("resources"), f)
        limits = ctx.resources(res.get("limits"), f"{f}.limits")
        containers.append({"limits": limits, "requests": ctx.resources(res.get("requests"), f"{f}.requests")})
    return vgpu_pod(namespace, ann, containers)


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


def scheduled_at(ctx: Ctx, status: Mapping[str, Any]) -> float:
    """The ``lastTransitionTime`` of a pod's ``PodScheduled`` condition that is ``True`` (0: none)."""
    for j, cond in enumerate(ctx.seq(status.get("conditions"), "status.conditions")):
        c = ctx.mapping(cond, f"status.conditions[{j}]")
        if c.get("type") == "PodScheduled" and str(c.get("status")) == "True":
            return parse_timestamp(ctx, c.get("lastTransitionTime"), f"status.conditions[{j}].lastTransitionTime")
    return 0.0
