"""Django's SQLite backend, with the write transactions of one process queued first come, first served.

SQLite has one writer at a time. With ``transaction_mode: IMMEDIATE`` every transaction takes the write
lock at ``BEGIN``, and a connection that finds it taken retries in SQLite's busy handler: it sleeps and
polls until ``timeout``. Under load that is not a queue: in the embedded mode (one process, 20 request
threads, the in-process loops and the job-sync drain) an unlucky request kept losing the race to later
ones and failed after the 20 s timeout with ``database is locked`` while the lock was never held for long.
Here a transaction first takes a process-wide :class:`FairLock` (waiters are served in arrival order,
with the same timeout), so threads of this process no longer poll against each other; SQLite's own
lock and busy timeout still order this process against others (a CLI, a migration).
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from django.db.backends.sqlite3 import base
from django.db.utils import OperationalError


class FairLock:
    """A lock whose waiters get it in the order they asked (``acquire`` gives up after ``timeout``)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: collections.deque[threading.Event] = collections.deque()

    def acquire(self, timeout: float) -> bool:
        with self._mutex:
            if not self._held and not self._waiters:
                self._held = True
                return True
            turn = threading.Event()
            self._waiters.append(turn)
        if turn.wait(timeout):
            return True
        with self._mutex:
            if turn.is_set():  # handed over just as the wait ended
                return True
            self._waiters.remove(turn)
            return False

    def release(self) -> None:
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().set()  # handed over: stays held
            else:
                self._held = False


#: One queue per database file would be exact; the embedded mode has one database.
WRITERS = FairLock()


class DatabaseWrapper(base.DatabaseWrapper):
    """SQLite, with ``atomic`` blocks of this process queued on :data:`WRITERS` before ``BEGIN``."""

    _holds_writer = False

    def _start_transaction_under_autocommit(self) -> None:
        timeout = float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5))
        if not WRITERS.acquire(timeout):
            raise OperationalError("database is locked (waited for this process's other writers)")
        self._holds_writer = True
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            self._release_writer()
            raise

    def _release_writer(self) -> None:
        if self._holds_writer:
            self._holds_writer = False
            WRITERS.release()

    def _commit(self) -> Any:
        try:
            return super()._commit()  # type: ignore[misc]
        finally:
            self._release_writer()

    def _rollback(self) -> Any:
        try:
            return super()._rollback()  # type: ignore[misc]
        finally:
            self._release_writer()

    def _close(self) -> Any:
        try:
            return super()._close()  # type: ignore[misc]
        finally:
            self._release_writer()
