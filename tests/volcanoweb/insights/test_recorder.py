"""The insights recorder's writer thread: a cycle is recorded beside the loop, in order, never in its way."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.insights import recorder, recording
from volcanoweb.insights.models import CycleInput, QueueSample, TimelineEntry
from volcanoweb.scheduling.models import RunStatus, SchedulingRun
from volcanoweb.scheduling.services import run_cycle

pytestmark = [pytest.mark.recorder_thread, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _own_writer() -> Iterator[None]:
    """Each test starts this process's writer afresh (with its settings) and ends it, closing its connection."""
    recorder.stop(timeout=30)
    yield
    assert recorder.stop(timeout=30)


class Gate:
    """Holds the writer's recordings until opened, noting which thread each ran in."""

    def __init__(self, monkeypatch: Any) -> None:
        self.open = threading.Event()
        self.threads: list[str] = []
        self.runs: list[int] = []
        real = recorder.record_run

        def held(ref: Any, *args: Any, **kwargs: Any) -> float:
            self.threads.append(threading.current_thread().name)
            assert self.open.wait(30)
            self.runs.append(ref.pk)
            return real(ref, *args, **kwargs)

        monkeypatch.setattr(recorder, "record_run", held)


def _cycle() -> SchedulingRun:
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def test_the_writer_records_a_cycle_beside_the_loop(cluster: Any, cast: Any, monkeypatch: Any) -> None:
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)  # a wait the cycle opens
    cluster_services.sync_from_backend()
    gate = Gate(monkeypatch)
    run = _cycle()  # returned while its recording waits at the gate
    run.refresh_from_db()
    assert run.record_ms == 0
    assert not CycleInput.objects.filter(run_id=run.pk).exists()
    assert not recorder.flush(timeout=0.2)
    gate.open.set()
    assert recorder.flush(timeout=30)
    assert gate.threads == ["insights-recorder"]
    run.refresh_from_db()
    assert run.record_ms > 0  # the writer's own time, set by the writer
    assert CycleInput.objects.filter(run_id=run.pk).exists()
    assert QueueSample.objects.filter(run_id=run.pk, queue="default").exists()
    wait = TimelineEntry.objects.get(podgroup_key="team-b/too-big", kind="wait")
    assert (wait.started_run, wait.ended_at) == (run.pk, None)


def test_a_cycle_recorded_after_a_later_one_leaves_the_waits_to_it(
    cluster: Any, cast: Any, monkeypatch: Any, caplog: Any
) -> None:
    """Two processes' writers may finish out of order: the earlier cycle's samples and input are kept, its wait
    intervals are not (the later cycle's already say where each job's wait stands)."""
    handed: list[Any] = []
    monkeypatch.setattr(recorder.Writer, "submit", lambda self, item, wait: handed.append(item) or True)
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)
    cluster_services.sync_from_backend()
    first, second = _cycle(), _cycle()
    assert [item[0].pk for item in handed] == [first.pk, second.pk]
    recording.record_run(*handed[1])
    recording.record_run(*handed[0])
    assert "recorded after a later one" in caplog.text
    waits = list(TimelineEntry.objects.filter(podgroup_key="team-b/too-big", kind="wait"))
    assert [(w.started_run, w.ended_run) for w in waits] == [(second.pk, None)]  # one open interval, not two
    assert CycleInput.objects.filter(run_id=first.pk).exists()
    assert QueueSample.objects.filter(run_id=first.pk, queue="default").exists()
    assert SchedulingRun.objects.get(pk=first.pk).record_ms > 0


def test_a_full_backlog_drops_a_cycle_s_recording_after_the_wait_and_the_loop_goes_on(
    cluster: Any, settings: Any, monkeypatch: Any, caplog: Any
) -> None:
    settings.INSIGHTS_RECORD_BACKLOG, settings.INSIGHTS_RECORD_WAIT = 1, 0.2
    gate = Gate(monkeypatch)
    runs = [_cycle(), _cycle(), _cycle()]  # the writer holds the 1st, the backlog the 2nd: the 3rd finds no room
    assert "backlog full for 0.2s" in caplog.text
    assert f"cycle {runs[2].pk} not recorded" in caplog.text
    gate.open.set()
    assert recorder.flush(timeout=30)
    assert gate.runs == [runs[0].pk, runs[1].pk]
    assert set(CycleInput.objects.values_list("run_id", flat=True)) == {runs[0].pk, runs[1].pk}


def test_stopping_gives_up_on_a_stuck_writer_after_its_timeout(cluster: Any, settings: Any, monkeypatch: Any) -> None:
    settings.INSIGHTS_RECORD_BACKLOG = 1
    gate = Gate(monkeypatch)
    held, waiting = _cycle(), _cycle()  # one held in the writer, one in the full backlog
    assert recorder.stop(timeout=0.2) is False  # a process's exit is not held
    gate.open.set()
    assert recorder.flush(timeout=30)  # the writer goes on …
    assert gate.runs == [held.pk, waiting.pk]
    assert recorder.stop(timeout=30)  # … and stops once it has room


def test_a_failed_recording_in_the_writer_is_logged_and_the_next_is_recorded(
    cluster: Any, failing_input_insert: Any, caplog: Any
) -> None:
    failing_input_insert(True)
    failed = _cycle()
    assert recorder.flush(timeout=30)
    assert "recording insights of cycle" in caplog.text
    assert not QueueSample.objects.filter(run_id=failed.pk).exists()  # rolled back whole
    failing_input_insert(False)
    again = _cycle()  # the writer's connection records the next one
    assert recorder.flush(timeout=30)
    assert CycleInput.objects.filter(run_id=again.pk).exists()
    assert QueueSample.objects.filter(run_id=again.pk).exists()


def test_without_the_writer_the_cycle_records_in_line(cluster: Any, settings: Any) -> None:
    settings.INSIGHTS_RECORD_ASYNC = False
    run = _cycle()
    assert CycleInput.objects.filter(run_id=run.pk).exists()  # already: no writer involved
    assert recorder._writer is None
    run.refresh_from_db()
    assert run.record_ms > 0
