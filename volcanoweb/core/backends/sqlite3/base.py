"""Django's SQLite backend, with the write transactions of one process queued first come, first served.

SQLite has one writer at a time. With ``transaction_mode: IMMEDIATE`` every transaction takes the write
lock at ``BEGIN``, and a connection that finds it taken retries in SQLite's busy handler: it sleeps and
polls until ``timeout``. Under load that is not a queue: in the embedded mode (one process, 20 request
threads, the in-process loops and the job-sync drain) an unlucky request kept losing the race to later
ones and failed after the 20 s timeout with ``database is locked`` while the lock was never held for long.
Here a transaction first takes a process-wide :class:`FairLock` (waiters are served in arrival order,
with the same timeout), so threads of this process no longer poll against each other; SQLite's own
lock and busy timeout still order this process against others (a CLI, a migration).

Its connections are also reused (:class:`Pool`). The ASGI server closes a request's connection when the request
ends (persistent connections leak under ASGI, ``volcanoweb/asgi.py``), and opening one costs more than most
requests: Django registers its SQL functions and runs the pragmas on every new connection (a third of the
embedded process's CPU under load went there). A closed connection goes back to the pool, outside any
transaction, and the next request takes it.
"""

from __future__ import annotations

import collections
import os
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


class Pool:
    """Idle connections of this process by database (file and options), at most ``size`` of them.

    A forked child never uses its parent's connections (the same file descriptors, the parent's transaction
    state): the pool starts empty in a process other than the one that filled it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._idle: list[tuple[str, Any]] = []
        self._pid = os.getpid()

    def _own(self) -> None:
        if self._pid != os.getpid():
            self._idle, self._pid = [], os.getpid()

    def take(self, key: str) -> Any | None:
        with self._lock:
            self._own()
            for index in range(len(self._idle) - 1, -1, -1):  # the last one given back first (its pages are warm)
                held, conn = self._idle[index]
                if held == key:
                    del self._idle[index]
                    return conn
        return None

    def give(self, key: str, conn: Any) -> bool:
        """Keep ``conn`` for reuse (False: the pool is full, the caller closes it)."""
        with self._lock:
            self._own()
            if len(self._idle) >= self.size:
                return False
            self._idle.append((key, conn))
            return True


#: The embedded process serves 20 request threads beside its loops; a few more idle connections cost nothing.
POOL = Pool(size=32)


class DatabaseWrapper(base.DatabaseWrapper):
    """SQLite, with ``atomic`` blocks of this process queued on :data:`WRITERS` before ``BEGIN``."""

    _holds_writer = False

    def _pool_key(self) -> str:
        return repr((self.settings_dict["NAME"], sorted(self.settings_dict.get("OPTIONS", {}).items())))

    def get_new_connection(self, conn_params: Any) -> Any:
        if not self.is_in_memory_db():
            conn = POOL.take(self._pool_key())
            if conn is not None:
                conn.execute("PRAGMA foreign_keys = ON")  # as a new one (a migration may have turned them off)
                return conn
        return super().get_new_connection(conn_params)

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
            conn = self.connection
            if conn is not None and not self.is_in_memory_db() and not self.errors_occurred:
                if conn.in_transaction:
                    conn.rollback()  # what Django's close does to an open transaction
                if POOL.give(self._pool_key(), conn):
                    return None
            return super()._close()  # type: ignore[misc]
        finally:
            self._release_writer()
