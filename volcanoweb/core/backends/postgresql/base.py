"""Django's PostgreSQL backend, giving the change log's entries their revisions just before ``COMMIT``.

Every transaction that wrote a followed table left entries with ``rev`` NULL; ``volcanoweb_feed_commit()``
runs the deferred constraint checks, then takes the revisions from a sequence and numbers them, registered as
committing until the ``COMMIT`` right after is visible (:mod:`volcanoweb.feed.triggers`, ADR 0029). Both go
to the server in one round trip. A transaction that wrote nothing followed pays one index probe. Until the
function exists (a database not migrated yet) nothing is called; a statement run outside a transaction is
stamped by the log's deferred constraint trigger instead.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base
from psycopg.pq import TransactionStatus

_IN_TRANSACTION = TransactionStatus.INTRANS


class DatabaseWrapper(base.DatabaseWrapper):
    """PostgreSQL, with ``volcanoweb_feed_commit()`` before every commit once the log is installed."""

    _feed_installed: bool | None = None

    def _feed_ready(self) -> bool:
        if not self._feed_installed:
            with self.connection.cursor() as cursor:
                cursor.execute("SELECT to_regproc('volcanoweb_feed_commit') IS NOT NULL")
                row = cursor.fetchone()
            self._feed_installed = bool(row and row[0])
        return bool(self._feed_installed)

    def _commit(self) -> Any:
        if self.connection is not None:
            with self.wrap_database_errors:
                if self._feed_ready() and self.connection.info.transaction_status == _IN_TRANSACTION:
                    with self.connection.cursor() as cursor:  # one simple query: stamp, then commit
                        cursor.execute("SELECT volcanoweb_feed_commit(); COMMIT")
        return super()._commit()  # type: ignore[misc]  # psycopg's commit: nothing left to do

    def _close(self) -> Any:
        self._feed_installed = None
        return super()._close()  # type: ignore[misc]
