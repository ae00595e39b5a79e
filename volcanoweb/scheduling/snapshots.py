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

Incremental (ADR 0018): with the scheduling loop's :class:`Memo`, a cycle reads the ``(id, row_version)``
pairs of the PodGroups and pods it needs and the full rows only of the new and changed ids (the database
bumps ``row_version`` on every change of a row, whoever writes it: :mod:`volcanoweb.jobs.rowversion`);
nodes' JSON columns are read as text and decoded only when the text changed. A row read again whose
object comes out equal to the memo's (a write of a field the snapshot does not use, such as the
scheduler's own conditions) keeps the memo's object: the same object is what the core's session cache
and the insights recorder take as unchanged.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast
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
    VOLCANO_SCHEDULERS,
    ManifestError,
    PodPlacement,
    cooldown_time,
    flag,
    gpu_ids,
    hyper_node,
    network_topology_of,
    pod_placement,
    sla_waiting_time,
)
from scheduler.hardware import guaranteed_cpus, numa_topology
from scheduler.model import HyperNode, NumaTopology
from scheduler.policies import ResourceQuota
from volcanoweb.clusters.backends.base import NUMA_LABEL, TOPOLOGY_POLICY_LABEL
from volcanoweb.clusters.models import Node as NodeRow
from volcanoweb.core.idlist import one_of
from volcanoweb.jobs.models import HyperNode as HyperNodeRow
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.jobs.models import PriorityClass as PriorityClassRow
from volcanoweb.jobs.models import ResourceQuota as ResourceQuotaRow
from volcanoweb.manifests.pods import pod_requests
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
    "row_version",
    "started_at",
)
_PODGROUP_COLUMNS = (
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
    "row_version",
    "spec",
    "job__spec",  # the pod templates of a Volcano Job's PodGroup (read only while it is Pending)
)
#: How :meth:`Memo.rows` reads full rows: ``fetch(ids)`` those ids, ``fetch(None)`` the whole query.
Fetch = Callable[[list[int] | None], Iterable[dict[str, Any]]]
#: :meth:`Memo.rows` reads changed rows by id in chunks of this many, or with the whole query when more
#: than this many and more than half of the rows changed (the first snapshot of a process, a mass change).
FETCH_CHUNK = 500
FETCH_ALL_ABOVE = 2000


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
    )


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
    try:
        topology = network_topology_of((row.get("spec") or {}).get("networkTopology"), f"PodGroup {key}")
    except ManifestError as exc:
        log.warning("PodGroup %s: %s", key, exc)
        topology = None
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
        jdb_min_available=str(annotations.get(JDB_MIN_AVAILABLE) or ""),
        jdb_max_unavailable=str(annotations.get(JDB_MAX_UNAVAILABLE) or ""),
        task_affinity=annotations.get(TASK_AFFINITY),
        task_anti_affinity=annotations.get(TASK_ANTI_AFFINITY),
        task_order=annotations.get(TASK_ORDER),
        pod_templates=pod_templates(row),
    )


def _hyper_node(row: Mapping[str, Any]) -> HyperNode | None:
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
    return [h for h in map(_hyper_node, rows) if h is not None]


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
    )


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


def _fetch_rows(fetch: Fetch, ids: Iterable[int], total: int) -> dict[int, dict[str, Any]]:
    """Read the full rows of ``ids`` with ``fetch`` (in chunks, or the whole query when most rows are wanted)."""
    wanted = list(ids)
    if not wanted:
        return {}
    if len(wanted) > FETCH_ALL_ABOVE and len(wanted) * 2 > total:
        return {r["id"]: r for r in fetch(None)}
    out: dict[int, dict[str, Any]] = {}
    for start in range(0, len(wanted), FETCH_CHUNK):
        out.update((r["id"], r) for r in fetch(wanted[start : start + FETCH_CHUNK]))
    return out


class _Rows:
    """Objects built from the rows of one query, kept by row id with the ``row_version`` they were built from.

    :meth:`refresh` takes the query's ``(id, row_version)`` pairs and reads the full rows (JSON columns
    decoded) of the new and changed ids only; the ids no longer in the pairs are forgotten.
    """

    def __init__(self) -> None:
        self.entries: dict[int, tuple[int, Any]] = {}
        self.order: list[int] = []

    def refresh(self, versions: dict[int, int], fetch: Fetch, build: Callable[[dict[str, Any]], Any]) -> int:
        """Bring the entries to ``versions``; return how many rows were read in full."""
        entries = self.entries
        gone = entries.keys() - versions.keys()
        for pk in gone:
            del entries[pk]
        stale = [pk for pk, v in versions.items() if (e := entries.get(pk)) is None or e[0] != v]
        fresh = _fetch_rows(fetch, stale, len(versions))
        for pk in stale:
            row = fresh.get(pk)
            if row is None:
                entries.pop(pk, None)  # deleted (or out of the query) since the versions were read
            else:
                built = build(row)
                e = entries.get(pk)
                if e is not None and e[1] == built:
                    built = e[1]  # a write that left what the snapshot uses alone: keep the very object
                entries[pk] = (row["row_version"], built)
        if gone or stale:
            self.order = sorted(entries)
        return len(stale)


class _PodEntry:
    """What the snapshot keeps of one Pod row: its version, the task built from it and what that depended on."""

    __slots__ = ("group_key", "inputs", "key", "task", "usage", "version")

    def __init__(
        self,
        version: int,
        key: str,
        group_key: str,
        inputs: tuple[str, bool],
        task: Task | None,
        usage: tuple[str, dict[str, int]] | None,
    ) -> None:
        self.version, self.key, self.group_key = version, key, group_key
        self.inputs, self.task, self.usage = inputs, task, usage


class _Pods:
    """The snapshot's pods, kept between cycles by row id (see :class:`Memo`).

    A pod's task depends on its row and on two things outside it: whether its PodGroup is in the
    snapshot (the task's ``job``) and whether a bind intent is recorded for it (Binding). A change of
    either also rebuilds the task, from a fresh read of the row.
    """

    def __init__(self) -> None:
        self.entries: dict[int, _PodEntry] = {}
        self.order: list[int] = []
        self.by_key: dict[str, int] = {}
        self.by_group: dict[str, set[int]] = {}
        self.groups: set[str] = set()
        self.binding: set[str] = set()

    def _drop(self, pk: int) -> None:
        entry = self.entries.pop(pk, None)
        if entry is None:
            return
        if self.by_key.get(entry.key) == pk:
            del self.by_key[entry.key]
        if entry.group_key:
            members = self.by_group.get(entry.group_key)
            if members is not None:
                members.discard(pk)
                if not members:
                    del self.by_group[entry.group_key]

    def _put(self, row: dict[str, Any], groups: set[str], binding: set[str]) -> None:
        pk = row["id"]
        key = f"{row['namespace']}/{row['name']}"
        group_key = f"{row['namespace']}/{row['group_name']}" if row["group_name"] else ""
        managed = row["scheduler_name"] in VOLCANO_SCHEDULERS and group_key in groups
        inputs = (group_key if managed else "", key in binding)
        old = self.entries.get(pk)
        if old is not None and old.version == row["row_version"] and old.inputs == inputs:
            return  # read again for nothing: an input toggled that this pod's task does not use
        self._drop(pk)
        task = task_from_row(row, *inputs) if managed or row["node_name"] else None
        if old is not None and task is not None and task == old.task:
            task = old.task  # a write that left what the task uses alone (a condition): keep the very object
        self.entries[pk] = _PodEntry(row["row_version"], key, group_key, inputs, task, pod_usage(row))
        self.by_key[key] = pk
        if group_key:
            self.by_group.setdefault(group_key, set()).add(pk)

    def refresh(self, versions: dict[int, int], groups: set[str], binding: set[str], fetch: Fetch) -> int:
        """Bring the pods to ``versions`` with the snapshot's PodGroup keys and bind intents; return rows read."""
        entries = self.entries
        gone = entries.keys() - versions.keys()
        for pk in gone:
            self._drop(pk)
        stale = {pk for pk, v in versions.items() if (e := entries.get(pk)) is None or e.version != v}
        for group in groups ^ self.groups:
            stale.update(self.by_group.get(group, ()))
        for key in binding ^ self.binding:
            bound = self.by_key.get(key)
            if bound is not None:
                stale.add(bound)
        self.groups, self.binding = groups, binding
        fresh = _fetch_rows(fetch, sorted(stale), len(versions))
        for pk in stale:
            row = fresh.get(pk)
            if row is None:
                self._drop(pk)  # deleted (or out of the query) since the versions were read
            else:
                self._put(row, groups, binding)
        if gone or stale:
            self.order = sorted(entries)
        return len(stale)


class Memo:
    """The core's objects built by the last snapshot, by row: an unchanged row gives back the *same* object.

    The scheduler's :class:`~scheduler.SessionCache` reuses a session's opened state for the nodes,
    queues and priority classes that are the same objects as in the previous cycle, and updates it only
    for the PodGroups whose job or task objects changed; building every object anew from the rows would
    make every cycle open a session over every pod. Not thread-safe: one per scheduling loop.

    The large row sets are read incrementally: PodGroups and pods by ``row_version``, which the database
    bumps on every change of a row (:mod:`volcanoweb.jobs.rowversion`): a snapshot reads the cheap
    ``(id, row_version)`` pairs and the full rows (JSON columns decoded) only of the ids that are new or
    whose version moved; nodes by the text of their JSON columns, decoded only when it changed.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, Any], tuple[Any, Any]] = {}
        self._next: dict[tuple[str, Any], tuple[Any, Any]] = {}
        self.podgroups = _Rows()
        self.pods = _Pods()
        #: Rows the last snapshot read in full, per kind (what it could not take from the memo).
        self.fetched: dict[str, int] = {}

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

    def reset(self) -> None:
        """Forget everything (after a snapshot that failed half-way): the next one reads every row.

        Also gives the objects the loop froze after its cycles (``cycles._Freezer``) back to the
        garbage collector: the memo's objects are what was frozen, and they are dropped here."""
        self._last, self._next = {}, {}
        self.podgroups, self.pods = _Rows(), _Pods()
        gc.unfreeze()


def _by_ids(query: QuerySet[Any], ids: list[int] | None) -> QuerySet[Any]:
    """``query`` restricted to ``ids`` (None: the whole query)."""
    return query if ids is None else query.filter(one_of("pk", ids))


def build_snapshot(memo: Memo | None = None, now: float | None = None) -> SnapshotInfo:
    """Return the scheduler's view of the database now (read-only; a handful of queries).

    With ``memo``, the objects of rows unchanged since the memo's last snapshot are the same objects,
    and only the changed rows are read in full (see :class:`Memo`).
    ``now`` is the cycle's clock in seconds since the Unix epoch (default: the current time), the
    :attr:`Snapshot.now` that the sla plugin compares with PodGroup creation times. It is not part
    of any object, so a changing clock leaves the memo (and the session cache) hits unchanged.
    """
    if now is None:
        now = timezone.now().timestamp()
    memo = memo if memo is not None else Memo()
    try:
        return _build(memo, now)
    except BaseException:
        memo.reset()
        raise


def _node(row: tuple[Any, ...]) -> Node:
    name, allocatable, labels, taints, unschedulable, usage, usage_time = row
    return node_from_row(
        {
            "name": name,
            "allocatable": json.loads(allocatable) if allocatable else None,
            "labels": json.loads(labels) if labels else None,
            "taints": json.loads(taints) if taints else None,
            "unschedulable": unschedulable,
            "usage": json.loads(usage) if usage else None,
            "usage_time": usage_time,
        }
    )


def _build(memo: Memo, now: float) -> SnapshotInfo:
    # Nodes: the JSON columns as text, compared with the memo's; decoded only when they changed.
    nodes = [
        memo.get("node", r[0], r, lambda r=r: _node(r))
        for r in NodeRow.objects.filter(ready=True).values_list(
            "name",
            *(Cast(c, TextField()) for c in ("allocatable", "labels", "taints")),
            "unschedulable",
            Cast("usage", TextField()),
            "usage_time",
        )
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
    live_groups = PodGroup.objects.exclude(Q(phase="Completed") & ~Exists(unfinished)).order_by()
    # PodGroups and pods: only the (id, row_version) pairs are read every cycle, the full rows of the new
    # and changed ids only (the database bumps row_version on every change: volcanoweb/jobs/rowversion.py).
    groups = memo.podgroups
    memo.fetched["podgroup"] = groups.refresh(
        dict(live_groups.values_list("id", "row_version")),
        lambda ids: _by_ids(PodGroup.objects.order_by(), ids).values(*_PODGROUP_COLUMNS),
        lambda r: (f"{r['namespace']}/{r['name']}", r["phase"], job_from_row(r)),
    )
    info = SnapshotInfo(Snapshot())
    jobs = []
    for pk in groups.order:
        key, phase, job = groups.entries[pk][1]
        jobs.append(job)
        info.podgroup_ids[key] = pk
        info.podgroup_phases[key] = phase
    binding = {
        f"{ns}/{name}" for ns, name in PodIntent.objects.filter(kind=IntentKind.BIND).values_list("namespace", "name")
    }
    # Unfinished pods, and the finished pods of the PodGroups above (they count as ready).
    unfinished_pods = Pod.objects.exclude(phase__in=FINISHED).order_by()
    finished_pods = Pod.objects.filter(phase__in=FINISHED, podgroup_id__in=live_groups.values("id")).order_by()
    versions = dict(unfinished_pods.values_list("id", "row_version"))
    versions.update(finished_pods.values_list("id", "row_version"))

    def fetch_pods(ids: list[int] | None) -> Iterable[dict[str, Any]]:
        if ids is None:
            return itertools.chain(unfinished_pods.values(*_POD_COLUMNS), finished_pods.values(*_POD_COLUMNS))
        rows: Iterable[dict[str, Any]] = Pod.objects.order_by().filter(one_of("pk", ids)).values(*_POD_COLUMNS)
        return rows

    pods = memo.pods
    memo.fetched["pod"] = pods.refresh(versions, set(info.podgroup_ids), binding, fetch_pods)
    entries = pods.entries
    tasks: list[Task] = []
    for pk in pods.order:
        entry = entries[pk]
        if entry.task is not None:
            tasks.append(entry.task)
            info.pod_ids[entry.key] = pk
    classes = [
        memo.get(
            "class",
            r["name"],
            r,
            lambda r=r: PriorityClass(r["name"], r["value"], r["global_default"], r["preemption_policy"]),
        )
        for r in PriorityClassRow.objects.values("name", "value", "global_default", "preemption_policy")
    ]
    hyper = [
        memo.get("hypernode", r["name"], r, lambda r=r: _hyper_node(r))
        for r in HyperNodeRow.objects.values("name", "tier", "tier_name", "members")
    ]
    memo.done()
    quotas = resource_quotas(entries[pk].usage for pk in pods.order)
    info.snapshot = Snapshot.of(
        nodes, queues, jobs, tasks, classes, now=now, resource_quotas=quotas, hyper_nodes=[h for h in hyper if h]
    )
    return info
