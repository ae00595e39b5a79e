"""The embedded mode (``manage.py runembedded``): controller syncs leave the request, SQLite runs in WAL mode.

A submission only commits its rows; the job's sync is queued to the in-process drain (``serve.loops.LocalDrain``),
and a job whose queued sync was lost with the process is found again by the controllers' resync.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from tests.volcanoweb import builders
from tests.volcanoweb.conftest import post_yaml
from tests.volcanoweb.runtime.harness import World
from volcanoweb.clusters import backend as backend_module
from volcanoweb.feed import log
from volcanoweb.jobs.models import Job
from volcanoweb.runtime import dispatch, informer, services
from volcanoweb.runtime.models import JobRecord
from volcanoweb.serve.loops import LocalDrain
from volcanoweb.serve.management.commands.runembedded import start_local_drain, stop_local_drain


@pytest.fixture
def world(cast: Any, ml_queues: Any) -> Iterator[World]:
    made = World()
    yield made
    backend_module.set_backend(made.previous_backend)


@pytest.fixture
def drain() -> Iterator[LocalDrain]:
    """The embedded mode's drain, registered with the dispatcher but not started (the test drains it)."""
    made = LocalDrain(lambda ids: services.sync_jobs(ids), batch=3)
    dispatch.set_local_sink(made.request)
    yield made
    dispatch.set_local_sink(None)


def _submit(client: Any, *names: str) -> None:
    docs = [builders.job_manifest(name, queue="ml-training") for name in names]
    response = post_yaml(client, "/api/v1/apply", builders.to_yaml(*docs))
    assert response.status_code == 200, response.json()


def test_a_submission_queues_its_sync_instead_of_running_it(world, drain, cast, client_for) -> None:
    client = client_for(cast.alice, "token")
    watching = informer.Informer(cursor=log.head()[0])  # the embedded process's informer thread
    _submit(client, "one")
    _submit(client, "two", "three", "four", "five")
    assert Job.objects.count() == 5
    assert drain.pending() == 0  # the requests asked nobody
    watching.step()  # the informer reads the submissions from the log and queues their syncs
    assert not JobRecord.objects.exists()  # nothing reconciled yet: the drain thread does that
    assert drain.pending() == 5

    assert drain.drain_once() == 5  # in batches of 3
    assert JobRecord.objects.count() == 5
    assert drain.pending() == 0


def test_a_job_whose_queued_sync_was_lost_is_picked_up_by_the_resync(world, drain, cast, client_for) -> None:
    watching = informer.Informer(cursor=log.head()[0])
    _submit(client_for(cast.alice, "token"), "lost")
    watching.step()
    assert drain.pending() == 1
    # The process stops before the drain ran: the queued id is gone with it, the job row is committed.
    dispatch.set_local_sink(None)
    restarted = LocalDrain(lambda ids: services.sync_jobs(ids))
    dispatch.set_local_sink(restarted.request)
    assert not JobRecord.objects.exists()

    services.resync_controllers(full=False, drift=True, queue=True)  # what the controller-resync loop runs
    assert restarted.pending() == 1
    restarted.drain_once()
    job = Job.objects.get(name="lost")
    assert JobRecord.objects.filter(job_id=job.pk).exists()


def test_requests_are_coalesced_and_urgent_ones_go_first() -> None:
    batches: list[list[int]] = []
    made = LocalDrain(batches.append, batch=2)
    made.request([5, 6])
    made.request([1, 5], urgent=True)
    made.request([1, 7])
    assert made.pending() == 4
    assert made.drain_once() == 4
    assert batches == [[1, 5], [6, 7]]


def test_queue_syncs_asked_for_before_one_starts_become_that_one_after_the_delay(monkeypatch) -> None:
    """As the stack's coalesced queue sync: every informer batch with a PodGroup created asked for a count of every
    PodGroup, which the embedded process ran at once each time."""
    clock = [100.0]
    monkeypatch.setattr("volcanoweb.serve.loops.time.monotonic", lambda: clock[0])
    syncs: list[float] = []
    made = LocalDrain(lambda ids: None, sync_queues=lambda: syncs.append(clock[0]), queue_sync_delay=1.0)
    dispatch.set_local_queue_sync(made.request_queue_sync)
    try:
        for _ in range(5):
            dispatch.request_queue_sync()  # what the informer calls
        assert not made.sync_queues_if_due()  # not yet: the delay serves later requests too
        clock[0] = 100.5
        dispatch.request_queue_sync()
        assert made.queue_sync_due == 101.0  # the first request's time, not pushed back
        clock[0] = 101.0
        assert made.sync_queues_if_due()
        assert syncs == [101.0]
        assert not made.sync_queues_if_due()  # one sync for the six requests
        dispatch.request_queue_sync()  # after it started: another
        clock[0] = 102.0
        assert made.sync_queues_if_due()
        assert syncs == [101.0, 102.0]
    finally:
        dispatch.set_local_queue_sync(None)
    without = LocalDrain(lambda ids: None)  # no queue sync to run: nothing becomes due (its thread would spin)
    without.request_queue_sync()
    assert without.queue_sync_due is None


def test_the_drain_thread_runs_a_due_queue_sync_and_survives_its_failure() -> None:
    import threading

    ran = threading.Event()
    calls: list[int] = []

    def sync_queues() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the first fails")
        ran.set()

    made = LocalDrain(lambda ids: None, sync_queues=sync_queues, queue_sync_delay=0.05)
    made.start()
    try:
        made.request_queue_sync()
        for _ in range(200):
            if calls:
                break
            ran.wait(0.01)
        made.request_queue_sync()
        assert ran.wait(5)
        assert len(calls) == 2
    finally:
        made.stop()


def test_the_runner_registers_and_removes_its_drain() -> None:
    started = start_local_drain()
    try:
        assert dispatch._local_sink == started.request
        assert dispatch._local_queue_sync == started.request_queue_sync
        assert started.thread is not None
        assert started.thread.is_alive()
    finally:
        stop_local_drain(started)
    assert dispatch._local_sink is None
    assert dispatch._local_queue_sync is None
    assert not started.thread.is_alive()


@pytest.mark.sqlite_only
def test_sqlite_runs_in_wal_mode_with_normal_sync(db) -> None:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        mode = cursor.fetchone()[0]
        cursor.execute("PRAGMA synchronous")
        synchronous = cursor.fetchone()[0]
    assert mode == "wal"
    assert synchronous == 1  # NORMAL


def test_the_writers_lock_serves_waiters_in_arrival_order_and_times_out() -> None:
    import threading
    import time

    from volcanoweb.core.backends.sqlite3.base import FairLock

    lock = FairLock()
    assert lock.acquire(1.0)
    order: list[int] = []
    threads = []
    for n in range(5):
        thread = threading.Thread(target=lambda n=n: (lock.acquire(10.0), order.append(n), lock.release()))
        thread.start()
        threads.append(thread)
        while len(lock._waiters) < n + 1:  # each waiter queued before the next one starts
            time.sleep(0.001)
    assert not lock.acquire(0.01)  # held, five waiting: a sixth gives up
    assert len(lock._waiters) == 5
    lock.release()
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3, 4]
    assert lock.acquire(0.01)  # free again
    lock.release()


@pytest.mark.sqlite_only
def test_sqlite_transactions_queue_on_the_writers_lock(transactional_db) -> None:
    from django.db import connections, transaction

    from volcanoweb.core.backends.sqlite3 import base

    assert isinstance(connections["default"], base.DatabaseWrapper)
    assert not base.WRITERS._held
    with transaction.atomic():
        Job.objects.exists()
        assert base.WRITERS._held
    assert not base.WRITERS._held
    held: list[bool] = []

    def fail() -> None:
        with transaction.atomic():
            held.append(base.WRITERS._held)
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        fail()
    assert held == [True]
    assert not base.WRITERS._held
