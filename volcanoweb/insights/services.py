"""Insights read services: queue history, job timelines, time-to-start, cycle inputs; and pruning.

Reads are tenant-scoped by the caller's :class:`~volcanoweb.tenancy.access.Access`: a queue's history
needs the queue to be visible, a job's timeline needs read access to its tenant, and cycle inputs
(the whole cluster's state) are for platform admins only.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from scheduler.quantity import format_quantity, parse_window
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.csvsafe import safe_row
from volcanoweb.core.errors import BadRequest, Cause, Forbidden, not_found
from volcanoweb.insights.models import (
    CycleDecision,
    CycleInput,
    DecisionKind,
    EntryKind,
    QueueSample,
    Resolution,
    TimelineEntry,
)
from volcanoweb.insights.recording import input_text, prune_inputs
from volcanoweb.jobs.models import Job
from volcanoweb.manifests.parse import JOB, QUEUE, SCHEDULER_CONFIG
from volcanoweb.queues.models import Queue
from volcanoweb.queues.services import get_visible_queue
from volcanoweb.tenancy.access import Access
from volcanoweb.tenancy.models import Namespace

MAX_POINTS = 2000
FIELDS = ("allocated", "deserved", "guarantee", "capability", "demand")
OTHER_TENANT = "(a job of another tenant)"


# --------------------------------------------------------------------------- parameters


def window_seconds(value: str, field: str) -> float:
    """The seconds of a window parameter (:func:`scheduler.quantity.parse_window`), or a 400 naming ``field``."""
    try:
        return parse_window(value)
    except ValueError as exc:
        raise _bad(field, str(exc)) from None


def parse_time(value: str | None, field: str, now: datetime, default: datetime) -> datetime:
    """Return a time from an ISO 8601 timestamp, ``now``, or a duration back from now (``1h``, ``-1h``)."""
    if value is None or not value.strip():
        return default
    text = value.strip()
    if text == "now":
        return now
    stamp = parse_datetime(text.replace(" ", "+")) if "T" in text or "-" in text[1:] else None
    if stamp is not None:
        return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=now.tzinfo)
    try:
        seconds = window_seconds(text.lstrip("-"), field)
    except BadRequest:
        message = f"invalid time {value!r}: expected an ISO 8601 timestamp, 'now' or a duration ago such as 1h"
        raise _bad(field, message) from None
    try:
        return now - timedelta(seconds=seconds)
    except OverflowError:  # beyond datetime's range (year 1): no history is that old
        raise _bad(field, f"invalid time {value!r}: too far in the past") from None


def _bad(field: str, message: str) -> BadRequest:
    return BadRequest(f"{field}: {message}", causes=[Cause(field, message)])


# --------------------------------------------------------------------------- queue history


@dataclass
class HistoryQuery:
    """A validated history request."""

    start: datetime
    end: datetime
    step: float
    resolution: str


def history_query(start: str | None, end: str | None, step: str | None, now: datetime | None = None) -> HistoryQuery:
    """Validate ``from``/``to``/``step`` and choose the roll-up to read."""
    now = now or timezone.now()
    to = parse_time(end, "to", now, now)
    frm = parse_time(start, "from", now, to - timedelta(hours=1))
    if frm >= to:
        raise _bad("from", "must be before 'to'")
    span = (to - frm).total_seconds()
    default = 0.0 if span <= 3600 else (60.0 if span <= 86400 else 3600.0)
    seconds = window_seconds(step, "step") if step else default
    if seconds and span / seconds > MAX_POINTS:
        raise _bad(
            "step",
            f"too small for the range: at most {MAX_POINTS} points (use step >= {math.ceil(span / MAX_POINTS)}s)",
        )
    age = (now - frm).total_seconds()
    if seconds < 60 and age <= float(settings.INSIGHTS_CYCLE_RETENTION):
        resolution = Resolution.CYCLE
    elif seconds < 3600 and age <= float(settings.INSIGHTS_MINUTE_RETENTION):
        resolution = Resolution.MINUTE
    else:
        resolution = Resolution.HOUR
    if resolution == Resolution.CYCLE and not seconds:
        count = QueueSample.objects.filter(resolution=resolution, bucket__gte=frm, bucket__lte=to).count()
        if count > MAX_POINTS * 50:
            raise _bad("step", f"the range holds too many cycles; give a step such as {math.ceil(span / MAX_POINTS)}s")
    return HistoryQuery(frm, to, seconds, resolution)


def _mean(rows: list[QueueSample], name: str) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    weight = sum(r.samples for r in rows) or 1
    for r in rows:
        for k, v in (getattr(r, name) or {}).items():
            total[k] += float(v) * r.samples
    return {k: round(v / weight, 3) for k, v in sorted(total.items()) if v}


FINER: dict[str, str] = {Resolution.HOUR: Resolution.MINUTE, Resolution.MINUTE: Resolution.CYCLE}
SPAN: dict[str, timedelta] = {Resolution.MINUTE: timedelta(minutes=1), Resolution.HOUR: timedelta(hours=1)}


def _samples(queue: str, resolution: str, start: datetime, end: datetime) -> list[QueueSample]:
    """Return the queue's samples of ``resolution`` in the range, plus finer ones not rolled up yet."""
    rows = list(
        QueueSample.objects.filter(queue=queue, resolution=resolution, bucket__gte=start, bucket__lte=end).order_by(
            "bucket", "id"
        )
    )
    finer = FINER.get(resolution)
    if finer is None:
        return rows
    last = QueueSample.objects.filter(queue=queue, resolution=resolution).order_by("-bucket").first()
    rolled = last.bucket + SPAN[resolution] if last is not None else start
    return rows + _samples(queue, finer, max(start, rolled), end)


def _floor(t: datetime, resolution: str) -> datetime:
    if resolution == Resolution.MINUTE:
        return t.replace(second=0, microsecond=0)
    return t.replace(minute=0, second=0, microsecond=0)


def rollup(now: datetime | None = None) -> dict[str, int]:
    """Fold complete minutes of per-cycle samples into minute samples, and complete hours of those into hours."""
    now = now or timezone.now()
    out: dict[str, int] = {}
    for resolution, source in ((Resolution.MINUTE, Resolution.CYCLE), (Resolution.HOUR, Resolution.MINUTE)):
        limit = _floor(now, resolution)
        done = {
            r["queue"]: r["last"]
            for r in QueueSample.objects.filter(resolution=resolution).values("queue").annotate(last=Max("bucket"))
        }
        groups: dict[tuple[str, datetime], list[QueueSample]] = defaultdict(list)
        for row in QueueSample.objects.filter(resolution=source, bucket__lt=limit).order_by("bucket", "id"):
            last = done.get(row.queue)
            if last is not None and row.bucket < last + SPAN[resolution]:
                continue
            groups[(row.queue, _floor(row.bucket, resolution))].append(row)
        created = [
            QueueSample(
                resolution=resolution,
                queue=queue,
                bucket=bucket,
                samples=sum(r.samples for r in rows),
                run_id=rows[-1].run_id,
                allocated=_mean(rows, "allocated"),
                deserved=_mean(rows, "deserved"),
                demand=_mean(rows, "demand"),
                jobs=_mean(rows, "jobs"),
                guarantee=rows[-1].guarantee,
                capability=rows[-1].capability,
            )
            for (queue, bucket), rows in sorted(groups.items())
        ]
        QueueSample.objects.bulk_create(created, ignore_conflicts=True, batch_size=500)
        out[resolution] = len(created)
    return out


def queue_history(access: Access, name: str, query: HistoryQuery) -> dict[str, Any]:
    """Return a visible queue's samples between ``query.start`` and ``query.end`` (averaged per step)."""
    queue = get_visible_queue(access, name)
    rows = sorted(_samples(queue.name, query.resolution, query.start, query.end), key=lambda r: (r.bucket, r.id))
    groups: list[list[QueueSample]] = []
    if query.step:
        by_bucket: dict[int, list[QueueSample]] = defaultdict(list)
        for r in rows:
            by_bucket[int((r.bucket - query.start).total_seconds() // query.step)].append(r)
        groups = [by_bucket[i] for i in sorted(by_bucket)]
    else:
        groups = [[r] for r in rows]
    points = []
    resources: set[str] = set()
    for group in groups:
        if query.step:
            index = int((group[0].bucket - query.start).total_seconds() // query.step)
            at = query.start + timedelta(seconds=index * query.step)
        else:
            at = group[0].bucket
        last = group[-1]
        point: dict[str, Any] = {"time": at.isoformat(), "samples": sum(r.samples for r in group)}
        for field in ("allocated", "deserved", "demand", "jobs"):
            point[field] = _mean(group, field)
        point["guarantee"] = dict(last.guarantee or {})
        point["capability"] = dict(last.capability or {})
        for field in FIELDS:
            resources.update(k for k in point[field] if k != "pods")
        points.append(point)
    return {
        "apiVersion": "v1",
        "kind": "QueueHistory",
        "queue": queue.name,
        "from": query.start.isoformat(),
        "to": query.end.isoformat(),
        "step": query.step,
        "resolution": query.resolution,
        "units": {"cpu": "millicores", "memory": "bytes", "other": "units (bytes for storage)"},
        "resources": sorted(resources, key=lambda r: (r not in ("cpu", "memory"), r)),
        "points": points,
        "markers": markers(queue, query.start, query.end),
    }


def markers(queue: Queue, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Return the queue's configuration changes and scheduler configuration activations in the range."""
    entries = AuditEntry.objects.filter(at__gte=start, at__lte=end).filter(kind__in=(QUEUE.kind, SCHEDULER_CONFIG.kind))
    out: list[dict[str, Any]] = []
    for e in entries.order_by("at", "id")[:500]:
        if e.kind == QUEUE.kind and e.object_key != queue.name:
            continue
        if e.kind == SCHEDULER_CONFIG.kind and e.action not in ("activate", "create", "update"):
            continue
        version = (e.after or {}).get("version")
        text = (
            f"queue: {e.action} by {e.actor_name}"
            if e.kind == QUEUE.kind
            else f"scheduler configuration v{version}: {e.action} by {e.actor_name}"
        )
        out.append(
            {
                "label": str(len(out) + 1),  # drawn on the chart at the marker, and in front of the list entry
                "time": e.at.isoformat(),
                "kind": "queue" if e.kind == QUEUE.kind else "scheduler-config",
                "action": e.action,
                "actor": e.actor_name,
                "auditId": e.pk,
                "text": text,
            }
        )
    return out


def history_csv(body: Mapping[str, Any]) -> str:
    """Return the history as CSV: one row per point and resource, then the PodGroup counts per phase."""
    phases = sorted({p for point in body["points"] for p in point["jobs"]})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(safe_row(["time", "queue", "resource", *FIELDS, *(f"jobs_{p.lower()}" for p in phases)]))
    for point in body["points"]:
        for resource in body["resources"]:
            writer.writerow(
                safe_row(
                    [
                        point["time"],
                        body["queue"],
                        resource,
                        *(point[f].get(resource, 0) if point[f] or f != "capability" else "" for f in FIELDS),
                        *(point["jobs"].get(p, 0) for p in phases),
                    ]
                )
            )
    return out.getvalue()


# --------------------------------------------------------------------------- job timelines


def get_readable_job(access: Access, namespace: str, name: str) -> Job:
    """Return a job the caller may read, or raise NotFound (also for other tenants' jobs)."""
    job = Job.objects.filter(namespace=namespace, name=name).first()
    if job is None or not access.can_read(job.tenant_id):
        raise not_found(JOB.qualified_resource, name, JOB.kind, JOB.group)
    return job


def readable_namespaces(access: Access) -> set[str] | None:
    """Return the namespaces the caller may read (None: all)."""
    if access.platform_admin:
        return None
    return set(Namespace.objects.filter(tenant_id__in=access.readable_tenant_ids()).values_list("name", flat=True))


def _clock(t: datetime) -> str:
    return timezone.localtime(t).strftime("%H:%M:%S")


def _redact(numbers: Mapping[str, Any], visible: set[str] | None) -> dict[str, Any]:
    out = dict(numbers)
    if "holders" in out:
        out["holders"] = [
            h
            if visible is None or h["podgroup"].split("/", 1)[0] in visible
            else {**h, "podgroup": OTHER_TENANT, "job": OTHER_TENANT}
            for h in out["holders"]
        ]
    return out


def _usage(numbers: Mapping[str, Any]) -> str:
    """Return "cpu 4/4 used" for the requested dimensions of a queue-quota reason (empty otherwise)."""
    requested, capability = numbers.get("requested") or {}, numbers.get("capability") or {}
    allocated = numbers.get("queue_allocated") or {}
    parts = []
    for dim in requested:
        if dim in capability and dim != "pods":
            used, cap = format_quantity(dim, int(allocated.get(dim, 0))), format_quantity(dim, int(capability[dim]))
            parts.append(f"{dim} {used}/{cap} used")
    return ", ".join(parts)


_INSUFFICIENT = re.compile(r"insufficient ([\w./-]+(?:, [\w./-]+)*)")


def _short_dims(message: str) -> list[str]:
    """The resources a reason names as insufficient (``... insufficient cpu, nvidia.com/gpu in queue q``)."""
    found = _INSUFFICIENT.search(message)
    return found.group(1).split(", ") if found else []


def _summary(entry: TimelineEntry, numbers: Mapping[str, Any]) -> str:
    if entry.kind == EntryKind.MILESTONE:
        return f"{_clock(entry.started_at)} {entry.message}"
    span = f"{_clock(entry.started_at)}-{_clock(entry.ended_at) if entry.ended_at else 'now'}"
    text = f"{span} {entry.message or entry.reason}"
    holders = numbers.get("holders") or []
    short = _short_dims(entry.message or "")
    if short:  # only the jobs that hold what the gang lacks (a CPU job does not stand in the way of GPUs)
        holders = [h for h in holders if any((h.get("requests") or {}).get(d, 0) > 0 for d in short)]
    usage = _usage(numbers)
    if holders or usage:
        users = ", ".join(dict.fromkeys(h.get("job") or h["podgroup"] for h in holders))
        detail = "; ".join(p for p in (usage, f"by {users}" if users else "") if p)
        text += f" (queue {entry.queue}: {detail})"
    return text


def job_timeline(access: Access, job: Job, now: datetime | None = None) -> dict[str, Any]:
    """Return the job's wait intervals and milestones, oldest first, with a one-line summary each."""
    now = now or timezone.now()
    visible = readable_namespaces(access)
    entries = list(TimelineEntry.objects.filter(job=job).order_by("started_at", "id"))
    items = []
    for e in entries:
        numbers = _redact(e.numbers or {}, visible)
        end = e.ended_at or now
        items.append(
            {
                "kind": e.kind,
                "reason": e.reason,
                "plugin": e.plugin,
                "message": e.message,
                "numbers": numbers,
                "queue": e.queue,
                "from": e.started_at.isoformat(),
                "to": e.ended_at.isoformat() if e.ended_at else None,
                "open": e.kind == EntryKind.WAIT and e.ended_at is None,
                "seconds": round((end - e.started_at).total_seconds(), 3),
                "summary": _summary(e, numbers),
            }
        )
    bound = next((e for e in entries if e.kind == EntryKind.MILESTONE and e.reason == "Bound"), None)
    return {
        "apiVersion": "v1",
        "kind": "JobTimeline",
        "namespace": job.namespace,
        "name": job.name,
        "queue": job.queue_name,
        "submitted": job.created_at.isoformat(),
        "started": bound.started_at.isoformat() if bound else None,
        "waitSeconds": round(((bound.started_at if bound else now) - job.created_at).total_seconds(), 3),
        "entries": items,
    }


def percentile(values: list[float], q: float) -> float:
    """Return the ``q`` percentile (0..100) of ``values`` by linear interpolation between ranks."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def time_to_start(access: Access, name: str, days: float = 7.0, now: datetime | None = None) -> dict[str, Any]:
    """Return p50/p90/p99 of submission-to-first-bind seconds of the queue's jobs started in the last ``days``."""
    queue = get_visible_queue(access, name)
    now = now or timezone.now()
    since = now - timedelta(days=days)
    rows = (
        TimelineEntry.objects.filter(
            queue=queue.name,
            kind=EntryKind.MILESTONE,
            reason="Bound",
            started_at__gte=since,
            job__created_at__isnull=False,  # the job still there (entries have no database constraint on it)
        )
        .order_by("job_id", "started_at")
        .values_list("job_id", "started_at", "job__created_at")
    )
    first: dict[int, float] = {}
    for job_id, started, created in rows:
        if job_id not in first:
            first[job_id] = max(0.0, (started - created).total_seconds())
    values = list(first.values())
    return {
        "queue": queue.name,
        "days": days,
        "jobs": len(values),
        "p50": round(percentile(values, 50), 3),
        "p90": round(percentile(values, 90), 3),
        "p99": round(percentile(values, 99), 3),
        "how": "seconds from a job's creation to the cycle that bound its first pods, over jobs bound in the range",
    }


# --------------------------------------------------------------------------- cycle inputs


def _require_admin(access: Access, what: str) -> None:
    if not access.platform_admin:
        raise Forbidden(
            f"{what} holds every tenant's pods and nodes: only platform admins may read it", kind="CycleInput"
        )


@dataclass(frozen=True)
class CycleFilter:
    """The cycle list's filters: a job (``ns/name``, or a name in any namespace), a queue, a decision kind."""

    job: str = ""
    queue: str = ""
    decision: str = ""

    @property
    def active(self) -> bool:
        return bool(self.job or self.queue or self.decision)

    def matches(self, item: Mapping[str, Any]) -> bool:
        """Whether one of a cycle's decisions (as :func:`list_cycles` lists them) is one the filter asks about."""
        job = str(item["job"])
        return (
            (not self.job or job == self.job or ("/" not in self.job and job.endswith(f"/{self.job}")))
            and (not self.queue or item["queue"] == self.queue)
            and (not self.decision or item["kind"] == self.decision)
        )


def cycle_filter(params: Mapping[str, str]) -> CycleFilter:
    """Read the cycle list's filters from query parameters (``job``, ``queue``, ``decision``); 400 on a bad kind."""
    decision = params.get("decision", "").strip()
    if decision and decision not in DecisionKind.values:
        raise _bad("decision", f"one of {', '.join(DecisionKind.values)}, not {decision!r}")
    return CycleFilter(params.get("job", "").strip(), params.get("queue", "").strip(), decision)


def list_cycles(access: Access, limit: int = 50, where: CycleFilter | None = None) -> list[dict[str, Any]]:
    """Return the kept cycles (newest first): the recent ones, and those that decided something; with ``where``,
    only the cycles that decided about that job, queue or kind (each cycle names the jobs it decided about)."""
    _require_admin(access, "a cycle's input")
    rows = CycleInput.objects.select_related("run").defer("data").order_by("-run_id")
    if where is not None and where.active:
        decisions = CycleDecision.objects.all()
        if where.job:
            job = where.job
            decisions = decisions.filter(job=job) if "/" in job else decisions.filter(job__endswith=f"/{job}")
        if where.queue:
            decisions = decisions.filter(queue=where.queue)
        if where.decision:
            decisions = decisions.filter(kind=where.decision)
        rows = rows.filter(decided=True, run_id__in=decisions.values("run_id"))
    page = list(rows[:limit])
    named: dict[int, list[dict[str, Any]]] = defaultdict(list)
    deciding = [r.run_id for r in page if r.decided]
    for d in CycleDecision.objects.filter(run_id__in=deciding).order_by("kind", "job"):
        item = {"kind": d.kind, "job": d.job, "podgroup": d.podgroup_key, "queue": d.queue, "pods": d.pods}
        named[d.run_id].append(item)
    if where is not None and where.active:  # the decisions the filter asked about first
        for items in named.values():
            items.sort(key=lambda item: not where.matches(item))
    return [
        {
            "cycle": r.run_id,
            "at": r.at.isoformat(),
            "configVersion": r.config_version,
            "bytes": r.size,
            "binds": r.run.binds,
            "evictions": r.run.evictions,
            "unschedulable": len(r.run.unschedulable or {}),
            "decided": r.decided,
            "decisions": named.get(r.run_id, []),
        }
        for r in page
    ]


def cycle_file(access: Access, cycle: int) -> str:
    """Return the replayable input file of a kept cycle."""
    _require_admin(access, "a cycle's input")
    row = CycleInput.objects.filter(run_id=cycle).first()
    if row is None:
        raise not_found("cycles", str(cycle), "CycleInput")
    return input_text(row)


# --------------------------------------------------------------------------- pruning


def prune(now: datetime | None = None) -> dict[str, int]:
    """Roll queue samples up (:func:`rollup`), then delete rows older than their retention (``INSIGHTS_*``)."""
    now = now or timezone.now()
    out: dict[str, int] = {f"rolled_{k}": v for k, v in rollup(now).items()}
    for resolution, seconds in (
        (Resolution.CYCLE, settings.INSIGHTS_CYCLE_RETENTION),
        (Resolution.MINUTE, settings.INSIGHTS_MINUTE_RETENTION),
        (Resolution.HOUR, settings.INSIGHTS_HOUR_RETENTION),
    ):
        cutoff = now - timedelta(seconds=float(seconds))
        out[resolution] = QueueSample.objects.filter(resolution=resolution, bucket__lt=cutoff).delete()[0]
    cutoff = now - timedelta(seconds=float(settings.INSIGHTS_TIMELINE_RETENTION))
    out["timeline"] = TimelineEntry.objects.filter(ended_at__lt=cutoff).delete()[0]
    out["inputs"], out["snapshots"] = prune_inputs(now)
    return out
