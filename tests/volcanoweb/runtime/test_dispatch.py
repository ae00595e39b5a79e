"""Coalesced job syncs, periodic-task routing, the drift resync and the controller's query budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.volcanoweb import builders
from tests.volcanoweb.runtime.harness import NAMESPACE, World
from volcanoweb.celery import app
from volcanoweb.feed import log as feed_log
from volcanoweb.feed.models import FeedHead
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Job, Pod, PodGroup
from volcanoweb.runtime import dispatch, services, tasks
from volcanoweb.runtime.models import JobRecord
from volcanoweb.serve.management.commands.runstack import stack_commands
from volcanoweb.tenancy.access import SYSTEM


class FakeRedis:
    """The few Redis sorted-set and string commands the dispatcher uses, in memory."""

    def __init__(self) -> None:
        self.zsets: dict[str, dict[bytes, float]] = {}
        self.keys: dict[str, bytes] = {}

    def zadd(self, key: str, mapping: dict[Any, float], nx: bool = False) -> int:
        members = self.zsets.setdefault(key, {})
        added = 0
        for value, score in mapping.items():
            member = str(value).encode()
            if member in members and nx:
                continue
            added += member not in members
            members[member] = score
        return added

    def zpopmin(self, key: str, count: int) -> list[tuple[bytes, float]]:
        members = self.zsets.get(key, {})
        popped = sorted(members.items(), key=lambda item: (item[1], item[0]))[:count]
        for member, _ in popped:
            del members[member]
        return popped

    def zrem(self, key: str, *values: Any) -> int:
        members = self.zsets.get(key, {})
        return sum(members.pop(str(v).encode(), None) is not None for v in values)

    def zcard(self, key: str) -> int:
        return len(self.zsets.get(key, {}))

    def set(self, key: str, value: str, nx: bool = False, ex: int | None = None) -> bool:
        if nx and key in self.keys:
            return False
        self.keys[key] = value.encode()
        return True

    def delete(self, key: str) -> int:
        return int(self.keys.pop(key, None) is not None)

    def expire(self, key: str, seconds: int) -> bool:
        return key in self.keys


@pytest.fixture
def fake_redis(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeRedis, list[int]]:
    """Route request_sync through an in-memory Redis; record the drain tasks it queues (by slot)."""
    client = FakeRedis()
    queued: list[int] = []
    monkeypatch.setattr(dispatch, "redis_client", lambda: client)
    # the task as Celery's registry holds it (dispatch queues it by name): record its slot instead of running it
    monkeypatch.setattr(
        tasks.sync_dirty_jobs, "apply_async", lambda args=(), kwargs=None, **options: queued.append(args[0])
    )
    return client, queued


def test_repeated_requests_for_a_job_become_one_sync(fake_redis: tuple[FakeRedis, list[int]]) -> None:
    client, queued = fake_redis
    for _ in range(5):
        dispatch.request_sync([7, 8])
    dispatch.request_sync([8])
    assert client.zcard(dispatch.DIRTY_KEY) == 2
    assert 1 <= len(queued) <= dispatch.DRAIN_SLOTS  # not one task per request
    synced: list[int] = []
    assert dispatch.drain(synced.extend, slot=queued[0], client=client) == 2
    assert sorted(synced) == [7, 8]
    assert client.zcard(dispatch.DIRTY_KEY) == 0
    assert f"{dispatch.DRAIN_KEY}:{queued[0]}" not in client.keys  # the slot is free again


def test_a_request_during_a_drain_is_synced_by_it(fake_redis: tuple[FakeRedis, list[int]]) -> None:
    client, queued = fake_redis
    dispatch.request_sync([1])
    synced: list[int] = []

    def sync(job_ids: list[int]) -> None:
        synced.extend(job_ids)
        if synced == [1]:
            dispatch.request_sync([1, 2])  # changed again while being reconciled

    dispatch.drain(sync, slot=queued[0], client=client)
    assert sorted(synced) == [1, 1, 2]


def test_urgent_jobs_first_then_oldest_first(
    fake_redis: tuple[FakeRedis, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, queued = fake_redis
    clock = iter(range(100))
    monkeypatch.setattr(dispatch.time, "time", lambda: float(next(clock)))
    dispatch.request_sync([5])
    dispatch.request_sync([3])
    dispatch.request_sync([9], urgent=True)  # e.g. its gang was just admitted
    dispatch.request_sync([5, 9])  # asked again: keeps its place, and 9's urgent sync covers this one
    synced: list[int] = []
    dispatch.drain(synced.extend, slot=queued[0], client=client, batch=1)
    assert synced == [9, 5, 3]


def test_a_failing_batch_does_not_stop_the_drain(fake_redis: tuple[FakeRedis, list[int]]) -> None:
    client, queued = fake_redis
    dispatch.request_sync([1, 2, 3])
    synced: list[int] = []

    def sync(job_ids: list[int]) -> None:
        if 2 in job_ids:
            raise RuntimeError("boom")
        synced.extend(job_ids)

    assert dispatch.drain(sync, slot=queued[0], client=client, batch=1) == 3
    assert sorted(synced) == [1, 3]


def test_queue_syncs_asked_for_while_one_waits_become_that_one(
    fake_redis: tuple[FakeRedis, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = fake_redis
    started: list[Any] = []
    monkeypatch.setattr(
        tasks.sync_queues, "apply_async", lambda args=(), kwargs=None, **options: started.append(options)
    )
    monkeypatch.setattr(settings, "CONTROLLER_QUEUE_SYNC_DELAY", 1.5)
    for _ in range(5):  # five informer batches with PodGroups created, before the worker takes the first sync
        dispatch.request_queue_sync()
    assert len(started) == 1
    assert started[0]["countdown"] == 1.5  # it starts later, to serve the requests made until then
    monkeypatch.setattr(services, "sync_queues", lambda names=None: {})
    tasks.sync_queues()  # the queued sync starts: it reads what was written before it
    dispatch.request_queue_sync()  # a change after it started needs a sync of its own
    assert len(started) == 2
    assert dispatch.QUEUES_PENDING_KEY in client.keys


def test_eager_celery_syncs_at_once(world: World) -> None:
    job_services.apply_job(SYSTEM, builders.job_manifest("now", queue="ml-training"), NAMESPACE)
    job = Job.objects.get(name="now")
    PodGroup.objects.filter(job=job).update(phase="Inqueue")
    dispatch.request_sync([job.pk, job.pk])
    assert len(world.pods(job)) == 2


def test_eager_celery_syncs_many_jobs_as_batches(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"eager{i}" for i in range(dispatch.BATCH + 2)]
    for name in names:
        job_services.apply_job(SYSTEM, builders.job_manifest(name, queue="ml-training"), NAMESPACE)
    ids = sorted(Job.objects.filter(name__in=names).values_list("pk", flat=True))
    PodGroup.objects.filter(job_id__in=ids).update(phase="Inqueue")
    batches: list[list[int]] = []
    real = services.sync_jobs

    def sync_jobs(job_ids: list[int], **kwargs: Any) -> Any:
        batches.append(list(job_ids))
        return real(job_ids, **kwargs)

    monkeypatch.setattr(services, "sync_jobs", sync_jobs)
    dispatch.request_sync(reversed(ids))
    assert batches == [ids[: dispatch.BATCH], ids[dispatch.BATCH :]]
    assert Pod.objects.filter(job_id__in=ids).count() == 2 * len(ids)


def test_periodic_tasks_have_their_own_queue_and_worker() -> None:
    router = app.amqp.router
    for _name, task, _period in settings.PERIODIC_TASKS:
        assert router.route({}, task)["queue"].name == settings.PERIODIC_QUEUE, task
    for task in ("volcanoweb.runtime.sync_job", "volcanoweb.runtime.sync_dirty_jobs"):
        assert router.route({}, task)["queue"].name == "celery", task
    commands = stack_commands("127.0.0.1", 8000, Path("/data"))
    assert commands["scheduler"][commands["scheduler"].index("-Q") + 1] == settings.PERIODIC_QUEUE
    assert commands["worker"][commands["worker"].index("-Q") + 1] == "celery"


def test_the_resync_finds_drifted_jobs_only(world: World) -> None:
    quiet = world.schedule(world.apply(builders.job_manifest("quiet", queue="ml-training")))
    admitted = world.apply(builders.job_manifest("admitted", queue="ml-training"))
    assert services.drifted_job_ids(timezone.now()) == []
    PodGroup.objects.filter(job=admitted).update(phase="Inqueue")  # nobody told the controller
    assert services.drifted_job_ids(timezone.now()) == [admitted.pk]
    services.resync_controllers(full=False)
    assert len(world.pods(admitted)) == 2
    Pod.objects.filter(job=quiet).update(phase="Failed")  # a pod change the controller missed
    assert services.drifted_job_ids(timezone.now()) == [quiet.pk]


def test_the_drift_check_looks_at_the_jobs_the_log_shows_changed(world: World) -> None:
    quiet = world.schedule(world.apply(builders.job_manifest("quiet", queue="ml-training")))
    unlogged = world.schedule(world.apply(builders.job_manifest("unlogged", queue="ml-training")))
    since = feed_log.head()[0]
    now = timezone.now()
    assert services.drifted_job_ids(now, since=since) == []
    # a drift no entry of the log shows (the controller's record lost): a check scoped to the log's changes
    # does not see it; a worker's first check (every job) and a carried find do
    JobRecord.objects.filter(job_id=unlogged.pk).delete()
    assert services.drifted_job_ids(now, since=since) == []
    assert services.drifted_job_ids(now) == [unlogged.pk]
    assert services.drifted_job_ids(now, since=since, carry=[unlogged.pk]) == [unlogged.pk]
    # a logged change the controller missed is found whatever the scope
    Pod.objects.filter(job=quiet).update(phase="Failed")
    assert services.drifted_job_ids(now, since=since) == [quiet.pk]
    assert services.drifted_job_ids(now, since=feed_log.head()[0]) == []
    # a revision the log has compacted past: every job is checked
    FeedHead.objects.filter(pk=1).update(compacted=since + 1)
    found = services.resync_controllers(full=False, since=since, queue=True)["drifted"]
    assert found == sorted([quiet.pk, unlogged.pk])


def test_the_periodic_resync_keeps_its_drift_cursor(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    job = world.schedule(world.apply(builders.job_manifest("kept", queue="ml-training")))
    monkeypatch.setattr(tasks, "_last", {"full": 0.0, "drift": 0.0})
    monkeypatch.setattr(tasks, "_drift", tasks._DriftCursor())
    monkeypatch.setattr(settings, "CONTROLLER_FULL_RESYNC_PERIOD", 0)
    monkeypatch.setattr(settings, "CONTROLLER_DRIFT_RESYNC_PERIOD", 30.0)
    JobRecord.objects.filter(job_id=job.pk).delete()  # found by the first check, which looks at every job
    head = feed_log.head()[0]
    assert tasks.resync_controllers()["drifted"] == [job.pk]
    assert tasks._drift.since == head
    assert tasks._drift.carry == [job.pk]
    tasks._last["drift"] = 0.0  # the next run checks for drift again
    services.sync_jobs([job.pk])  # the controller made its record again: the carried find is no longer drifted
    assert tasks.resync_controllers()["drifted"] == []
    assert tasks._drift.carry == []


def test_sync_job_query_budget(world: World) -> None:
    job_services.apply_job(SYSTEM, builders.job_manifest("budget", queue="ml-training"), NAMESPACE)
    job = Job.objects.get(name="budget")
    with CaptureQueriesContext(connection) as first:
        services.sync_job(job.pk)
    PodGroup.objects.filter(job=job).update(phase="Inqueue")
    with CaptureQueriesContext(connection) as create:
        services.sync_job(job.pk)  # creates 2 pods in the (in-memory) sim
    with CaptureQueriesContext(connection) as quiet:
        services.sync_job(job.pk)
    assert len(world.pods(job)) == 2
    # before the per-reconcile caches: 21, 39 with one pod (+18 a pod), 17
    assert len(first) <= 14, [q["sql"][:80] for q in first.captured_queries]
    assert len(create) <= 22, [q["sql"][:80] for q in create.captured_queries]
    assert len(quiet) <= 10, [q["sql"][:80] for q in quiet.captured_queries]


def test_a_batch_of_syncs_shares_its_reads_and_isolates_a_failure(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"b{i}" for i in range(6)]
    for name in names:
        job_services.apply_job(SYSTEM, builders.job_manifest(name, queue="ml-training"), NAMESPACE)
    jobs = list(Job.objects.filter(name__in=names).order_by("pk"))
    services.sync_jobs([j.pk for j in jobs])
    PodGroup.objects.filter(job__in=jobs).update(phase="Inqueue")
    real = services.JobController.reconcile

    def reconcile(self: Any, requests: Any, *, default_sync: bool) -> Any:
        result = real(self, requests, default_sync=default_sync)
        if self.job.name == "b2":
            raise RuntimeError("boom")  # after it created its pods: they must be rolled back
        return result

    monkeypatch.setattr(services.JobController, "reconcile", reconcile)
    with CaptureQueriesContext(connection) as ctx:
        services.sync_jobs([j.pk for j in jobs])
    pods = {j.name: len(world.pods(j)) for j in jobs}
    assert pods == {"b0": 2, "b1": 2, "b2": 0, "b3": 2, "b4": 2, "b5": 2}
    assert Pod.objects.filter(job__name="b2").count() == 0
    # one sync_job of a 2-pod job makes 20 queries; a batch shares the reads (and the sim's writes stay)
    assert len(ctx) <= 15 * len(jobs), len(ctx)
