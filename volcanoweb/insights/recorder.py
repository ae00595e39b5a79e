"""The insights recorder: where a committed cycle's recording runs, beside the scheduling loop or in it.

The cycle hands its snapshot, decisions and configuration to :func:`hand_over` after its run row is
saved. With ``INSIGHTS_RECORD_ASYNC`` (the default) a writer thread of this process records them
while the loop goes on to its next cycle (ADR 0021): the recording's database round trips and commit
wait beside the cycle, not in it. The handed objects are immutable (the snapshot's and the result's
objects are frozen; a new cycle builds new ones), so the writer reads what the cycle saw.

* **Order.** One writer per process takes the cycles in the order they were handed. Across processes
  (two workers taking turns at the cycle lease), the recording transaction is serialised (an
  advisory lock on PostgreSQL, SQLite's single writer) and a cycle whose recording comes after a
  later cycle's stores its samples and input but leaves the wait intervals to the later one (see
  :func:`volcanoweb.insights.recording.record_run`).
* **Back-pressure.** At most ``INSIGHTS_RECORD_BACKLOG`` cycles wait; a cycle that finds the backlog
  full waits for room (at most ``INSIGHTS_RECORD_WAIT`` seconds, then its recording is dropped and
  logged: observation never stops scheduling).
* **Losses.** A process that stops drains the backlog for a few seconds at exit; a crash loses the
  waiting cycles' recordings (as the asynchronous commit of ADR 0021 may lose the last ones).

Without ``INSIGHTS_RECORD_ASYNC`` the cycle records in line (:func:`record_in_line`, before its bind
step), inside its own time: the unit tests, whose rows live in the test's transaction, do so.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from scheduler import CycleResult, SchedulerConfig
from volcanoweb.insights.recording import RunRef, record_run
from volcanoweb.scheduling.models import SchedulingRun
from volcanoweb.scheduling.snapshots import SnapshotInfo

log = logging.getLogger(__name__)

_Item = tuple[RunRef, SnapshotInfo, CycleResult, SchedulerConfig]


class Writer:
    """A thread that records handed cycles one at a time, in order, on its own database connection."""

    def __init__(self, backlog: int) -> None:
        self.queue: queue.Queue[_Item | None] = queue.Queue(maxsize=max(1, backlog))
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._run, name="insights-recorder", daemon=True)
        self.thread.start()

    def submit(self, item: _Item, wait: float) -> bool:
        """Queue ``item``; False when the backlog stayed full for ``wait`` seconds (then it is dropped)."""
        try:
            self.queue.put(item, timeout=wait)
        except queue.Full:
            return False
        return True

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued cycle is recorded; False if ``timeout`` seconds passed first.

        ``Queue.join`` with a timeout: the queue's own condition, notified by each ``task_done``."""
        done = self.queue.all_tasks_done
        with done:
            return done.wait_for(lambda: not self.queue.unfinished_tasks, timeout)

    def alive(self) -> bool:
        """Whether this writer's thread runs in this process (a fork's child has none of its parent's)."""
        return self.pid == os.getpid() and self.thread.is_alive()

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:  # stop(): this thread's connection is closed with it
                connection.close()
                self.queue.task_done()
                return
            try:
                close_old_connections()  # a connection the server closed, or older than CONN_MAX_AGE
                record_run(*item)  # never raises
            except Exception:  # pragma: no cover - record_run logs its own failures
                log.exception("insights recorder")
            finally:
                close_old_connections()
                self.queue.task_done()


_writer: Writer | None = None
_writer_lock = threading.Lock()


def writer() -> Writer:
    """This process's writer (a new one after a fork, whose child has no thread of its parent's)."""
    global _writer
    with _writer_lock:
        w = _writer
        if w is None or not w.alive():
            w = _writer = Writer(int(settings.INSIGHTS_RECORD_BACKLOG))
        return w


def record_in_line(run: SchedulingRun, info: SnapshotInfo, result: CycleResult, config: SchedulerConfig) -> float:
    """Record a committed cycle now, inside the cycle, unless the writer records it; return the milliseconds."""
    if not settings.INSIGHTS_RECORD or settings.INSIGHTS_RECORD_ASYNC:
        return 0.0
    return record_run(RunRef(run.pk, run.started_at, run.config_version), info, result, config, save_ms=False)


def hand_over(run: SchedulingRun, info: SnapshotInfo, result: CycleResult, config: SchedulerConfig) -> None:
    """Queue a committed cycle (its run row saved) for this process's writer, if it records in the background."""
    if not settings.INSIGHTS_RECORD or not settings.INSIGHTS_RECORD_ASYNC:
        return
    ref = RunRef(run.pk, run.started_at, run.config_version)
    if not writer().submit((ref, info, result, config), float(settings.INSIGHTS_RECORD_WAIT)):
        wait = settings.INSIGHTS_RECORD_WAIT
        log.error("insights recorder: backlog full for %ss: cycle %s not recorded", wait, run.pk)


def flush(timeout: float | None = None) -> bool:
    """Wait until this process's writer has recorded every handed cycle (True at once without one)."""
    w = _writer
    return w is None or not w.alive() or w.flush(timeout)


def stop(timeout: float | None = None) -> bool:
    """Record what is queued, then end this process's writer and close its connection; False on ``timeout``
    (a writer stuck with a full backlog is left running: it must not hold a process's exit)."""
    global _writer
    w = _writer
    if w is None or not w.alive():
        return True
    try:
        w.queue.put(None, timeout=timeout)
    except queue.Full:
        return False
    with _writer_lock:
        if _writer is w:
            _writer = None
    w.thread.join(timeout)
    return not w.thread.is_alive()


@atexit.register
def _drain_at_exit() -> Any:
    stop(timeout=5.0)
