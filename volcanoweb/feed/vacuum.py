"""The change log's own vacuum on PostgreSQL (ADR 0036).

Every entry of the log is written twice (inserted without a revision, stamped at commit), so each leaves a dead
row version and dead index entries behind, ~300 a second in a busy run. Until they are vacuumed, the stamp's
look-up of its transaction's entries (the ``feed_entry_unstamped`` index) and the readers' range scans visit
them: on a server whose autovacuum is off (this project's CI machine has it off), the commit stamp grew from 28 %
to 72 % of PostgreSQL's active time over a 10,000-job run, and one manual ``VACUUM feed_entry`` took it off the
top of the list. Autovacuum's defaults (20 % of the table) would also let 20,000 dead entries pile up in a log of
100,000. So the periodic compaction also vacuums the log once ``FEED_VACUUM_DEAD_ROWS`` dead row versions have
gathered (``pg_stat_user_tables``), whoever else vacuums it. SQLite rewrites nothing of the kind: a no-op there.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)
TABLE = "feed_entry"


def dead_rows() -> int:
    """The log's dead row versions as PostgreSQL's statistics count them (0 elsewhere)."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = %s", [TABLE])
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def vacuum_if_needed() -> bool:
    """``VACUUM`` the log when ``FEED_VACUUM_DEAD_ROWS`` (0: never) dead versions have gathered; return whether
    it ran. Not inside a transaction (PostgreSQL refuses ``VACUUM`` there), nor on SQLite."""
    threshold = int(settings.FEED_VACUUM_DEAD_ROWS)
    if threshold <= 0 or connection.vendor != "postgresql" or connection.in_atomic_block:
        return False
    dead = dead_rows()
    if dead < threshold:
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {TABLE}")
    log.info("change log vacuumed (%d dead row versions)", dead)
    return True
