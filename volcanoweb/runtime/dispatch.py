"""Coalesced job syncs: many notifications about the same job become one ``sync_job``.

Every write that concerns a job (a submission, a command, a PodGroup phase set by the scheduler, a pod
mirrored from the cluster) asks for the job to be reconciled. Queuing one Celery task per request made
a burst of submissions (and every pod change after a cycle) queue one task per event, each paying the
task overhead, and the same job was reconciled several times in a row.

With a Redis broker, :func:`request_sync` adds the job ids to a Redis sorted set scored by the time of
the first request (a job is in it at most once; ids are taken oldest first) and queues a
``sync_dirty_jobs`` task for a free drain slot (a ``SET NX`` flag per slot; at most
:data:`DRAIN_SLOTS` drain tasks are queued or running). Each pops ids in batches and reconciles each
job; ids added while they run are picked up by the same tasks. A request made while a job is being
reconciled adds the id again, so nothing is missed (two drains never hold the same id at once, and
the job row lock orders their writes). *Urgent* requests (a submission, a gang admitted by the
scheduler: what stands between a job and its pods) have their own set, drained first, so that
status-only syncs of running jobs never delay the next job's pods.
If a worker dies after popping ids, the periodic resync (``resync_controllers``) finds the jobs whose
records drifted from the rows and reconciles them.

When Celery runs eagerly (the tests) the jobs are synced at once, in order, in batches of :data:`BATCH`
(``services.sync_jobs``, set-based: ADR 0022). The embedded mode (``manage.py runembedded``) has no broker
either, but registers an in-process drain with :func:`set_local_sink` (``serve.loops.LocalDrain``: the same
coalescing, one thread): the sync then runs outside the request that asked for it, as in the stack.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

DIRTY_KEY = "volcanoweb:runtime:dirty-jobs"
URGENT_KEY = "volcanoweb:runtime:urgent-jobs"
DRAIN_KEY = "volcanoweb:runtime:drain"  # one flag per slot: f"{DRAIN_KEY}:{slot}"
#: Drain tasks allowed at once: they overlap their database round trips on the worker's threads.
DRAIN_SLOTS = 3
#: Seconds the "a drain task is queued or running" flag lives without a refresh (a dead worker's flag expires).
DRAIN_TTL = 60
#: Job ids popped at a time by the drain task.
BATCH = 20
#: The tasks that reconcile queued jobs (``volcanoweb.runtime.tasks``), by name.
SYNC_JOBS_TASK = "volcanoweb.runtime.sync_jobs"
SYNC_DIRTY_JOBS_TASK = "volcanoweb.runtime.sync_dirty_jobs"
JOB_DELETED_TASK = "volcanoweb.runtime.job_deleted"
SYNC_QUEUES_TASK = "volcanoweb.runtime.sync_queues"
#: Set while a queue sync asked for by :func:`request_queue_sync` is queued and has not started.
QUEUES_PENDING_KEY = "volcanoweb:runtime:queues-sync-pending"
GROUP_BARE_PODS_TASK = "volcanoweb.runtime.group_bare_pods"
RESYNC_TASK = "volcanoweb.runtime.resync_controllers"

_client: Any = None
#: The embedded mode's in-process drain: ``sink(ids, urgent)`` queues ids (see :func:`set_local_sink`).
_local_sink: Callable[[list[int], bool], None] | None = None
#: The embedded mode's coalesced queue sync: ``ask()`` asks for one (see :func:`set_local_queue_sync`).
_local_queue_sync: Callable[[], None] | None = None


def set_local_sink(sink: Callable[[list[int], bool], None] | None) -> None:
    """Hand requested syncs to ``sink(ids, urgent)`` when there is no Redis broker (None: sync eagerly again)."""
    global _local_sink
    _local_sink = sink


def set_local_queue_sync(ask: Callable[[], None] | None) -> None:
    """Hand queue sync requests to ``ask()`` when there is no Redis broker (None: sync eagerly again)."""
    global _local_queue_sync
    _local_queue_sync = ask


def redis_client() -> Any:
    """Return the Redis client of the broker (None when Celery runs eagerly or the broker is not Redis)."""
    global _client
    from volcanoweb.celery import app

    if app.conf.task_always_eager:
        return None
    url = str(settings.CELERY_BROKER_URL or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    if _client is None:
        import redis

        _client = redis.Redis.from_url(url)
    return _client


def queue_task(task: str, *args: object, countdown: float = 0.0) -> None:
    """Queue a task of ``runtime.tasks`` by its name (the tasks call this module, which never imports them;
    the runtime app registers them in every process, so an eager Celery runs them in place). ``countdown``:
    seconds before a worker may start it (an eager Celery runs it at once)."""
    from volcanoweb.celery import app

    app.signature(task, args=args).apply_async(countdown=countdown or None)


def request_sync(job_ids: Iterable[int], *, urgent: bool = False) -> None:
    """Ask for these jobs to be reconciled soon (once each, however often they are asked for).

    ``urgent``: the job waits for the controller to get its pods (submitted, or its gang admitted).
    """
    ids = sorted({int(i) for i in job_ids})
    if not ids:
        return
    client = redis_client()
    if client is None and _local_sink is not None:
        _local_sink(ids, urgent)
        return
    if client is None:  # eager (tests) or another broker: batches of BATCH, set-based
        for start in range(0, len(ids), BATCH):
            queue_task(SYNC_JOBS_TASK, ids[start : start + BATCH])
        return
    now = time.time()
    client.zadd(URGENT_KEY if urgent else DIRTY_KEY, dict.fromkeys(ids, now), nx=True)
    for slot in range(DRAIN_SLOTS):
        if client.set(f"{DRAIN_KEY}:{slot}", "1", nx=True, ex=DRAIN_TTL):
            queue_task(SYNC_DIRTY_JOBS_TASK, slot)
            return


def request_queue_sync() -> None:
    """Ask for a queue sync (``SYNC_QUEUES_TASK``: every queue's PodGroup counts and state) after this point.

    Coalesced with a Redis broker: the sync is queued to start ``CONTROLLER_QUEUE_SYNC_DELAY`` seconds later,
    and while it is queued and has not started (:func:`queue_sync_started` clears the flag as it starts) it will
    see later changes too, so no other is queued; the embedded mode's drain (``serve.loops.LocalDrain``) does
    the same in memory. Each sync counts every PodGroup, and the informer asks after
    every batch with a PodGroup created or deleted: without this, a burst of submissions queued one count of
    the whole table per batch. The flag expires after :data:`DRAIN_TTL` seconds (a lost task); the periodic
    resync also syncs the queues.
    """
    client = redis_client()
    if client is None and _local_queue_sync is not None:
        _local_queue_sync()
    elif client is None:
        queue_task(SYNC_QUEUES_TASK)
    elif client.set(QUEUES_PENDING_KEY, "1", nx=True, ex=DRAIN_TTL):
        queue_task(SYNC_QUEUES_TASK, countdown=float(settings.CONTROLLER_QUEUE_SYNC_DELAY))


def queue_sync_started() -> None:
    """A queue sync starts: requests made from now on queue another (see :func:`request_queue_sync`)."""
    client = redis_client()
    if client is not None:
        client.delete(QUEUES_PENDING_KEY)


def drain(sync: Callable[[list[int]], object], *, slot: int = 0, client: Any = None, batch: int = BATCH) -> int:
    """Reconcile every job in the dirty sets until they are empty; return how many job syncs ran.

    ``sync`` is called with each popped batch of ids (``services.sync_jobs``: one transaction, a savepoint
    per job); an exception is logged and the next batch goes on. Clears the slot's flag when the sets
    are empty (taking it again if ids arrived meanwhile).
    """
    client = client if client is not None else redis_client()
    if client is None:
        return 0
    flag = f"{DRAIN_KEY}:{slot}"
    done = 0
    while True:
        ids = [int(member) for member, _score in client.zpopmin(URGENT_KEY, batch)]
        if ids:
            client.zrem(DIRTY_KEY, *ids)  # this sync covers them
        else:
            ids = [int(member) for member, _score in client.zpopmin(DIRTY_KEY, batch)]
        if not ids:
            client.delete(flag)
            # An id added after the pop above may have found every slot taken and queued nothing: take it back.
            waiting = client.zcard(URGENT_KEY) + client.zcard(DIRTY_KEY)
            if waiting and client.set(flag, "1", nx=True, ex=DRAIN_TTL):
                continue
            return done
        client.expire(flag, DRAIN_TTL)
        try:
            sync(ids)
        except Exception:  # one broken batch must not stop the others; the resync retries its jobs
            log.exception("sync of jobs %s failed", ids)
        done += len(ids)
