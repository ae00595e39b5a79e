"""Recording a cycle's insights: its replayable input, the jobs' wait intervals and the queues' samples.

The scheduling cycle hands each committed cycle to :mod:`volcanoweb.insights.recorder`, which calls
:func:`record_run` once for it, in line or in its writer thread. Recording
only observes: it never changes a row the scheduler reads, and a failure here is logged and leaves
the cycle's outcome untouched.

This module holds the run's transaction and the cycle inputs (the replayable files, their shared
snapshot texts, the decisions they back and their prune). The wait intervals are in
:mod:`volcanoweb.insights.timeline` and the queue samples in :mod:`volcanoweb.insights.queue_samples`,
both fed by one pass over the cycle's tasks (:mod:`volcanoweb.insights.taskscan`).
"""

from __future__ import annotations

import logging
import operator
import threading
import time
import uuid
import zlib
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from scheduler import CycleResult, SchedulerConfig, Snapshot
from scheduler.config import dump_config
from scheduler.replay import SnapshotEncoder, cycle_input_text, encode_clock
from scheduler.result import cycle_json
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.batchsql import Statement, execute_batch, insert_statement
from volcanoweb.core.idlist import one_of
from volcanoweb.core.stageprof import stage
from volcanoweb.insights import timeline
from volcanoweb.insights.models import CycleDecision, CycleInput, CycleSnapshot, DecisionKind
from volcanoweb.insights.queue_samples import record_queue_samples
from volcanoweb.insights.taskscan import TaskScan
from volcanoweb.jobs.models import PodGroup
from volcanoweb.manifests.parse import QUEUE, SCHEDULER_CONFIG
from volcanoweb.scheduling.models import SchedulingRun
from volcanoweb.scheduling.snapshots import SnapshotInfo

log = logging.getLogger(__name__)

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
            reads += [_later_recorded(run.pk), timeline.open_waits()]
            outcomes = execute_batch(reads)
            scan = TaskScan(info.snapshot, result)
            open_rows = timeline.by_key(outcomes[later_at + 1].rows)
            if outcomes[later_at].rows:
                log.info("insights: cycle %s recorded after a later one: its wait intervals are left out", run.pk)
            else:
                timeline.record_timeline(run.pk, info, result, now, open_rows, scan)
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
    """The jobs this cycle decided about: pods bound or evicted, a first unschedulable verdict (no wait open) or a
    new one (the open wait's reason kind or words changed: the cycle its page cites from then on)."""
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
    for key, reason in result.unschedulable.items():
        row = open_rows.get(key)
        if timeline.wait_opens(row, reason):
            counts[(DecisionKind.UNSCHEDULABLE if row is None else DecisionKind.VERDICT, key)] = 0
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
