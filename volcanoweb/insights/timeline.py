"""The jobs' timelines: each PodGroup's wait intervals and its milestones, as a cycle leaves them.

A wait interval opens when the scheduler first gives a PodGroup a reason, stays open while later cycles
give it the same reason (the same kind and words, whatever its numbers) and closes when the reason
changes or goes. Milestones (enqueued, running, first pods bound) are closed entries of their cycle.
A wait about its queue's quota names the jobs holding the queue's resources.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import connection

from scheduler import CycleResult, Snapshot
from scheduler.model import JobPhase, Task
from scheduler.result import JobReason, ReasonKind
from volcanoweb.core.batchsql import Statement, copy_rows, db_value
from volcanoweb.core.idlist import one_of
from volcanoweb.insights.models import EntryKind, TimelineEntry
from volcanoweb.insights.taskscan import TaskScan
from volcanoweb.jobs.models import PodGroup
from volcanoweb.scheduling.snapshots import SnapshotInfo

#: Reasons about a queue's quota: the timeline names the jobs holding the queue's resources.
QUEUE_REASONS = (ReasonKind.ENQUEUE_REJECTED, ReasonKind.QUEUE_OVERUSED, ReasonKind.CAPABILITY_EXCEEDED)


def open_waits() -> Statement:
    """The query of each PodGroup's open wait interval: (id, PodGroup key, reason, message) rows."""
    table = connection.ops.quote_name(TimelineEntry._meta.db_table)
    sql = f"SELECT id, podgroup_key, reason, message FROM {table} WHERE kind = %s AND ended_at IS NULL"
    return sql, [EntryKind.WAIT.value]


_NO_DIGITS = str.maketrans("", "", "0123456789")


def same_reason(message: str, other: str) -> bool:
    """Whether two messages of one reason kind say the same but for their numbers (one wait interval).

    A waiting job's reason keeps its words from cycle to cycle while its numbers move (``queue has
    allocated {'cpu': 7800000, …}``, ``3/500 nodes are available``): the interval keeps the message and
    numbers it started with, and a new one starts when the kind or the words change."""
    return message == other or message.translate(_NO_DIGITS) == other.translate(_NO_DIGITS)


def wait_opens(row: tuple[int, str, str] | None, reason: JobReason) -> bool:
    """Whether ``reason`` opens a wait interval: none is open (``row``: the open one's id, reason kind and message),
    or the open one's kind or words differ (a new verdict)."""
    return row is None or row[1] != reason.kind or not same_reason(row[2], reason.message)


def by_key(rows: list[tuple[Any, ...]]) -> dict[str, tuple[int, str, str]]:
    """The :func:`open_waits` rows by PodGroup key: key → (id, reason, message)."""
    return {key: (pk, reason, message) for pk, key, reason, message in rows}


def record_timeline(
    run_id: int,
    info: SnapshotInfo,
    result: CycleResult,
    now: datetime,
    open_rows: dict[str, tuple[int, str, str]],
    scan: TaskScan | None = None,
) -> None:
    """Close, open or keep each PodGroup's wait interval (``open_rows``: key → id, reason, message); add milestones.

    ``scan``: the cycle's shared pass over its tasks (see :class:`TaskScan`; made here when not given)."""
    snapshot = info.snapshot
    opening = _close_changed_waits(run_id, result, now, open_rows)
    first_binds, bound_tasks = _first_binds(snapshot, result)
    milestones = {k: v for k, v in result.podgroups.items() if v in (JobPhase.INQUEUE, JobPhase.RUNNING)}
    keys = set(opening) | first_binds | set(milestones)
    if not keys:
        return
    ids = [info.podgroup_ids[k] for k in keys if k in info.podgroup_ids]
    groups_by_key = {
        f"{g['namespace']}/{g['name']}": g
        for g in PodGroup.objects.filter(one_of("pk", ids)).values(
            "namespace", "name", "job_id", "tenant_id", "queue_name"
        )
    }
    quota_queues = {
        groups_by_key[k]["queue_name"] for k, r in opening.items() if r.kind in QUEUE_REASONS and k in groups_by_key
    }
    scan = scan if scan is not None else TaskScan(snapshot, result)
    holders = scan.holders(quota_queues) if quota_queues else {}
    if holders:
        _name_holders(holders)
    rows = _Rows(run_id, now, groups_by_key)
    no_numbers = db_value(TimelineEntry, "numbers", {})
    for key, reason in sorted(opening.items()):
        numbers: dict[str, Any] = dict(reason.numbers)
        queue = groups_by_key[key]["queue_name"] if key in groups_by_key else None
        if reason.kind in QUEUE_REASONS and queue in holders:
            numbers["holders"] = [h for h in holders[queue] if h["podgroup"] != key]
        if reason.fit_errors:
            numbers["fitErrors"] = dict(reason.fit_errors)
        prepared = db_value(TimelineEntry, "numbers", numbers)
        rows.add(key, EntryKind.WAIT, str(reason.kind), reason.plugin, reason.message, prepared, False)
    for key, phase in sorted(milestones.items()):
        label = "Enqueued" if phase == JobPhase.INQUEUE else "Running"
        rows.add(key, EntryKind.MILESTONE, str(phase), "", f"{label} (PodGroup phase {phase})", no_numbers, True)
    if first_binds:
        pods_bound = Counter(t.job for t in bound_tasks if t.job in first_binds)
        for key in sorted(first_binds):
            count = pods_bound[key]
            pods = db_value(TimelineEntry, "numbers", {"pods": count})
            rows.add(key, EntryKind.MILESTONE, "Bound", "", f"{count} pod(s) bound", pods, True)
    copy_rows(TimelineEntry, _TIMELINE_COLUMNS, rows.rows)


def _close_changed_waits(
    run_id: int, result: CycleResult, now: datetime, open_rows: dict[str, tuple[int, str, str]]
) -> dict[str, JobReason]:
    """Close the open waits whose reason changed or went; return the reasons whose wait opens now, by key."""
    close: list[int] = []
    opening: dict[str, Any] = {}
    for key, reason in result.unschedulable.items():
        row = open_rows.get(key)
        if not wait_opens(row, reason):
            continue
        if row is not None:
            close.append(row[0])
        opening[key] = reason
    close += [row[0] for key, row in open_rows.items() if key not in result.unschedulable]
    if close:
        TimelineEntry.objects.filter(one_of("pk", close)).update(ended_at=now, ended_run=run_id)
    return opening


def _first_binds(snapshot: Snapshot, result: CycleResult) -> tuple[set[str], list[Task]]:
    """The PodGroups that got their first pods bound in this cycle (they were not running), and the bound tasks."""
    first_binds: set[str] = set()
    bound_tasks = []
    if result.binds:
        bound = result.binds
        names = {key.partition("/")[2] for key in bound}  # a name first: cheaper than each task's key
        bound_tasks = [t for t in snapshot.tasks if t.name in names and t.key in bound]
        groups = {t.job for t in bound_tasks if t.job}
        group_names = {key.partition("/")[2] for key in groups}
        phases = {j.key: j.phase for j in snapshot.jobs if j.name in group_names and j.key in groups}
        first_binds = {g for g in groups if phases.get(g) != JobPhase.RUNNING}
    return first_binds, bound_tasks


def _name_holders(holders: dict[str, list[dict[str, Any]]]) -> None:
    """Add each holding PodGroup's job name (the PodGroup's own name when it has no job) to its entry."""
    named = {(h["podgroup"].split("/", 1)[0], h["podgroup"].split("/", 1)[1]) for hs in holders.values() for h in hs}
    job_names = {
        f"{ns}/{name}": job or name
        for ns, name, job in PodGroup.objects.filter(name__in=[n for _, n in named]).values_list(
            "namespace", "name", "job__name"
        )
    }
    for hs in holders.values():
        for h in hs:
            h["job"] = job_names.get(h["podgroup"], h["podgroup"].split("/", 1)[1])


class _Rows:
    """The cycle's new timeline rows, in :data:`_TIMELINE_COLUMNS` order; an entry about a PodGroup that is not
    in ``groups`` (deleted since the snapshot) is left out."""

    def __init__(self, run_id: int, now: datetime, groups: Mapping[str, Mapping[str, Any]]) -> None:
        self.run_id, self.groups = run_id, groups
        self.at = db_value(TimelineEntry, "started_at", now)
        self.rows: list[tuple[Any, ...]] = []

    def add(self, key: str, kind: str, reason: str, plugin: str, message: str, numbers: Any, ended: bool) -> None:
        g = self.groups.get(key)
        if g is None:
            return
        group = (key, g["namespace"], g["job_id"], g["tenant_id"], g["queue_name"])
        at, run_id = self.at, self.run_id
        self.rows.append(
            (
                *group,
                kind,
                reason,
                plugin,
                message,
                numbers,
                at,
                at if ended else None,
                run_id,
                run_id if ended else None,
            )
        )


#: The columns of a new timeline row, in the order :func:`record_timeline` gives its values.
_TIMELINE_COLUMNS = (
    "podgroup_key",
    "namespace",
    "job_id",
    "tenant_id",
    "queue",
    "kind",
    "reason",
    "plugin",
    "message",
    "numbers",
    "started_at",
    "ended_at",
    "started_run",
    "ended_run",
)
