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

Incremental (ADR 0018): with the scheduling loop's :class:`~volcanoweb.scheduling.memo.Memo`, a cycle reads
the ``(id, resource_version)`` pairs of the PodGroups and pods it needs and the full rows only of the new and
changed ids (``resource_version`` is the change log's last revision of the row, which every change moves,
whoever writes it: ADR 0029); nodes' JSON columns are read as text and decoded only when the text
changed. A row read again whose object comes out equal to the memo's (a write of a field the snapshot does
not use, such as the scheduler's own conditions) keeps the memo's object: the same object is what the
core's session cache and the insights recorder take as unchanged. This module says which rows are read;
one row becomes one core object in :mod:`volcanoweb.scheduling.converters`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from scheduler import Job, Node, PriorityClass, Queue, Snapshot, Task
from volcanoweb.clusters.models import Node as NodeRow
from volcanoweb.core.idlist import one_of
from volcanoweb.jobs.models import HyperNode as HyperNodeRow
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.jobs.models import PriorityClass as PriorityClassRow
from volcanoweb.queues.models import Queue as QueueRow
from volcanoweb.scheduling.converters import (
    FINISHED,
    hyper_node_from_row,
    job_from_row,
    node_from_row,
    queue_from_row,
    resource_quotas,
)
from volcanoweb.scheduling.memo import Memo
from volcanoweb.scheduling.models import IntentKind, PodIntent

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
    "resource_version",
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
    "resource_version",
    "spec",
    "job__spec",  # the pod templates of a Volcano Job's PodGroup (read only while it is Pending)
)


@dataclass
class SnapshotInfo:
    """The snapshot plus what the apply step needs to map decisions back to rows."""

    snapshot: Snapshot
    pod_ids: dict[str, int] = field(default_factory=dict)  # "ns/name" → Pod.id
    podgroup_ids: dict[str, int] = field(default_factory=dict)  # "ns/name" → PodGroup.id
    podgroup_phases: dict[str, str] = field(default_factory=dict)


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
    nodes = _nodes(memo)
    queues = _queues(memo)
    # A Completed PodGroup stays in while it has an unfinished pod: a task that waited on
    # ``dependsOn`` gets its pods after the earlier tasks' pods all finished (Volcano keeps it too).
    unfinished = Pod.objects.filter(namespace=OuterRef("namespace"), group_name=OuterRef("name")).exclude(
        phase__in=FINISHED
    )
    live_groups = PodGroup.objects.exclude(Q(phase="Completed") & ~Exists(unfinished)).order_by()
    info = SnapshotInfo(Snapshot())
    jobs = _jobs(memo, live_groups, info)
    tasks = _tasks(memo, live_groups, info)
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
        memo.get("hypernode", r["name"], r, lambda r=r: hyper_node_from_row(r))
        for r in HyperNodeRow.objects.values("name", "tier", "tier_name", "members")
    ]
    memo.done()
    quotas = resource_quotas(memo.pods.entries[pk].usage for pk in memo.pods.order)
    info.snapshot = Snapshot.of(
        nodes, queues, jobs, tasks, classes, now=now, resource_quotas=quotas, hyper_nodes=[h for h in hyper if h]
    )
    return info


def _nodes(memo: Memo) -> list[Node]:
    """The Ready nodes: the JSON columns as text, compared with the memo's; decoded only when they changed."""
    return [
        memo.get("node", r[0], r, lambda r=r: _node(r))
        for r in NodeRow.objects.filter(ready=True).values_list(
            "name",
            *(Cast(c, TextField()) for c in ("allocatable", "labels", "taints")),
            "unschedulable",
            Cast("usage", TextField()),
            "usage_time",
        )
    ]


def _queues(memo: Memo) -> list[Queue]:
    """Every queue, and the root queue when there is no row for it."""
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
    return queues


def _jobs(memo: Memo, live_groups: QuerySet[PodGroup], info: SnapshotInfo) -> list[Job]:
    """The jobs of the live PodGroups, whose ids and phases go into ``info``."""
    # PodGroups and pods: only the (id, resource_version) pairs are read every cycle, the full rows of the new
    # and changed ids only (the change log gives every change of a row a new revision: ADR 0029).
    groups = memo.podgroups
    memo.fetched["podgroup"] = groups.refresh(
        dict(live_groups.values_list("id", "resource_version")),
        lambda ids: _by_ids(PodGroup.objects.order_by(), ids).values(*_PODGROUP_COLUMNS),
        lambda r: (f"{r['namespace']}/{r['name']}", r["phase"], job_from_row(r)),
    )
    jobs = []
    for pk in groups.order:
        key, phase, job = groups.entries[pk][1]
        jobs.append(job)
        info.podgroup_ids[key] = pk
        info.podgroup_phases[key] = phase
    return jobs


def _tasks(memo: Memo, live_groups: QuerySet[PodGroup], info: SnapshotInfo) -> list[Task]:
    """The tasks of the pods the snapshot takes, whose ids go into ``info`` (after :func:`_jobs`)."""
    binding = {
        f"{ns}/{name}" for ns, name in PodIntent.objects.filter(kind=IntentKind.BIND).values_list("namespace", "name")
    }
    # Unfinished pods, and the finished pods of the PodGroups above (they count as ready).
    unfinished_pods = Pod.objects.exclude(phase__in=FINISHED).order_by()
    finished_pods = Pod.objects.filter(phase__in=FINISHED, podgroup_id__in=live_groups.values("id")).order_by()
    versions = dict(unfinished_pods.values_list("id", "resource_version"))
    versions.update(finished_pods.values_list("id", "resource_version"))

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
    return tasks
