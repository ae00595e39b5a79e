"""The recording's cheap paths: quiet cycles share one stored snapshot text, and replay as before."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from scheduler.replay import encode_snapshot, load_cycle_input
from scheduler.result import CycleResult, JobReason, ReasonKind
from tests.volcanoweb.clusters.helpers import make_gang
from tests.volcanoweb.insights.scenario import cycles
from volcanoweb.clusters import services as cluster_services
from volcanoweb.insights import services as insights
from volcanoweb.insights import taskscan, timeline
from volcanoweb.insights.models import CycleInput, CycleSnapshot, QueueSample, TimelineEntry
from volcanoweb.insights.recording import input_text
from volcanoweb.jobs.models import Job, PodGroup
from volcanoweb.scheduling.memo import Memo
from volcanoweb.scheduling.models import RunStatus
from volcanoweb.scheduling.services import run_cycle
from volcanoweb.scheduling.snapshots import build_snapshot

ROOT = Path(__file__).resolve().parents[3]


def _open_waits() -> dict[str, tuple[int, str, str]]:
    """The open wait intervals as a cycle reads them before recording its timeline: key → id, reason, message."""
    rows = TimelineEntry.objects.filter(kind="wait", ended_at__isnull=True)
    return {e.podgroup_key: (e.pk, e.reason, e.message) for e in rows}


def _replays(text: str, tmp_path: Path) -> None:
    """``text`` replays offline to the decisions it recorded, byte for byte."""
    path = tmp_path / "cycle.json"
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "scheduler", "simulate", str(path)], capture_output=True, cwd=ROOT, check=False
    )
    assert out.returncode == 0, out.stderr
    recorded = json.loads(text)["recorded"]
    assert out.stdout == (json.dumps({"cycles": [recorded]}, indent=2, sort_keys=True) + "\n").encode()


def test_quiet_cycles_share_one_snapshot_text_and_keep_their_own_clock(
    cluster: Any, cast: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    _backend, clock = cluster
    make_gang("fits", 3, tenant=cast.team_a, cpu=6000)
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)  # never fits: a reason each cycle
    cluster_services.sync_from_backend()
    cycles(clock, 2)  # binds, then sees the pods running
    scans: list[set[str]] = []
    real_scan = taskscan.TaskScan.scan
    monkeypatch.setattr(taskscan.TaskScan, "scan", lambda self, queues: (scans.append(queues), real_scan(self, queues)))
    quiet = cycles(clock, 3)
    assert (
        len(scans) <= 1
    )  # the first quiet cycle's samples may differ from the busy one's; then none passes over the pods
    rows = list(CycleInput.objects.filter(run_id__in=[r.pk for r in quiet]).order_by("run_id"))
    assert len(rows) == 3
    assert len({row.snapshot_id for row in rows}) == 1  # stored once for the three quiet cycles
    shared = CycleSnapshot.objects.get(pk=rows[0].snapshot_id)
    assert shared.last_run == quiet[-1].pk
    clocks = set()
    for row in rows:
        text = input_text(row)
        assert len(text) == row.size
        snapshot, _config, doc = load_cycle_input(text)
        assert doc["cycle"] == row.run_id
        clocks.add(doc["snapshot"]["now"])
        # the joined text is the canonical encoding of what it holds (the clock in its place)
        assert '"snapshot":' + encode_snapshot(snapshot) + "}\n" in text
        reason = quiet[0].unschedulable["team-b/too-big"]["message"]
        assert doc["recorded"]["unschedulable"] == {"team-b/too-big": reason}
        _replays(text, tmp_path)
    assert len(clocks) == 3
    # queue history keeps one sample per cycle, quiet or not (the figures of quiet cycles are computed once)
    samples = list(QueueSample.objects.filter(queue="default", resolution="cycle", run_id__in=[r.pk for r in quiet]))
    assert len(samples) == 3
    assert len({json.dumps([s.allocated, s.deserved, s.demand, s.jobs], sort_keys=True) for s in samples}) == 1
    assert samples[0].allocated["cpu"] == 18000
    assert samples[0].demand["cpu"] == 18000


def test_a_pruned_shared_snapshot_is_stored_again(cluster: Any, cast: Any, settings: Any, tmp_path: Path) -> None:
    _backend, clock = cluster
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)
    cluster_services.sync_from_backend()
    first = cycles(clock, 2)
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 1
    settings.INSIGHTS_DECIDED_CYCLE_RETENTION = 1e-6  # the first cycle's verdict is not kept beyond the last one
    insights.prune()  # keeps the last input and its snapshot only
    assert list(CycleInput.objects.values_list("run_id", flat=True)) == [first[-1].pk]
    assert list(CycleSnapshot.objects.values_list("pk", flat=True)) == [CycleInput.objects.get().snapshot_id]
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 0
    assert insights.prune()["snapshots"] == 1  # no input left: no snapshot used
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 5
    run = cycles(clock, 1)[0]  # the same objects as before the prune: the text is stored again
    row = CycleInput.objects.get(run_id=run.pk)
    assert CycleSnapshot.objects.filter(pk=row.snapshot_id).exists()
    _replays(input_text(row), tmp_path)


def _spy_synchronous_commit(monkeypatch: Any) -> list[str | None]:
    """Record the session's synchronous_commit (None on SQLite) while the recording writes its rows."""
    seen: list[str | None] = []
    real = timeline.record_timeline

    def spy(*args: Any, **kwargs: Any) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SHOW synchronous_commit")
                seen.append(cursor.fetchone()[0])
        else:
            seen.append(None)
        real(*args, **kwargs)

    monkeypatch.setattr(timeline, "record_timeline", spy)
    return seen


@pytest.mark.django_db(transaction=True)
def test_the_recording_in_its_own_transaction_does_not_wait_for_the_flush(cluster: Any, monkeypatch: Any) -> None:
    seen = _spy_synchronous_commit(monkeypatch)
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED
    assert seen == (["off"] if connection.vendor == "postgresql" else [None])
    assert CycleInput.objects.filter(run_id=run.pk).exists()  # committed


def test_a_recording_inside_the_callers_transaction_leaves_its_commit_alone(cluster: Any, monkeypatch: Any) -> None:
    seen = _spy_synchronous_commit(monkeypatch)  # this test runs inside a transaction (rolled back after it)
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED
    assert seen == (["on"] if connection.vendor == "postgresql" else [None])


@pytest.mark.django_db(transaction=True)
def test_a_failed_recording_writes_nothing_and_leaves_the_cycle_and_the_connection_alone(
    cluster: Any, cast: Any, failing_input_insert: Any, caplog: Any
) -> None:
    """The recording's statements go in one batch on PostgreSQL: an error found when the batch is read (the
    cycle input's insert, the last statement) rolls back the samples and waits sent before it."""
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)  # a wait opened by the cycle
    cluster_services.sync_from_backend()
    failing_input_insert(True)
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED  # the cycle's own outcome is untouched …
    assert "recording insights of cycle" in caplog.text
    assert not CycleInput.objects.filter(run_id=run.pk).exists()  # … and nothing of its recording is left
    assert not QueueSample.objects.filter(run_id=run.pk).exists()
    assert not TimelineEntry.objects.filter(started_run=run.pk).exists()
    failing_input_insert(False)
    again = run_cycle()  # the same connection records the next cycle whole
    assert again is not None
    assert again.status == RunStatus.SUCCEEDED
    assert CycleInput.objects.filter(run_id=again.pk).exists()
    assert QueueSample.objects.filter(run_id=again.pk, queue="default").exists()
    wait = TimelineEntry.objects.get(podgroup_key="team-b/too-big", kind="wait")
    assert (wait.started_run, wait.ended_at) == (again.pk, None)


def test_a_run_keeps_its_recording_time_apart_from_its_apply_step(cluster: Any, settings: Any) -> None:
    """The run's steps: the recording's own time is ``record_ms`` (0 when nothing is recorded), not in ``apply_ms``."""
    settings.INSIGHTS_RECORD = False
    quiet = run_cycle()
    settings.INSIGHTS_RECORD = True
    recorded = run_cycle()
    assert quiet is not None
    assert recorded is not None
    quiet.refresh_from_db()
    recorded.refresh_from_db()
    assert quiet.record_ms == 0
    assert not CycleInput.objects.filter(run_id=quiet.pk).exists()
    assert recorded.record_ms > 0
    assert CycleInput.objects.filter(run_id=recorded.pk).exists()
    steps = recorded.snapshot_ms + recorded.core_ms + recorded.apply_ms + recorded.record_ms + recorded.bind_ms
    assert steps <= recorded.duration_ms


def test_a_wait_whose_numbers_move_stays_one_interval_and_new_words_start_another(cluster: Any, cast: Any) -> None:
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)
    cluster_services.sync_from_backend()
    info = build_snapshot(Memo())
    key, kind = "team-b/too-big", ReasonKind.CAPABILITY_EXCEEDED

    def record(run_id: int, message: str) -> None:
        result = CycleResult(unschedulable={key: JobReason(kind, message, plugin="capacity")})
        timeline.record_timeline(run_id, info, result, timezone.now(), _open_waits())

    record(1, "queue default has allocated {'cpu': 7800000, 'pods': 2600}: task team-b/too-big-0 requests 9000")
    record(2, "queue default has allocated {'cpu': 7900500, 'pods': 2612}: task team-b/too-big-1 requests 9000")
    waits = list(TimelineEntry.objects.filter(podgroup_key=key, kind="wait").order_by("id"))
    assert [(w.started_run, w.ended_run) for w in waits] == [(1, None)]  # numbers moved: the same interval …
    assert "7800000" in waits[0].message  # … with the figures it started with
    record(3, "queue default is closed")  # other words: the interval ends, a new one starts
    waits = list(TimelineEntry.objects.filter(podgroup_key=key, kind="wait").order_by("id"))
    assert [(w.started_run, w.ended_run) for w in waits] == [(1, 3), (3, None)]
    assert timeline.same_reason("3/500 nodes are available", "17/500 nodes are available")
    assert not timeline.same_reason("insufficient cpu", "insufficient memory")


@pytest.mark.postgresql_only
@pytest.mark.django_db(transaction=True)
def test_the_recording_does_not_wait_for_a_job_row_another_transaction_holds(cluster: Any, cast: Any) -> None:
    """The job controller holds Job rows FOR UPDATE while it syncs them: a timeline row about such a job must
    not wait for it at the recording's commit (a foreign key check would take a key-share lock on the row)."""
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)
    cluster_services.sync_from_backend()
    info = build_snapshot(Memo())
    group = PodGroup.objects.get(namespace="team-b", name="too-big")
    job = Job.objects.create(tenant=cast.team_b, namespace="team-b", name="too-big", spec={})
    PodGroup.objects.filter(pk=group.pk).update(job=job)
    held, done = threading.Event(), threading.Event()

    def controller() -> None:
        try:
            with transaction.atomic():
                Job.objects.select_for_update().get(pk=job.pk)
                held.set()
                done.wait(30)
        finally:
            connections.close_all()

    thread = threading.Thread(target=controller)
    thread.start()
    try:
        assert held.wait(30)
        result = CycleResult(unschedulable={"team-b/too-big": JobReason(ReasonKind.QUEUE_OVERUSED, "queue full")})
        with transaction.atomic():
            with connection.cursor() as cursor:  # a wait for the locked row fails instead of blocking
                cursor.execute("SET LOCAL lock_timeout = '200ms'")
            timeline.record_timeline(7, info, result, timezone.now(), _open_waits())
    finally:
        done.set()
        thread.join(30)
    assert TimelineEntry.objects.get(podgroup_key="team-b/too-big").job_id == job.pk
    job.delete()  # Django still deletes a job's entries with it
    assert not TimelineEntry.objects.filter(podgroup_key="team-b/too-big").exists()
