"""The change log vacuums itself on PostgreSQL once enough dead row versions gathered (ADR 0036), whatever the
server's autovacuum; nothing to do on SQLite. Real databases, real statistics."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import connection, transaction

from volcanoweb.feed import vacuum
from volcanoweb.feed.tasks import compact
from volcanoweb.jobs.models import PriorityClass

pytestmark = pytest.mark.django_db(transaction=True)


def _stats(column: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM pg_stat_user_tables WHERE relname = 'feed_entry'")
        return int(cursor.fetchone()[0])


def _flushed_until(check: Any) -> bool:
    """Poll PostgreSQL's statistics (a backend reports them when idle) until ``check()`` holds, for at most 10 s."""
    for _ in range(200):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_force_next_flush()")
        if check():
            return True
        time.sleep(0.05)
    return False


def _write(n: int) -> None:
    for i in range(n):  # each entry is inserted, then stamped at its commit: one dead version each
        PriorityClass.objects.create(name=f"vacuum-{i}", value=i)


def test_the_compaction_vacuums_the_log_once_enough_dead_versions_gathered(settings: Any) -> None:
    settings.FEED_VACUUM_DEAD_ROWS = 8
    _write(12)
    if connection.vendor != "postgresql":
        assert vacuum.dead_rows() == 0
        assert vacuum.vacuum_if_needed() is False
        return
    assert _flushed_until(lambda: vacuum.dead_rows() >= 8)
    vacuums = _stats("vacuum_count")
    compact()  # the periodic task
    assert _flushed_until(lambda: _stats("vacuum_count") == vacuums + 1)
    assert vacuum.dead_rows() < 8
    assert vacuum.vacuum_if_needed() is False  # below the threshold now


def test_no_vacuum_below_the_threshold_when_off_or_inside_a_transaction(settings: Any) -> None:
    _write(3)
    settings.FEED_VACUUM_DEAD_ROWS = 1_000_000
    assert vacuum.vacuum_if_needed() is False
    settings.FEED_VACUUM_DEAD_ROWS = 0
    assert vacuum.vacuum_if_needed() is False
    settings.FEED_VACUUM_DEAD_ROWS = 1
    with transaction.atomic():  # PostgreSQL refuses VACUUM in a transaction block: never tried there
        assert vacuum.vacuum_if_needed() is False
