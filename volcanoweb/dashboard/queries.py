"""Read-side queries for the pages: aggregated in SQL, bounded, scoped to the selected tenant."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import BooleanField, Count, ExpressionWrapper, Q, QuerySet
from django.db.models.fields.json import KeyTransform

from volcanoweb.dashboard import cluster
from volcanoweb.dashboard.aggregates import request_sums
from volcanoweb.dashboard.resources import CPU, GPU, MAIN_RESOURCES, MEMORY, add_into, parse_map, sum_maps
from volcanoweb.dashboard.scope import Scope
from volcanoweb.dashboard.shares import QueueDemand, deserved_shares
from volcanoweb.jobs.models import Event, Job, JobPhase, Pod, PodGroup, PodGroupPhase, PodPhase
from volcanoweb.queues.models import ROOT_QUEUE, Queue
from volcanoweb.scheduling.models import RunStatus, SchedulingRun

JOB_SORTS = {
    "name": "name",
    "namespace": "namespace",
    "queue": "queue_name",
    "phase": "phase",
    "created": "created_at",
}
PAGE_SIZE = 50


def phase_counts(scope: Scope) -> dict[str, int]:
    """Return jobs per phase (every phase present, zero included), one grouped query."""
    rows = scope.filter(Job.objects.all()).values("phase").annotate(n=Count("id")).order_by()
    counts = {phase.value: 0 for phase in JobPhase}
    for row in rows:
        counts[row["phase"]] = row["n"]
    return counts


def recent_events(scope: Scope, limit: int = 12) -> list[Event]:
    """Return the newest events of the shown tenants."""
    return list(scope.filter(Event.objects.all())[:limit])


#: SchedulingRun columns the pages read; ``unschedulable`` and ``decisions`` can be large and are deferred.
RUN_FIELDS = (
    "id",
    "started_at",
    "finished_at",
    "status",
    "config_version",
    "duration_ms",
    "snapshot_ms",
    "core_ms",
    "apply_ms",
    "bind_ms",
    "record_ms",
    "action_ms",
    "nodes",
    "jobs",
    "tasks",
    "binds",
    "evictions",
    "pipelined",
    "recovered",
    "error",
)


def last_scheduling_run() -> SchedulingRun | None:
    """Return the newest SchedulingRun (without its large JSON columns), or None."""
    return SchedulingRun.objects.only(*RUN_FIELDS).order_by("-started_at", "-id").first()


def run_reason(podgroup_key: str) -> tuple[str, dict[str, Any]] | None:
    """Return (run id, stored JobReason) from the newest finished run that lists ``podgroup_key``.

    Reads one key of the newest succeeded run's ``unschedulable`` JSON in SQL, not the whole map.
    """
    row = (
        SchedulingRun.objects.filter(status=RunStatus.SUCCEEDED)
        .order_by("-started_at", "-id")
        .annotate(reason=KeyTransform(podgroup_key, "unschedulable"))
        .values_list("id", "reason")
        .first()
    )
    if row is None or not isinstance(row[1], dict):
        return None
    return str(row[0]), row[1]


@dataclass
class CycleHealth:
    """The recent scheduling cycles for the overview: newest run, recent rows, a duration sparkline."""

    last: SchedulingRun | None
    runs: list[SchedulingRun]
    failed: int
    median_ms: float
    max_ms: float
    spark_points: str
    spark_width: int = 160
    spark_height: int = 32
    window: int = 0
    actions: list[tuple[str, float, int]] = field(default_factory=list)


def cycle_health(limit: int = 30) -> CycleHealth:
    """Return the last ``limit`` cycles (one query, large JSON deferred) with summary numbers."""
    runs = list(SchedulingRun.objects.only(*RUN_FIELDS).order_by("-started_at", "-id")[:limit])
    done = [r for r in runs if r.status != RunStatus.RUNNING]
    durations = [r.duration_ms for r in reversed(done)]
    ordered = sorted(durations)
    median = ordered[len(ordered) // 2] if ordered else 0.0
    top = max(durations) if durations else 0.0
    health = CycleHealth(
        last=runs[0] if runs else None,
        runs=runs[:8],
        failed=sum(1 for r in runs if r.status == RunStatus.FAILED),
        median_ms=median,
        max_ms=top,
        spark_points=_spark(durations, 160, 32),
        window=len(runs),
    )
    last = next((r for r in runs if r.status == RunStatus.SUCCEEDED and r.action_ms), None)
    if last is not None:
        total = sum(v for v in last.action_ms.values() if isinstance(v, int | float)) or 1.0
        health.actions = [
            (name, float(ms), max(1, round(100 * float(ms) / total)))
            for name, ms in last.action_ms.items()
            if isinstance(ms, int | float)
        ]
    return health


def _spark(values: list[float], width: int, height: int) -> str:
    """Return SVG polyline points for ``values`` (oldest first), scaled to the box; "" when < 2 values."""
    if len(values) < 2:
        return ""
    top = max(values) or 1.0
    step = width / (len(values) - 1)
    pad = 2
    return " ".join(f"{i * step:.1f},{pad + (height - 2 * pad) * (1 - v / top):.1f}" for i, v in enumerate(values))


@dataclass
class QueueRow:
    """One queue of the tree with parsed resources (scheduler units) and its computed shares."""

    queue: Queue
    depth: int = 0
    children: list[str] = field(default_factory=list)
    capability: dict[str, int] = field(default_factory=dict)
    guarantee: dict[str, int] = field(default_factory=dict)
    allocated: dict[str, float] = field(default_factory=dict)
    request: dict[str, float] = field(default_factory=dict)
    deserved: dict[str, float] = field(default_factory=dict)
    deserved_busy: dict[str, float] = field(default_factory=dict)
    editable: bool = False
    visible: bool = True
    #: resource -> the ancestor whose smaller capability bounds this queue's (it can never use more)
    capability_from: dict[str, str] = field(default_factory=dict)

    @property
    def shown_deserved(self) -> dict[str, float]:
        """The deserved share the queue tree shows: for the current demand, or (an idle queue) if all were busy."""
        return self.deserved or self.deserved_busy

    @property
    def resources(self) -> list[dict[str, Any]]:
        """Return the per-resource view rows for CPU, memory and GPU."""
        out = []
        for name, label, unit in MAIN_RESOURCES:
            out.append(
                {
                    "name": name,
                    "label": label,
                    "unit": unit,
                    "allocated": self.allocated.get(name, 0.0),
                    "deserved": self.shown_deserved.get(name),
                    "deserved_busy": self.deserved_busy.get(name),
                    "guarantee": self.guarantee.get(name),
                    "capability": self.capability.get(name),
                    "capability_from": self.capability_from.get(name),
                }
            )
        return out


def _active_pods() -> QuerySet[Pod]:
    """Pending and Running pods not being deleted, annotated with ``bound`` (placed on a node)."""
    return Pod.objects.filter(phase__in=(PodPhase.PENDING, PodPhase.RUNNING), deletion_timestamp__isnull=True).annotate(
        bound=ExpressionWrapper(~Q(node_name=""), output_field=BooleanField())
    )


def demand_by_queue() -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Return (allocated, requested) per queue from bound and pending pods (two grouped queries).

    Like the scheduler's session, every queue with an unfinished PodGroup is in ``requested``, also
    when its pods do not exist yet (a gang waiting to be admitted): its share is its guarantee.
    """
    allocated: dict[str, dict[str, float]] = {}
    requested: dict[str, dict[str, float]] = {
        name: {}
        for name in PodGroup.objects.exclude(phase=PodGroupPhase.COMPLETED)
        .order_by()
        .values_list("queue_name", flat=True)
        .distinct()
    }
    sums = request_sums(_active_pods().filter(podgroup__isnull=False), "podgroup__queue_name", "bound")
    for (queue_name, bound), group in sums.items():
        add_into(requested.setdefault(queue_name, {}), group.requests)
        if bound:
            add_into(allocated.setdefault(queue_name, {}), group.requests)
    return allocated, requested


def queue_tree(
    scope: Scope,
    overrides: dict[str, dict[str, Any]] | None = None,
    *,
    include_hidden: bool = False,
    capacity: dict[str, float] | None = None,
    demand: tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]] | None = None,
) -> tuple[list[QueueRow], dict[str, float]]:
    """Return the shown queues in tree order with shares, and the cluster capacity used for them.

    ``overrides`` maps a queue name to ``weight`` / ``capability`` / ``guarantee`` (parsed) for a what-if.
    Shares are computed over every queue (the scheduler does), then filtered to those shown.
    ``capacity`` and ``demand`` (:func:`demand_by_queue`) save reading them again when the caller has them.
    """
    all_queues = list(Queue.objects.select_related("tenant").order_by("name"))
    visible = set(Queue.objects.filter(scope.queue_q()).values_list("pk", flat=True).distinct())
    if capacity is None:
        capacity = cluster.capacity()
    allocated, requested = demand if demand is not None else demand_by_queue()
    rows = {
        q.name: QueueRow(queue=q, capability=parse_map(q.capability), guarantee=parse_map(q.guarantee))
        for q in all_queues
    }
    for name, row in rows.items():
        change = (overrides or {}).get(name, {})
        if "capability" in change:
            row.capability = change["capability"]
        if "guarantee" in change:
            row.guarantee = change["guarantee"]
        if "weight" in change:
            row.queue.weight = change["weight"]
        row.allocated = allocated.get(name, {})
        row.request = requested.get(name, {})
        row.editable = scope.can_manage_queue(row.queue)
    parents = {q.parent_id for q in all_queues}
    leaves = [r for r in rows.values() if r.queue.name != ROOT_QUEUE]
    demands = [
        QueueDemand(r.queue.name, r.queue.weight, r.capability, r.guarantee, requested[r.queue.name])
        for r in leaves
        if r.queue.name in requested
    ]
    busy = [
        QueueDemand(r.queue.name, r.queue.weight, r.capability, r.guarantee, None)
        for r in leaves
        if r.queue.pk not in parents
    ]
    guarantees = sum_maps(r.guarantee for r in rows.values())  # the scheduler counts every queue's
    now = deserved_shares(capacity, demands, guarantees) if capacity else {}
    if_busy = deserved_shares(capacity, busy, guarantees) if capacity else {}
    for name, row in rows.items():
        spec_deserved: dict[str, float] = dict(parse_map(row.queue.deserved))
        row.deserved = spec_deserved or now.get(name, {})
        row.deserved_busy = spec_deserved or if_busy.get(name, {})
    ordered = _tree_order(rows)
    _bound_by_ancestors(ordered)
    for r in ordered:
        r.visible = r.queue.pk in visible
    return [r for r in ordered if include_hidden or r.visible], capacity


def _bound_by_ancestors(ordered: list[QueueRow]) -> None:
    """A queue never uses more than an ancestor's capability: show the smaller of its own and its nearest
    bounding ancestor's, and name that ancestor (``ordered`` is in tree order, parents first)."""
    by_pk = {r.queue.pk: r for r in ordered}
    for row in ordered:
        parent = by_pk.get(row.queue.parent_id) if row.queue.parent_id is not None else None
        if parent is None:
            continue
        for name, limit in parent.capability.items():
            own = row.capability.get(name)
            if own is None or own > limit:
                row.capability[name] = limit
                row.capability_from[name] = parent.capability_from.get(name, parent.queue.name)


def _tree_order(rows: dict[str, QueueRow]) -> list[QueueRow]:
    by_pk = {r.queue.pk: r for r in rows.values()}
    kids: dict[int | None, list[QueueRow]] = {}
    for r in rows.values():
        parent = r.queue.parent_id if r.queue.parent_id in by_pk else None
        kids.setdefault(parent, []).append(r)
    out: list[QueueRow] = []

    def walk(parent: int | None, depth: int) -> None:
        for r in sorted(kids.get(parent, []), key=lambda x: (x.queue.name != ROOT_QUEUE, x.queue.name)):
            r.depth = depth
            r.children = [c.queue.name for c in kids.get(r.queue.pk, [])]
            out.append(r)
            walk(r.queue.pk, depth + 1)

    walk(None, 0)
    return out


def queue_usage(scope: Scope, queue: Queue) -> dict[str, Any]:
    """Who uses a queue: per namespace, running/pending pods and requested resources.

    Namespaces the caller cannot read are folded into one "other tenants" line.
    """
    sums = request_sums(_active_pods().filter(podgroup__queue_name=queue.name), "namespace", "tenant_id", "bound")
    lines: dict[str, dict[str, Any]] = {}
    for (namespace, tenant_id, bound), group in sums.items():
        key = namespace if scope.access.can_read(tenant_id) else "other tenants"
        line = lines.setdefault(key, {"namespace": key, "running": 0, "pending": 0, "allocated": {}})
        if bound:
            line["running"] += group.pods
            add_into(line["allocated"], group.requests)
        else:
            line["pending"] += group.pods
    jobs = (
        scope.filter(
            Job.objects.filter(queue_name=queue.name).exclude(
                phase__in=("Completed", "Terminated", "Failed", "Aborted")
            )
        )
        .only("namespace", "name", "phase", "created_at")
        .order_by("-created_at")[:10]
    )
    ordered = sorted(lines.values(), key=lambda x: (-x["allocated"].get(CPU, 0), x["namespace"]))
    return {"lines": ordered, "jobs": list(jobs)}


def filtered_jobs(scope: Scope, params: dict[str, str]) -> tuple[QuerySet[Job], str]:
    """Return the scoped, filtered and sorted job queryset, and the normalised sort key."""
    qs = scope.filter(Job.objects.all())
    if params.get("queue"):
        qs = qs.filter(queue_name=params["queue"])
    if params.get("phase"):
        qs = qs.filter(phase=params["phase"])
    if params.get("namespace"):
        qs = qs.filter(namespace=params["namespace"])
    text = (params.get("q") or "").strip()
    if text:
        qs = qs.filter(Q(name__icontains=text) | Q(namespace__icontains=text) | Q(queue_name__icontains=text))
    sort = params.get("sort") or "-created"
    key = sort.lstrip("-")
    if key not in JOB_SORTS:
        sort, key = "-created", "created"
    field_name = JOB_SORTS[key]
    order = [f"-{field_name}" if sort.startswith("-") else field_name, "-id" if sort.startswith("-") else "id"]
    return qs.order_by(*order), sort


def resources_summary(capacity: dict[str, float], allocated: dict[str, float]) -> list[dict[str, Any]]:
    """Return the CPU / memory / GPU rows for capacity-vs-allocation bars."""
    return [
        {
            "name": name,
            "label": label,
            "unit": unit,
            "capacity": capacity.get(name, 0.0),
            "allocated": allocated.get(name, 0.0),
        }
        for name, label, unit in MAIN_RESOURCES
    ]


__all__ = ["CPU", "GPU", "MEMORY"]
