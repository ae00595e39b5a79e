"""In-process background loops for the embedded mode.

In the stack mode Celery beat triggers the periodic work (settings.PERIODIC_TASKS)
in a worker. In the embedded mode there is no broker, so each entry runs in a
daemon thread of the web process, calling the very same Celery task in-process.
The job syncs the stack's drain tasks run (``runtime.dispatch``) run in one more
thread, :class:`LocalDrain`, so that a request never runs a controller sync.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import close_old_connections

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Loop:
    """A named function to call every `period` seconds."""

    name: str
    period: float
    func: Callable[[], object]


def periodic_loops() -> list[Loop]:
    """Return one loop per entry of settings.PERIODIC_TASKS, calling its Celery task in-process."""
    from django.conf import settings

    from volcanoweb.celery import app

    app.loader.import_default_modules()  # make sure every app's tasks are registered
    return [Loop(name, period, app.tasks[task]) for name, task, period in settings.PERIODIC_TASKS]


class LoopRunner:
    """Run every registered loop in its own daemon thread until stopped."""

    def __init__(self, loops: list[Loop] | None = None) -> None:
        self.loops = periodic_loops() if loops is None else loops
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        for loop in self.loops:
            thread = threading.Thread(target=self._run, args=(loop,), name=f"loop-{loop.name}", daemon=True)
            thread.start()
            self.threads.append(thread)
            log.info("started in-process loop %s every %.2fs", loop.name, loop.period)

    def _run(self, loop: Loop) -> None:
        while not self.stop_event.is_set():
            try:
                loop.func()
            except Exception:  # a failing iteration is logged; the loop keeps going
                log.exception("in-process loop %s failed", loop.name)
            finally:
                close_old_connections()
            self.stop_event.wait(loop.period)

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout)


class LocalDrain:
    """The embedded mode's coalesced job syncs: what ``runtime.dispatch``'s Redis sets and drain tasks are
    to the stack, in memory and one thread.

    :meth:`request` (registered with ``dispatch.set_local_sink``) queues job ids, each at most once,
    urgent ones first; the thread calls ``sync`` with batches of at most ``batch`` ids. The request that
    submitted a job thus only commits its rows: on SQLite (one writer at a time) a request no longer holds
    the write lock for a controller sync, and the sync's transactions stay one batch long. Ids still
    queued when the process stops are not lost: the job rows are committed, and the periodic resync
    (``resync_controllers``: a job never synced has no record) hands them back after a restart.
    """

    def __init__(
        self,
        sync: Callable[[list[int]], object],
        *,
        batch: int = 20,
        sync_queues: Callable[[], object] | None = None,
        queue_sync_delay: float = 1.0,
    ) -> None:
        self.sync = sync
        self.batch = batch
        self.sync_queues = sync_queues
        self.queue_sync_delay = queue_sync_delay
        #: When the queue sync asked for (:meth:`request_queue_sync`) runs (``time.monotonic``), or None.
        self.queue_sync_due: float | None = None
        self.urgent: dict[int, None] = {}  # insertion-ordered sets
        self.dirty: dict[int, None] = {}
        self.condition = threading.Condition()
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    def request(self, job_ids: Iterable[int], urgent: bool = False) -> None:
        """Queue jobs for a sync (a job already queued is not queued twice; urgent ones go first)."""
        with self.condition:
            for job_id in job_ids:
                if urgent:
                    self.dirty.pop(job_id, None)
                    self.urgent[job_id] = None
                elif job_id not in self.urgent:
                    self.dirty[job_id] = None
            self.condition.notify()

    def request_queue_sync(self) -> None:
        """Ask for a queue sync (registered with ``dispatch.set_local_queue_sync``): it runs in the thread
        ``queue_sync_delay`` seconds after the first request that found none waiting, and serves every request
        until it starts, as the stack's coalesced sync (``dispatch.request_queue_sync``)."""
        with self.condition:
            if self.queue_sync_due is None and self.sync_queues is not None:  # else the thread would wait for ever
                self.queue_sync_due = time.monotonic() + self.queue_sync_delay
                self.condition.notify()

    def sync_queues_if_due(self) -> bool:
        """Run the queue sync asked for if its time has come (a request made while it runs asks for another)."""
        with self.condition:
            due = self.queue_sync_due
            if due is None or time.monotonic() < due or self.sync_queues is None:
                return False
            self.queue_sync_due = None
        try:
            self.sync_queues()
        except Exception:
            log.exception("queue sync failed")
        return True

    def pending(self) -> int:
        """Return how many jobs wait for a sync."""
        with self.condition:
            return len(self.urgent) + len(self.dirty)

    def _pop(self) -> list[int]:
        with self.condition:
            source = self.urgent or self.dirty
            ids = list(itertools.islice(source, self.batch))
            for job_id in ids:
                del source[job_id]
            return ids

    def drain_once(self) -> int:
        """Sync every queued job in the calling thread (a failing batch is logged; the resync retries it)."""
        done = 0
        while ids := self._pop():
            try:
                self.sync(ids)
            except Exception:
                log.exception("sync of jobs %s failed", ids)
            done += len(ids)
        return done

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="loop-job-syncs", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop_event.is_set():
            with self.condition:
                if not (self.urgent or self.dirty):
                    due = self.queue_sync_due
                    self.condition.wait(1.0 if due is None else min(1.0, max(0.0, due - time.monotonic())))
            try:
                self.drain_once()
                self.sync_queues_if_due()
            finally:
                close_old_connections()

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        with self.condition:
            self.condition.notify()
        if self.thread is not None:
            self.thread.join(timeout)
