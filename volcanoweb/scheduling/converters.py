"""One database row to one scheduler core object: the converters the snapshot builds its objects with.

Each takes a ``.values()`` row (plain dicts, no model instances) and returns the core's node, queue, job
(a PodGroup), task (a pod) or HyperNode; quantity strings become the core's integers and the Volcano
annotations and labels its fields. A field that cannot be read (a row written around the API) is left
out and logged rather than failing every cycle. Which rows are read is :mod:`volcanoweb.scheduling.snapshots`'s.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from scheduler import (
    Job,
    JobPhase,
    Node,
    Queue,
    QueueState,
    Resource,
    Taint,
    Task,
    TaskStatus,
    parse_resource,
)
from scheduler.decode import (
    GPU_INDEX,
    HIERARCHY,
    HIERARCHY_WEIGHTS,
    JDB_MAX_UNAVAILABLE,
    JDB_MIN_AVAILABLE,
    NUMA_POLICY,
    POD_STATUS,
    PREEMPTABLE,
    REVOCABLE_ZONE,
    TASK_AFFINITY,
    TASK_ANTI_AFFINITY,
    TASK_ORDER,
    TASK_PRIORITY,
    TASK_SPEC,
    ManifestError,
    PodPlacement,
    cooldown_time,
    flag,
    gpu_ids,
    hyper_node,
    network_topology_of,
    pod_placement,
    sla_waiting_time,
    sub_group_policies_of,
)
from scheduler.hardware import guaranteed_cpus, numa_topology, pod_limits
from scheduler.model import EMPTY, HyperNode, NumaTopology
from scheduler.policies import ResourceQuota
from scheduler.quantity import QuantityError
from scheduler.vgpu import VgpuCard, VgpuPod, simulated_cards, vgpu_pod
from volcanoweb.clusters.backends.base import NUMA_LABEL, TOPOLOGY_POLICY_LABEL, VGPU_LABEL
from volcanoweb.jobs.models import HyperNode as HyperNodeRow
from volcanoweb.jobs.models import ResourceQuota as ResourceQuotaRow
from volcanoweb.manifests.pods import pod_requests

FINISHED = ("Succeeded", "Failed")
NO_PLACEMENT = PodPlacement()
# The snapshot's logger: the converters' warnings keep the name they were always logged (and filtered) under.
log = logging.getLogger("volcanoweb.scheduling.snapshots")


def _creation(value: datetime | None) -> int:
    return int(value.timestamp() * 1_000_000) if value is not None else 0


def _seconds(value: datetime | None) -> float:
    return value.timestamp() if value is not None else 0.0


def resources(values: Mapping[str, Any] | None) -> Resource | None:
    """Quantity strings (``{"cpu": "4", "memory": "16Gi"}``) → Resource; empty or None → None."""
    if not values:
        return None
    return Resource.from_dict({k: parse_resource(k, v) for k, v in values.items()})


def _int_resources(values: Mapping[str, Any] | None, *, pod_slot: bool) -> Resource:
    out = {k: int(v) for k, v in (values or {}).items()}
    if pod_slot:
        out["pods"] = 1
    return Resource.from_dict(out)


def placement(spec: Mapping[str, Any], obj: str = "") -> PodPlacement:
    """Return a pod spec's affinity, tolerations, anti-affinity and spread constraints (the core's converter).

    Pod specs are validated when applied; one that still cannot be read (a row written around the
    API) is scheduled without those constraints and logged, rather than failing every cycle.
    """
    try:
        return pod_placement(spec, obj)
    except ManifestError as exc:
        log.warning("pod %s: placement fields ignored: %s", obj, exc)
        return NO_PLACEMENT


def node_from_row(row: Mapping[str, Any]) -> Node:
    """Return the scheduler's node for a ``Node`` values() row (``usage`` and ``usage_time`` optional)."""
    labels = dict(row["labels"] or {})
    measured = row.get("usage_time")
    return Node(
        name=row["name"],
        allocatable=_int_resources(row["allocatable"], pod_slot=False),
        labels=labels,
        taints=tuple(
            Taint(t["key"], t.get("value") or "", t.get("effect") or "NoSchedule") for t in row["taints"] or ()
        ),
        unschedulable=bool(row["unschedulable"]),
        usage={str(p): {str(k): float(v) for k, v in u.items()} for p, u in (row.get("usage") or {}).items()},
        usage_time=None if measured is None else measured.timestamp(),
        numa=_numa_of(row["name"], labels),
        vgpu=vgpu_cards_of(row["name"], labels),
    )


def vgpu_cards_of(name: str, labels: Mapping[str, str]) -> tuple[VgpuCard, ...]:
    """A simulated node's vGPU cards from its pool's label (``sim.volcanoweb.io/vgpu``: COUNTxMEMORYxSPLIT)."""
    value = labels.get(VGPU_LABEL)
    if not value:
        return ()
    try:
        count, memory, split = (int(x) for x in value.split("x"))
    except ValueError:
        log.warning("node %s: vGPU label ignored: %r", name, value)
        return ()
    return simulated_cards(name, count, memory, split)


def _numa_of(name: str, labels: Mapping[str, str]) -> NumaTopology | None:
    """A simulated node's NUMA layout from its pool's labels (``sim.volcanoweb.io/numa``: SxNxCxT)."""
    layout = labels.get(NUMA_LABEL)
    if not layout:
        return None
    try:
        sockets, per_socket, cores, threads = (int(x) for x in layout.split("x"))
        return numa_topology(
            {
                "sockets": sockets,
                "numaPerSocket": per_socket,
                "coresPerNuma": cores,
                "threadsPerCore": threads,
                "topologyManagerPolicy": labels.get(TOPOLOGY_POLICY_LABEL, "none"),
            }
        )
    except ValueError as exc:
        log.warning("node %s: NUMA labels ignored: %s", name, exc)
        return None


def queue_from_row(row: Mapping[str, Any], parents: Mapping[int, str]) -> Queue:
    """Return the scheduler's queue for a ``Queue`` values() row."""
    annotations = row["annotations"] or {}
    try:
        state = QueueState(row["state"])
    except ValueError:
        state = QueueState.UNKNOWN
    return Queue(
        name=row["name"],
        weight=row["weight"] or 1,
        capability=resources(row["capability"]),
        guarantee=resources(row["guarantee"]),
        deserved=resources(row["deserved"]),
        parent=parents.get(row["parent_id"], "") if row["parent_id"] else "",
        reclaimable=bool(row["reclaimable"]),
        state=state,
        priority=row["priority"] or 0,
        hierarchy=annotations.get(HIERARCHY, ""),
        hierarchy_weights=annotations.get(HIERARCHY_WEIGHTS, ""),
        creation=_creation(row["created_at"]),
        uid=str(row["uid"]),
    )


def pod_templates(row: Mapping[str, Any]) -> tuple[tuple[Task, int], ...]:
    """The pods a Pending Volcano Job's controller creates once its PodGroup is admitted, as (template pod,
    replicas) per task (the enqueuegate plugin judges a PodGroup without pods by them); empty otherwise."""
    spec = row.get("job__spec")
    if row["phase"] != JobPhase.PENDING or not isinstance(spec, dict):
        return ()
    key = f"{row['namespace']}/{row['name']}"
    out = []
    for task in spec.get("tasks") or []:
        if not isinstance(task, dict) or not task.get("name"):
            continue
        pod_spec = (task.get("template") or {}).get("spec") or {}
        where = placement(pod_spec, f"{key} task {task['name']}")
        template = Task(
            uid=f"{row['uid']}/{task['name']}",
            name=f"{row['name']}-{task['name']}",
            namespace=row["namespace"],
            job=key,
            requests=_int_resources(pod_requests(pod_spec), pod_slot=True),
            role=str(task["name"]),
            node_selector=dict(pod_spec.get("nodeSelector") or {}),
            required_affinity=where.required_affinity,
            tolerations=where.tolerations,
        )
        out.append((template, int(task.get("replicas") or 0)))
    return tuple(out)


def job_from_row(row: Mapping[str, Any]) -> Job:
    """Return the scheduler's job for a ``PodGroup`` values() row."""
    annotations, labels = row["annotations"] or {}, row["labels"] or {}
    preemptable = flag(annotations.get(PREEMPTABLE))
    if preemptable is None:
        preemptable = flag(labels.get(PREEMPTABLE))
    try:
        phase = JobPhase(row["phase"])
    except ValueError:
        phase = JobPhase.PENDING
    key = f"{row['namespace']}/{row['name']}"
    try:
        sla = sla_waiting_time(annotations, key)
    except ManifestError as exc:
        log.warning("PodGroup %s: %s", key, exc)
        sla = None
    spec = row.get("spec") or {}
    try:
        topology = network_topology_of(spec.get("networkTopology"), f"PodGroup {key}")
    except ManifestError as exc:
        log.warning("PodGroup %s: %s", key, exc)
        topology = None
    try:
        groups = sub_group_policies_of(spec.get("subGroupPolicy"), f"PodGroup {key}")
    except ManifestError as exc:
        log.warning("PodGroup %s: sub-group policies ignored: %s", key, exc)
        groups = ()
    return Job(
        uid=str(row["uid"]),
        name=row["name"],
        namespace=row["namespace"],
        queue=row["queue_name"] or "default",
        min_member=row["min_member"],
        min_task_member={str(k): int(v) for k, v in (row["min_task_member"] or {}).items()},
        min_resources=resources(row["min_resources"]),
        priority_class_name=row["priority_class_name"] or "",
        phase=phase,
        preemptable=preemptable,
        creation=_creation(row["created_at"]),
        created_at=_seconds(row["created_at"]),
        sla_waiting_time=sla,
        network_topology=topology,
        sub_group_policies=groups,
        jdb_min_available=str(annotations.get(JDB_MIN_AVAILABLE) or ""),
        jdb_max_unavailable=str(annotations.get(JDB_MAX_UNAVAILABLE) or ""),
        task_affinity=annotations.get(TASK_AFFINITY),
        task_anti_affinity=annotations.get(TASK_ANTI_AFFINITY),
        task_order=annotations.get(TASK_ORDER),
        pod_templates=pod_templates(row),
    )


def hyper_node_from_row(row: Mapping[str, Any]) -> HyperNode | None:
    """Return the scheduler's HyperNode for a ``HyperNode`` values() row (None, logged, if invalid)."""
    doc = {
        "metadata": {"name": row["name"]},
        "spec": {"tier": row["tier"], "tierName": row["tier_name"], "members": row["members"] or []},
    }
    try:
        return hyper_node(doc, f"HyperNode {row['name']}")
    except ManifestError as exc:
        log.warning("HyperNode %s: %s", row["name"], exc)
        return None


def hyper_nodes() -> list[HyperNode]:
    """Every valid HyperNode row as the scheduler reads it (lowest tier first)."""
    rows = HyperNodeRow.objects.order_by("tier", "name").values("name", "tier", "tier_name", "members")
    return [h for h in map(hyper_node_from_row, rows) if h is not None]


def task_from_row(row: Mapping[str, Any], job_key: str, binding: bool) -> Task | None:
    """Return the scheduler's task for a ``Pod`` values() row (None when it is gone from the cluster)."""
    status_json = row["status"] or {}
    if status_json.get("deleted"):
        return None
    node = row["node_name"] or ""
    status = POD_STATUS.get(row["phase"], TaskStatus.UNKNOWN)
    if status == TaskStatus.PENDING and node:
        status = TaskStatus.BINDING if binding else TaskStatus.BOUND
    if row["deletion_timestamp"] is not None and status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
        if not node:
            return None
        status = TaskStatus.RELEASING
    spec = row["spec"] or {}
    annotations, labels = row["annotations"] or {}, row["labels"] or {}
    preemptable = flag(annotations.get(PREEMPTABLE))
    if preemptable is None:
        preemptable = flag(labels.get(PREEMPTABLE))
    priority: int | None = row["priority"]
    if TASK_PRIORITY in annotations:
        with contextlib.suppress(ValueError):
            priority = int(annotations[TASK_PRIORITY])
    where = placement(spec, f"{row['namespace']}/{row['name']}")
    return Task(
        uid=str(row["uid"]),
        name=row["name"],
        namespace=row["namespace"],
        job=job_key,
        requests=_int_resources(row["requests"], pod_slot=True),
        status=status,
        node_name=node,
        priority=priority,
        priority_class_name=row["priority_class_name"] or "",
        preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
        preemptable=preemptable if preemptable is not None else True,
        role=annotations.get(TASK_SPEC) or labels.get(TASK_SPEC) or row["task_name"] or "",
        node_selector=dict(spec.get("nodeSelector") or {}),
        required_affinity=where.required_affinity,
        preferred_affinity=where.preferred_affinity,
        tolerations=where.tolerations,
        scheduling_gated=bool(spec.get("schedulingGates")),
        nominated_node=str(status_json.get("nominatedNodeName") or ""),
        creation=_creation(row["created_at"]),
        labels=dict(labels),
        anti_affinity=where.anti_affinity,
        pod_affinity=where.pod_affinity,
        preferred_pod_affinity=where.preferred_pod_affinity,
        preferred_anti_affinity=where.preferred_anti_affinity,
        topology_spread=where.topology_spread,
        cooldown=cooldown_time(labels, annotations),
        scheduled_at=_seconds(row["started_at"]) if row["started_at"] is not None else 0.0,
        revocable_zone=str(annotations.get(REVOCABLE_ZONE) or ""),
        gpu_index=gpu_ids(str(annotations.get(GPU_INDEX) or ""), strict=True),
        numa_policy=str(annotations.get(NUMA_POLICY) or ""),
        guaranteed_cpus=_guaranteed(spec),
        limits=_limits(spec),
        vgpu=_vgpu(spec, row["namespace"], annotations),
    )


def _vgpu(spec: Mapping[str, Any], namespace: str, annotations: Mapping[str, Any]) -> VgpuPod | None:
    """What deviceshare's vGPU device reads of the pod (its containers' vGPU resources, its annotations)."""
    containers = spec.get("containers") or []
    if not isinstance(containers, list):
        return None
    parsed: list[dict[str, dict[str, int]]] = []
    try:
        for c in containers:
            res = (c.get("resources") or {}) if isinstance(c, dict) else {}
            parsed.append(
                {
                    kind: {str(k): parse_resource(str(k), v) for k, v in (res.get(kind) or {}).items()}
                    for kind in ("limits", "requests")
                }
            )
    except (QuantityError, AttributeError):
        return None
    return vgpu_pod(namespace, {str(k): str(v) for k, v in annotations.items()}, parsed)


def _limits(spec: Mapping[str, Any]) -> Resource:
    """The pod's limits (usage's estimator reads them); none when the spec is not as admission leaves it."""
    containers, init = spec.get("containers") or [], spec.get("initContainers") or []
    overhead = spec.get("overhead")
    if not isinstance(containers, list) or not isinstance(init, list):
        return EMPTY
    try:
        limits = pod_limits(
            [c for c in containers if isinstance(c, dict)],
            [c for c in init if isinstance(c, dict)],
            overhead if isinstance(overhead, dict) else None,
        )
    except QuantityError:
        return EMPTY
    return Resource.from_dict(limits) if limits else EMPTY


def _guaranteed(spec: Mapping[str, Any]) -> tuple[int, ...]:
    """The containers' cpu requests of a Guaranteed pod (numa-aware pins them), else ()."""
    containers, init = spec.get("containers") or [], spec.get("initContainers") or []
    if not isinstance(containers, list) or not isinstance(init, list):
        return ()
    return guaranteed_cpus([c for c in containers if isinstance(c, dict)], [c for c in init if isinstance(c, dict)])


def pod_usage(row: Mapping[str, Any]) -> tuple[str, dict[str, int]] | None:
    """Return what a ``Pod`` row counts against its namespace's ResourceQuotas: (namespace, requests), or None.

    Kubernetes' quota controller counts every pod of the namespace not Succeeded/Failed (by its
    requests; ``pods`` by one each); a pod the cluster has deleted no longer counts.
    """
    if row["phase"] in FINISHED or (row["status"] or {}).get("deleted"):
        return None
    return row["namespace"], {k: int(v) for k, v in (row["requests"] or {}).items()}


def resource_quotas(usages: Iterable[tuple[str, dict[str, int]] | None]) -> list[ResourceQuota]:
    """Return the namespace ResourceQuotas, ``used`` summed from the pods' :func:`pod_usage`.

    ``requests.<name>`` is the same limit as ``<name>`` (Kubernetes treats them alike; Volcano's job
    controller writes both into a PodGroup's minResources), so it is given to the core as ``<name>``
    (the lower of the two when both are set); ``limits.*`` are left out (Volcano's minResources never
    carry them, so its plugin never checks them either).
    """
    rows = list(ResourceQuotaRow.objects.values("namespace", "name", "hard"))
    if not rows:
        return []
    usage: dict[str, dict[str, int]] = {}
    for item in usages:
        if item is None:
            continue
        ns = usage.setdefault(item[0], {})
        for k, v in item[1].items():
            ns[k] = ns.get(k, 0) + v
        ns["pods"] = ns.get("pods", 0) + 1
    out = []
    for r in rows:
        hard: dict[str, int] = {}
        for k, v in (r["hard"] or {}).items():
            if k.startswith("limits."):
                continue
            name = k.removeprefix("requests.")
            with contextlib.suppress(ValueError):
                amount = parse_resource(name, v)
                hard[name] = min(amount, hard.get(name, amount))
        used_ns = usage.get(r["namespace"], {})
        used = {k: used_ns[k] for k in hard if used_ns.get(k)}
        out.append(ResourceQuota(r["name"], r["namespace"], hard, used))
    return out
