"""The one bridge from database rows to the scheduler core's input (:class:`scheduler.Snapshot`).

Reads only (``.values()`` queries, no model instances, so 10,000 pods convert quickly); holds no
scheduling logic. Mapping (docs/scheduler.md, "What the product reads"):

* nodes: Ready :class:`~volcanoweb.clusters.models.Node` rows (allocatable already integers);
* queues: every ``queues.Queue`` row (quantity strings → integers; an empty map means "unset");
* jobs: PodGroups not Completed, or Completed with an unfinished pod (a ``dependsOn`` task's late
  pods); each pod joins the PodGroup named by its group annotation;
* tasks: unfinished pods of those PodGroups plus their finished pods (they count as ready),
  and pods of any scheduler already on a node (node usage). Pod status: no node → Pending;
  on a node with phase Pending → Binding while a bind is recorded but not yet acknowledged by the
  cluster, else Bound; a deletion timestamp → Releasing; pods the cluster has deleted are left out.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from scheduler import (
    Job,
    JobPhase,
    Node,
    PriorityClass,
    Queue,
    QueueState,
    Resource,
    Snapshot,
    Taint,
    Task,
    TaskStatus,
    parse_resource,
)
from scheduler.manifests import (
    HIERARCHY,
    HIERARCHY_WEIGHTS,
    POD_STATUS,
    PREEMPTABLE,
    TASK_PRIORITY,
    TASK_SPEC,
    VOLCANO_SCHEDULERS,
    ManifestError,
    PodPlacement,
    flag,
    pod_placement,
    sla_waiting_time,
)
from scheduler.model import ResourceQuota
from volcanoweb.clusters.models import Node as NodeRow
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.jobs.models import PriorityClass as PriorityClassRow
from volcanoweb.jobs.models import ResourceQuota as ResourceQuotaRow
from volcanoweb.queues.models import Queue as QueueRow
from volcanoweb.scheduling.models import IntentKind, PodIntent

FINISHED = ("Succeeded", "Failed")
NO_PLACEMENT = PodPlacement()
log = logging.getLogger(__name__)
_POD_COLUMNS = (
    "id",
    "uid",
    "namespace",
    "name",
    "group_name",
    "task_name",
    "phase",
    "node_name",
    "scheduler_name",
    "priority_class_name",
    "priority",
    "requests",
    "spec",
    "status",
    "labels",
    "annotations",
    "created_at",
    "deletion_timestamp",
)


@dataclass
class SnapshotInfo:
    """The snapshot plus what the apply step needs to map decisions back to rows."""

    snapshot: Snapshot
    pod_ids: dict[str, int] = field(default_factory=dict)  # "ns/name" → Pod.id
    podgroup_ids: dict[str, int] = field(default_factory=dict)  # "ns/name" → PodGroup.id
    podgroup_phases: dict[str, str] = field(default_factory=dict)


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
    """Return the scheduler's node for a ``Node`` values() row."""
    return Node(
        name=row["name"],
        allocatable=_int_resources(row["allocatable"], pod_slot=False),
        labels=dict(row["labels"] or {}),
        taints=tuple(
            Taint(t["key"], t.get("value") or "", t.get("effect") or "NoSchedule") for t in row["taints"] or ()
        ),
        unschedulable=bool(row["unschedulable"]),
    )


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
    )


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
    )


def resource_quotas(pod_rows: list[dict[str, Any]]) -> list[ResourceQuota]:
    """Return the namespace ResourceQuotas, ``used`` summed from the pods that count against them.

    Kubernetes' quota controller counts every pod of the namespace not Succeeded/Failed (by its
    requests; ``pods`` by one each). ``requests.<name>`` is the same limit as ``<name>`` (Kubernetes
    treats them alike; Volcano's job controller writes both into a PodGroup's minResources), so it is
    given to the core as ``<name>`` (the lower of the two when both are set); ``limits.*`` are left out
    (Volcano's minResources never carry them, so its plugin never checks them either).
    """
    rows = list(ResourceQuotaRow.objects.values("namespace", "name", "hard"))
    if not rows:
        return []
    usage: dict[str, dict[str, int]] = {}
    for pod in pod_rows:
        if pod["phase"] in FINISHED or (pod["status"] or {}).get("deleted"):
            continue
        ns = usage.setdefault(pod["namespace"], {})
        for k, v in (pod["requests"] or {}).items():
            ns[k] = ns.get(k, 0) + int(v)
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


class Memo:
    """The core's objects built by the last snapshot, by row: an unchanged row gives back the *same* object.

    The scheduler's :class:`~scheduler.SessionCache` reuses a session's opened state for the nodes,
    queues and priority classes that are the same objects as in the previous cycle, and updates it only
    for the PodGroups whose job or task objects changed; building every object anew from the rows would
    make every cycle open a session over every pod. Not thread-safe: one per scheduling loop.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, Any], tuple[Any, Any]] = {}
        self._next: dict[tuple[str, Any], tuple[Any, Any]] = {}

    def get(self, kind: str, key: Any, row: Any, build: Any) -> Any:
        """Return the object built from ``row`` (compared by value with the last cycle's row of that key)."""
        last = self._last.get((kind, key))
        if last is not None and last[0] == row:
            self._next[(kind, key)] = last
            return last[1]
        obj = build()
        self._next[(kind, key)] = (row, obj)
        return obj

    def done(self) -> None:
        """End a snapshot: forget the rows it did not see."""
        self._last, self._next = self._next, {}


def build_snapshot(memo: Memo | None = None, now: float | None = None) -> SnapshotInfo:
    """Return the scheduler's view of the database now (read-only; a handful of queries).

    With ``memo``, the objects of rows unchanged since the memo's last snapshot are the same objects.
    ``now`` is the cycle's clock in seconds since the Unix epoch (default: the current time), the
    :attr:`Snapshot.now` that the sla plugin compares with PodGroup creation times. It is not part
    of any object, so a changing clock leaves the memo (and the session cache) hits unchanged.
    """
    if now is None:
        now = timezone.now().timestamp()
    memo = memo if memo is not None else Memo()
    nodes = [
        memo.get("node", r["name"], r, lambda r=r: node_from_row(r))
        for r in NodeRow.objects.filter(ready=True).values("name", "allocatable", "labels", "taints", "unschedulable")
    ]
    queue_rows = list(
        QueueRow.objects.values(
            "id",
            "uid",
            "name",
            "parent_id",
            "weight",
            "capability",
            "guarantee",
            "deserved",
            "reclaimable",
            "state",
            "priority",
            "annotations",
            "created_at",
        )
    )
    parents = {r["id"]: r["name"] for r in queue_rows}
    queues = [
        memo.get("queue", r["id"], (r, parents.get(r["parent_id"])), lambda r=r: queue_from_row(r, parents))
        for r in queue_rows
    ]
    if "root" not in {q.name for q in queues}:
        queues.append(memo.get("queue", None, None, lambda: Queue("root", reclaimable=False)))
    # A Completed PodGroup stays in while it has an unfinished pod: a task that waited on
    # ``dependsOn`` gets its pods after the earlier tasks' pods all finished (Volcano keeps it too).
    unfinished = Pod.objects.filter(namespace=OuterRef("namespace"), group_name=OuterRef("name")).exclude(
        phase__in=FINISHED
    )
    pg_rows = list(
        PodGroup.objects.exclude(Q(phase="Completed") & ~Exists(unfinished)).values(
            "id",
            "uid",
            "namespace",
            "name",
            "queue_name",
            "min_member",
            "min_task_member",
            "min_resources",
            "priority_class_name",
            "phase",
            "annotations",
            "labels",
            "created_at",
        )
    )
    info = SnapshotInfo(Snapshot())
    jobs = []
    for r in pg_rows:
        key = f"{r['namespace']}/{r['name']}"
        jobs.append(memo.get("job", r["id"], r, lambda r=r: job_from_row(r)))
        info.podgroup_ids[key] = r["id"]
        info.podgroup_phases[key] = r["phase"]
    binding = {
        f"{ns}/{name}" for ns, name in PodIntent.objects.filter(kind=IntentKind.BIND).values_list("namespace", "name")
    }
    pod_rows = list(Pod.objects.exclude(phase__in=FINISHED).values(*_POD_COLUMNS))
    pod_rows += list(
        Pod.objects.filter(phase__in=FINISHED, podgroup_id__in=list(info.podgroup_ids.values())).values(*_POD_COLUMNS)
    )
    tasks: list[Task] = []
    for r in pod_rows:
        key = f"{r['namespace']}/{r['name']}"
        group_key = f"{r['namespace']}/{r['group_name']}" if r["group_name"] else ""
        managed = r["scheduler_name"] in VOLCANO_SCHEDULERS and group_key in info.podgroup_ids
        if not managed and not r["node_name"]:
            continue
        job_key, bound = group_key if managed else "", key in binding
        task = memo.get("task", r["id"], (r, job_key, bound), lambda r=r, j=job_key, b=bound: task_from_row(r, j, b))
        if task is None:
            continue
        tasks.append(task)
        info.pod_ids[key] = r["id"]
    classes = [
        memo.get(
            "class",
            r["name"],
            r,
            lambda r=r: PriorityClass(r["name"], r["value"], r["global_default"], r["preemption_policy"]),
        )
        for r in PriorityClassRow.objects.values("name", "value", "global_default", "preemption_policy")
    ]
    memo.done()
    quotas = resource_quotas(pod_rows)
    info.snapshot = Snapshot.of(nodes, queues, jobs, tasks, classes, now=now, resource_quotas=quotas)
    return info
