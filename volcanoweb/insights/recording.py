"""Recording a cycle's insights: its replayable input, the jobs' wait intervals and the queues' samples.

The scheduling cycle hands each committed cycle to :mod:`volcanoweb.insights.recorder`, which calls
:func:`record_run` once for it, in line or in its writer thread. Recording
only observes: it never changes a row the scheduler reads, and a failure here is logged and leaves
the cycle's outcome untouched.
"""

from __future__ import annotations

import logging
import operator
import threading
import time
import uuid
import zlib
from collections import Counter, defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from scheduler import CycleResult, Resource, SchedulerConfig, Snapshot
from scheduler.config import dump_config
from scheduler.model import JobPhase, TaskStatus
from scheduler.replay import SnapshotEncoder, cycle_input_text, encode_clock
from scheduler.result import ReasonKind, cycle_json
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.batchsql import Statement, copy_rows, db_value, execute_batch, insert_statement
from volcanoweb.core.idlist import one_of
from volcanoweb.core.stageprof import stage
from volcanoweb.insights.models import (
    CycleDecision,
    CycleInput,
    CycleSnapshot,
    DecisionKind,
    EntryKind,
    QueueSample,
    Resolution,
    TimelineEntry,
)
from volcanoweb.jobs.models import PodGroup
from volcanoweb.manifests.parse import QUEUE, SCHEDULER_CONFIG
from volcanoweb.scheduling.models import SchedulingRun
from volcanoweb.scheduling.snapshots import SnapshotInfo

log = logging.getLogger(__name__)

#: Reasons about a queue's quota: the timeline names the jobs holding the queue's resources.
QUEUE_REASONS = (ReasonKind.ENQUEUE_REJECTED, ReasonKind.QUEUE_OVERUSED, ReasonKind.CAPABILITY_EXCEEDED)
MAX_HOLDERS = 5
_PLACED = frozenset(
    (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.PIPELINED)
)

_lock = threading.Lock()
_encoder = SnapshotEncoder()
_compressor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="insights-zlib")
_config_text: dict[int, tuple[SchedulerConfig, str]] = {}
_SNAPSHOT_KEY, _END = '"snapshot":', "}\n"
_EMPTY_TAIL = _SNAPSHOT_KEY + _END  # cycle_input_text("", …) ends so: the snapshot's text goes before "}\n"


def _yaml(config: SchedulerConfig) -> str:
    hit = _config_text.get(id(config))
    if hit is None or hit[0] is not config:
        _config_text.clear()
        hit = (config, dump_config(config))
        _config_text[id(config)] = hit
    return hit[1]


@dataclass(frozen=True)
class RunRef:
    """What the recording needs of the cycle's run row (the cycle keeps changing its own instance)."""

    pk: int
    started_at: datetime
    config_version: int


#: The advisory lock (PostgreSQL) that serialises recordings across processes; SQLite's writer lock does there.
RECORDER_LOCK = (0x1D51, 1)


@stage("insights record")
def record_run(
    run: RunRef, info: SnapshotInfo, result: CycleResult, config: SchedulerConfig, *, save_ms: bool = True
) -> float:
    """Record what this committed cycle saw and decided; return the milliseconds it took (never raises).

    A quiet cycle (no wait opened or closed, the snapshot text stored before) sends two batches of
    statements (:func:`~volcanoweb.core.batchsql.execute_batch`, one round trip each on PostgreSQL): the
    setting, the lock, the shared snapshot's claim, the later-recording check and the open waits' read;
    then the sample and input inserts (and, with ``save_ms``, the run's ``record_ms``).

    Recordings of one database take turns (:data:`RECORDER_LOCK`). One that comes after a later
    cycle's (two processes' writers, see :mod:`volcanoweb.insights.recorder`) stores its samples and
    input but not its wait intervals: the later cycle's already say where each job's wait stands."""
    started = time.perf_counter()
    try:
        now = timezone.now()
        pending = _compress_input(run, info.snapshot, result, config, now)
        with transaction.atomic():
            reads: list[Statement] = [*_no_flush_wait()]
            if connection.vendor == "postgresql":
                reads.append(("SELECT pg_advisory_xact_lock(%s, %s)", list(RECORDER_LOCK)))
            claim = _claim_snapshot(run, pending)
            claim_at = len(reads)
            reads += claim
            later_at = len(reads)
            reads += [_later_recorded(run.pk), _open_waits()]
            outcomes = execute_batch(reads)
            scan = _TaskScan(info.snapshot, result)
            open_rows = _by_key(outcomes[later_at + 1].rows)
            if outcomes[later_at].rows:
                log.info("insights: cycle %s recorded after a later one: its wait intervals are left out", run.pk)
            else:
                record_timeline(run.pk, info, result, now, open_rows, scan)
            writes = record_queue_samples(run.pk, info.snapshot, result, now, scan)
            if pending is not None:
                claimed = outcomes[claim_at].rowcount == 1 if claim else None
                decided = cycle_decisions(run.pk, info, result, open_rows)
                pending.decided = bool(decided)
                writes += store_input(run, pending, claimed)
                writes += [insert_statement(decided[i : i + 500]) for i in range(0, len(decided), 500)]
            if save_ms:  # the time until the last batch: its commit does not wait for the WAL flush
                writes.append(_save_record_ms(run.pk, (time.perf_counter() - started) * 1000))
            execute_batch(writes)
            if pending is not None and run.pk % 10 == 0:
                prune_inputs()
    except Exception:  # observation must never break scheduling
        log.exception("recording insights of cycle %s failed", run.pk)
    return (time.perf_counter() - started) * 1000


def _later_recorded(run_id: int) -> Statement:
    """The query that finds a later run recorded already (a row when there is one)."""
    table = connection.ops.quote_name(SchedulingRun._meta.db_table)
    return f"SELECT id FROM {table} WHERE id > %s AND record_ms > 0 LIMIT 1", [run_id]


def _save_record_ms(run_id: int, ms: float) -> Statement:
    table = connection.ops.quote_name(SchedulingRun._meta.db_table)
    return f"UPDATE {table} SET record_ms = %s WHERE id = %s", [max(ms, 0.001), run_id]


def _no_flush_wait() -> list[Statement]:
    """PostgreSQL: commit the recording without waiting for its WAL flush (``synchronous_commit`` off).

    The recording is observation: a crash may lose the last few cycles' rows (about three WAL writer
    delays), never part of one (an asynchronous commit stays atomic), and a cycle no longer waits for a
    second disk flush after its decisions' own commit."""
    # only in a transaction of its own: never for an enclosing transaction's other writes
    if connection.vendor == "postgresql" and len(connection.atomic_blocks) == 1:
        return [("SET LOCAL synchronous_commit TO OFF", [])]
    return []


# --------------------------------------------------------------------------- cycle inputs


@dataclass
class _Stored:
    """The snapshot text this process stored last (without its clock), and the objects it encodes."""

    snapshot: Snapshot
    before: str
    after: str
    id: uuid.UUID


@dataclass
class PendingInput:
    """A cycle input ready to store: its head, its clock and either a stored snapshot or a new one."""

    prefix: bytes  # the document up to ``"snapshot":``, compressed
    clock: str
    size: int
    reuse: _Stored | None = None  # the snapshot text equals this stored one
    new: _Stored | None = None  # else: a snapshot to store …
    compressed: Future[bytes] | None = None  # … whose compressed text this gives
    decided: bool = False  # the cycle bound or evicted pods, or gave a job its first unschedulable verdict


_stored: _Stored | None = None


def _same_objects(a: Snapshot, b: Snapshot) -> bool:
    """Whether ``a`` holds the very objects of ``b`` (then both encode alike, whatever their clocks)."""
    for x, y in ((a.tasks, b.tasks), (a.jobs, b.jobs), (a.nodes, b.nodes), (a.queues, b.queues)):
        if len(x) != len(y) or not all(map(operator.is_, x, y)):
            return False
    # small and rebuilt each cycle by the snapshot: equal values encode alike
    return (
        a.priority_classes == b.priority_classes
        and a.resource_quotas == b.resource_quotas
        and a.pod_disruption_budgets == b.pod_disruption_budgets
    )


def _compress_input(
    run: RunRef, snapshot: Snapshot, result: CycleResult, config: SchedulerConfig, now: datetime
) -> PendingInput | None:
    """Prepare this cycle's input file; None when no input is kept.

    The snapshot's text is stored once for consecutive cycles that see the same objects (or the same
    text): a quiet cycle encodes and compresses only its head (configuration, decisions, time). A new
    snapshot text is compressed in a worker thread (zlib releases the GIL: the compression overlaps
    the timeline and sample writes)."""
    global _stored
    if int(settings.INSIGHTS_KEEP_CYCLE_INPUTS) <= 0:
        return None
    head = cycle_input_text(
        "",
        _yaml(config),
        cycle=run.pk,
        recorded=cycle_json(result),
        metadata={"at": now.isoformat(), "configVersion": run.config_version},
    )
    if not head.endswith(_EMPTY_TAIL):  # pragma: no cover - the format of scheduler.replay
        raise ValueError("unexpected cycle input layout")
    prefix = head[: -len(_EMPTY_TAIL) + len(_SNAPSHOT_KEY)].encode()
    clock = encode_clock(snapshot.now)
    with _lock:
        last = _stored
        if last is not None and _same_objects(snapshot, last.snapshot):
            before, after = last.before, last.after
        else:
            before, clock, after = _encoder.encode_parts(snapshot)
        size = len(prefix) + len(before) + len(clock) + len(after) + 2
        pending = PendingInput(zlib.compress(prefix, 1), clock, size)
        if last is not None and before == last.before and after == last.after:
            pending.reuse = _stored = _Stored(snapshot, before, after, last.id)
        else:
            pending.new = _stored = _Stored(snapshot, before, after, uuid.uuid4())
            pending.compressed = _compressor.submit(zlib.compress, (before + after).encode(), 1)
    return pending


def _claim_snapshot(run: RunRef, pending: PendingInput | None) -> list[Statement]:
    """The claim of the stored snapshot text ``pending`` reuses (none when it stores a new one).

    The claim moves the row's ``last_run`` up to this run, which keeps it from the prune from now on;
    its row count says whether the row is still there (not pruned, not rolled back)."""
    if pending is None or pending.reuse is None:
        return []
    table = connection.ops.quote_name(CycleSnapshot._meta.db_table)
    key = CycleSnapshot._meta.get_field("id").get_db_prep_value(pending.reuse.id, connection)
    sql = f"UPDATE {table} SET last_run = CASE WHEN last_run < %s THEN %s ELSE last_run END WHERE id = %s"
    return [(sql, [run.pk, run.pk, key])]


def store_input(run: RunRef, pending: PendingInput, claimed: bool | None) -> list[Statement]:
    """The inserts that store a prepared cycle input for ``run`` (and its snapshot text when new).

    ``claimed``: whether :func:`_claim_snapshot` found the snapshot text ``pending`` reuses."""
    statements = []
    snapshot_id = None
    if pending.reuse is not None:
        reuse = pending.reuse
        if claimed:
            snapshot_id = reuse.id
        else:
            pending.new = _Stored(reuse.snapshot, reuse.before, reuse.after, uuid.uuid4())
            _replace_stored(reuse, pending.new)
    if snapshot_id is None:
        new = pending.new
        assert new is not None
        text = new.before + new.after
        data = pending.compressed.result() if pending.compressed is not None else zlib.compress(text.encode(), 1)
        snapshot = CycleSnapshot(id=new.id, data=data, size=len(text), now_at=len(new.before), last_run=run.pk)
        statements.append(insert_statement([snapshot]))
        snapshot_id = new.id
    row = CycleInput(
        # ``at``: when the cycle started, before its snapshot was read (a change after it is not in this input)
        run_id=run.pk,
        at=run.started_at,
        config_version=run.config_version,
        data=pending.prefix,
        snapshot_id=snapshot_id,
        now=pending.clock,
        size=pending.size,
        decided=pending.decided,
    )
    statements.append(insert_statement([row]))  # no id read back
    return statements


def cycle_decisions(
    run_id: int, info: SnapshotInfo, result: CycleResult, open_rows: dict[str, Any]
) -> list[CycleDecision]:
    """The jobs this cycle decided about: pods bound or evicted, or a first unschedulable verdict (no wait open)."""
    snapshot = info.snapshot
    counts: dict[tuple[str, str], int] = Counter()
    pods = set(result.binds) | {e.task for e in result.evictions}
    if pods:
        names = {key.partition("/")[2] for key in pods}  # a name first: cheaper than each task's key
        job_of = {t.key: t.job for t in snapshot.tasks if t.name in names and t.key in pods}
        for key in result.binds:
            if job_of.get(key):
                counts[(DecisionKind.BIND, job_of[key])] += 1
        for e in result.evictions:
            if job_of.get(e.task):
                counts[(DecisionKind.EVICT, job_of[e.task])] += 1
    for key in result.unschedulable:
        if key not in open_rows:
            counts[(DecisionKind.UNSCHEDULABLE, key)] = 0
    if not counts:
        return []
    keys = {key for _, key in counts}
    queue_of = {j.key: j.queue for j in snapshot.jobs if j.key in keys}
    ids = [info.podgroup_ids[k] for k in keys if k in info.podgroup_ids]
    job_of = {
        f"{ns}/{name}": f"{ns}/{job}"
        for ns, name, job in PodGroup.objects.filter(one_of("pk", ids), job__isnull=False).values_list(
            "namespace", "name", "job__name"
        )
    }
    return [
        CycleDecision(
            run_id=run_id, kind=kind, podgroup_key=key, job=job_of.get(key, key), queue=queue_of.get(key, ""), pods=n
        )
        for (kind, key), n in sorted(counts.items())
    ]


def first_after_changes(since: datetime) -> list[int]:
    """The first cycle after each queue or scheduler-configuration change since ``since``: the cycle whose input a
    change's effects are computed on (``insights.effects``), kept as long as a deciding cycle."""
    changes = AuditEntry.objects.filter(kind__in=(QUEUE.kind, SCHEDULER_CONFIG.kind), at__gte=since)
    runs = []
    for at in changes.values_list("at", flat=True)[:1000]:
        after = SchedulingRun.objects.filter(started_at__gte=at).order_by("pk").values_list("pk", flat=True).first()
        if after is not None:
            runs.append(after)
    return runs


def prune_inputs(now: datetime | None = None) -> tuple[int, int]:
    """Keep the last ``INSIGHTS_KEEP_CYCLE_INPUTS`` cycle inputs, those of cycles that decided something for
    ``INSIGHTS_DECIDED_CYCLE_RETENTION`` seconds, and the snapshot texts they use.

    Returns how many inputs and snapshot texts were deleted. A snapshot text is unused once no input uses it
    and it is older than the recent window (its ``last_run``, bumped by each input that reuses it, is older than
    the window's oldest input: a cycle being recorded may be about to reuse a newer one)."""
    keep = int(settings.INSIGHTS_KEEP_CYCLE_INPUTS)
    cutoff = (now or timezone.now()) - timedelta(seconds=float(settings.INSIGHTS_DECIDED_CYCLE_RETENTION))
    older = CycleInput.objects.order_by("-run_id").values_list("run_id", flat=True)[keep : keep + 1].first()
    inputs = 0
    if older is not None:
        stale = CycleInput.objects.filter(run_id__lte=older).exclude(decided=True, at__gte=cutoff)
        inputs = stale.exclude(run_id__in=first_after_changes(cutoff)).delete()[0]
        CycleDecision.objects.filter(run_id__lte=older).exclude(
            run_id__in=CycleInput.objects.filter(run_id__lte=older).values("run_id")
        ).delete()
    window = CycleInput.objects.filter(run_id__gt=older or 0).order_by("run_id").values_list("run_id", flat=True)
    oldest = window.first()
    unused = CycleSnapshot.objects.exclude(
        id__in=CycleInput.objects.filter(snapshot__isnull=False).values("snapshot_id")
    )
    if oldest is not None:
        unused = unused.filter(last_run__lt=oldest)
    return inputs, unused.delete()[0]


def input_text(row: CycleInput) -> str:
    """Return the cycle input file stored in ``row`` (byte for byte what ``scheduler.replay`` writes)."""
    head = zlib.decompress(bytes(row.data)).decode()
    if row.snapshot_id is None:  # written whole, before snapshots were shared
        return head
    snap = CycleSnapshot.objects.get(pk=row.snapshot_id)
    text = zlib.decompress(bytes(snap.data)).decode()
    return head + text[: snap.now_at] + row.now + text[snap.now_at :] + _END


def _replace_stored(old: _Stored, new: _Stored) -> None:
    global _stored
    with _lock:
        if _stored is not None and _stored.id == old.id:
            _stored = new


def reset() -> None:
    """Forget what this process stored last (the next input stores its snapshot text again)."""
    global _stored
    with _lock:
        _stored = None


# --------------------------------------------------------------------------- timelines


class _Sum:
    """A running sum of resource vectors kept as plain numbers (no new :class:`Resource` per addition)."""

    __slots__ = ("cpu", "memory", "pods", "scalars")

    def __init__(self) -> None:
        self.cpu = self.memory = self.pods = 0
        self.scalars: dict[str, int] = {}

    def add(self, r: Resource) -> None:
        self.cpu += r.cpu
        self.memory += r.memory
        self.pods += r.pods
        for k, v in r.scalars.items():
            self.scalars[k] = self.scalars.get(k, 0) + v

    def copy(self) -> _Sum:
        other = _Sum()
        other.cpu, other.memory, other.pods, other.scalars = self.cpu, self.memory, self.pods, dict(self.scalars)
        return other

    def to_dict(self) -> dict[str, int]:
        return Resource(self.cpu, self.memory, self.pods, self.scalars).to_dict()


class _TaskScan:
    """One pass over a snapshot's tasks, made on first use and shared by the timeline and the queue samples.

    It sums each queue's pending demand, notes the PodGroups with pods and, for the queues asked for
    (those a wait about quota opens in), each PodGroup's placed requests: a busy cycle needs both, a
    quiet one usually neither (its samples are the previous cycle's)."""

    def __init__(self, snapshot: Snapshot, result: CycleResult) -> None:
        self.snapshot, self.binds = snapshot, result.binds
        self.held_queues: set[str] | None = None  # None: not scanned yet
        self.demand: dict[str, _Sum] = defaultdict(_Sum)
        self.with_pods: set[str] = set()
        self.held: dict[str, dict[str, _Sum]] = defaultdict(dict)

    def scan(self, held_queues: set[str]) -> None:
        """Make the pass (once: the queues of a later call must be among the first call's)."""
        if self.held_queues is not None:
            assert held_queues <= self.held_queues, "the scan was made for other queues"
            return
        self.held_queues = held_queues
        job_queue = {j.key: j.queue for j in self.snapshot.jobs}  # here: a quiet cycle makes no scan at all
        binds, demand, with_pods, held = self.binds, self.demand, self.with_pods, self.held
        pending, placed, tasks = TaskStatus.PENDING, _PLACED, self.snapshot.tasks
        with_pods.update(map(operator.attrgetter("job"), tasks))
        for t in [t for t in tasks if t.status is pending and not t.node_name]:
            queue = job_queue.get(t.job)
            if queue is not None and not (binds and t.key in binds):
                demand[queue].add(t.requests)
        if not held_queues:
            return
        for t in [t for t in tasks if t.status in placed and job_queue.get(t.job) in held_queues]:
            jobs = held[job_queue[t.job]]
            total = jobs.get(t.job)
            if total is None:
                total = jobs[t.job] = _Sum()
            total.add(t.requests)

    def holders(self, queues: set[str]) -> dict[str, list[dict[str, Any]]]:
        """Per queue, the PodGroups holding its resources (largest first) with their requests."""
        self.scan(queues)
        out: dict[str, list[dict[str, Any]]] = {}
        for queue in queues:
            jobs = self.held.get(queue)
            if not jobs:
                continue
            totals = {key: r.to_dict() for key, r in jobs.items()}
            ranked = sorted(totals.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
            out[queue] = [{"podgroup": key, "requests": req} for key, req in ranked[:MAX_HOLDERS]]
        return out


def _open_waits() -> Statement:
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


def _by_key(rows: list[tuple[Any, ...]]) -> dict[str, tuple[int, str, str]]:
    return {key: (pk, reason, message) for pk, key, reason, message in rows}


def record_timeline(
    run_id: int,
    info: SnapshotInfo,
    result: CycleResult,
    now: datetime,
    open_rows: dict[str, tuple[int, str, str]],
    scan: _TaskScan | None = None,
) -> None:
    """Close, open or keep each PodGroup's wait interval (``open_rows``: key → id, reason, message); add milestones.

    ``scan``: the cycle's shared pass over its tasks (see :class:`_TaskScan`; made here when not given)."""
    snapshot = info.snapshot
    close: list[int] = []
    opening: dict[str, Any] = {}
    for key, reason in result.unschedulable.items():
        row = open_rows.get(key)
        if row is not None and row[1] == reason.kind and same_reason(row[2], reason.message):
            continue
        if row is not None:
            close.append(row[0])
        opening[key] = reason
    close += [row[0] for key, row in open_rows.items() if key not in result.unschedulable]
    if close:
        TimelineEntry.objects.filter(one_of("pk", close)).update(ended_at=now, ended_run=run_id)
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
    scan = scan if scan is not None else _TaskScan(snapshot, result)
    holders = scan.holders(quota_queues) if quota_queues else {}
    if holders:
        named = {
            (h["podgroup"].split("/", 1)[0], h["podgroup"].split("/", 1)[1]) for hs in holders.values() for h in hs
        }
        job_names = {
            f"{ns}/{name}": job or name
            for ns, name, job in PodGroup.objects.filter(name__in=[n for _, n in named]).values_list(
                "namespace", "name", "job__name"
            )
        }
        for hs in holders.values():
            for h in hs:
                h["job"] = job_names.get(h["podgroup"], h["podgroup"].split("/", 1)[1])
    rows: list[tuple[Any, ...]] = []
    at, no_numbers = db_value(TimelineEntry, "started_at", now), db_value(TimelineEntry, "numbers", {})

    def entry(key: str, kind: str, reason: str, plugin: str, message: str, numbers: Any, ended: bool) -> None:
        g = groups_by_key.get(key)
        if g is None:
            return
        group = (key, g["namespace"], g["job_id"], g["tenant_id"], g["queue_name"])
        rows.append(
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

    for key, reason in sorted(opening.items()):
        numbers: dict[str, Any] = dict(reason.numbers)
        queue = groups_by_key[key]["queue_name"] if key in groups_by_key else None
        if reason.kind in QUEUE_REASONS and queue in holders:
            numbers["holders"] = [h for h in holders[queue] if h["podgroup"] != key]
        if reason.fit_errors:
            numbers["fitErrors"] = dict(reason.fit_errors)
        prepared = db_value(TimelineEntry, "numbers", numbers)
        entry(key, EntryKind.WAIT, str(reason.kind), reason.plugin, reason.message, prepared, False)
    for key, phase in sorted(milestones.items()):
        label = "Enqueued" if phase == JobPhase.INQUEUE else "Running"
        entry(key, EntryKind.MILESTONE, str(phase), "", f"{label} (PodGroup phase {phase})", no_numbers, True)
    if first_binds:
        pods_bound = Counter(t.job for t in bound_tasks if t.job in first_binds)
        for key in sorted(first_binds):
            count = pods_bound[key]
            pods = db_value(TimelineEntry, "numbers", {"pods": count})
            entry(key, EntryKind.MILESTONE, "Bound", "", f"{count} pod(s) bound", pods, True)
    copy_rows(TimelineEntry, _TIMELINE_COLUMNS, rows)


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


# --------------------------------------------------------------------------- queue history


def queue_states(snapshot: Snapshot, result: CycleResult, scan: _TaskScan | None = None) -> dict[str, dict[str, Any]]:
    """Return each queue's figures after this cycle (the fields of a per-cycle :class:`QueueSample`)."""
    scan = scan if scan is not None else _TaskScan(snapshot, result)
    scan.scan(set())
    with_pods = scan.with_pods
    demand = {queue: total.copy() for queue, total in scan.demand.items()}  # the scan's sums stay as they are
    phases: dict[str, Counter[str]] = defaultdict(Counter)
    changed = result.podgroups
    for j in snapshot.jobs:
        key = j.key
        # a gang not admitted yet has no pods: its minResources is its demand
        if key not in with_pods and j.phase is JobPhase.PENDING and j.min_resources is not None:
            demand.setdefault(j.queue, _Sum()).add(j.min_resources)
        phases[j.queue][str(changed.get(key) or j.phase)] += 1
    out: dict[str, dict[str, Any]] = {}
    for q in snapshot.queues:
        out[q.name] = {
            "allocated": {k: v for k, v in sorted((result.queue_allocated.get(q.name) or {}).items()) if v},
            "deserved": {k: v for k, v in sorted((result.queue_deserved.get(q.name) or {}).items()) if v},
            "guarantee": q.guarantee.to_dict() if q.guarantee is not None else {},
            "capability": q.capability.to_dict() if q.capability is not None else {},
            "demand": demand[q.name].to_dict() if q.name in demand else {},
            "jobs": dict(sorted(phases[q.name].items())),
        }
    return out


_states_memo: tuple[Snapshot, tuple[Any, ...], dict[str, dict[str, Any]]] | None = None


def _same_states(snapshot: Snapshot, result: CycleResult, scan: _TaskScan) -> dict[str, dict[str, Any]]:
    """:func:`queue_states`, reused from the previous call when its inputs are the same (a quiet cycle)."""
    global _states_memo
    key = (result.binds, result.podgroups, result.queue_allocated, result.queue_deserved)
    memo = _states_memo
    if memo is not None and memo[1] == key:
        last = memo[0]
        if all(
            len(x) == len(y) and all(map(operator.is_, x, y))
            for x, y in ((snapshot.tasks, last.tasks), (snapshot.jobs, last.jobs), (snapshot.queues, last.queues))
        ):
            return memo[2]
    states = queue_states(snapshot, result, scan)
    _states_memo = (snapshot, key, states)
    return states


def record_queue_samples(
    run_id: int, snapshot: Snapshot, result: CycleResult, now: datetime, scan: _TaskScan | None = None
) -> list[Statement]:
    """The insert of one per-cycle sample per queue (the periodic task rolls them up per minute and hour)."""
    states = _same_states(snapshot, result, scan if scan is not None else _TaskScan(snapshot, result))
    if not states:
        return []
    return [
        insert_statement(
            [
                QueueSample(resolution=Resolution.CYCLE, queue=q, bucket=now, run_id=run_id, **s)
                for q, s in states.items()
            ]
        )
    ]
