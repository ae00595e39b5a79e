"""PostgreSQL: revisions are taken at commit, side by side, and readers read up to the frontier (ADR 0029).

A transaction that has taken its revisions but is not yet visible holds the frontier below its first revision:
a reader never reads a later revision that committed first, and so never sees revision 11 before 10. The
transaction committing here is a second connection stopped between ``volcanoweb_feed_commit()`` (the stamp the
product's backend sends with ``COMMIT``) and its ``COMMIT``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection

from volcanoweb.feed import log, triggers
from volcanoweb.jobs.models import PriorityClass

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql_only]


@pytest.fixture
def other() -> Iterator[Any]:
    """A second connection to the test database, outside Django (its transactions are the test's to end)."""
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    conn = psycopg.connect(**params)
    try:
        yield conn
    finally:
        conn.rollback()
        conn.close()


def _stamped(conn: Any, name: str) -> int:
    """Write a PriorityClass on ``conn`` and stamp it as a commit would; return its revision (not committed)."""
    conn.execute(
        "INSERT INTO jobs_priorityclass (uid, name, labels, annotations, resource_version, generation, created_at, "
        "updated_at, value, global_default, description, preemption_policy) VALUES "
        "(gen_random_uuid(), %s, '{}', '{}', 1, 1, now(), now(), 1, false, '', 'PreemptLowerPriority')",
        [name],
    )
    row = conn.execute("SELECT volcanoweb_feed_commit()").fetchone()
    return int(row[0])


def test_a_reader_never_reads_past_a_transaction_still_committing(other: Any) -> None:
    start = log.head()[0]
    first = _stamped(other, "early")  # revisions taken, not yet visible
    late = PriorityClass.objects.create(name="late", value=2)  # takes a later revision and commits first
    late.refresh_from_db()
    assert late.resource_version > first

    frontier = log.head()[0]
    assert frontier < first  # the later, visible revision is not readable yet
    assert [c.name for c in log.changes(start, upto=frontier)] == []
    assert late.resource_version in [c.rev for c in log.changes(start)]  # ... though the row is there

    other.commit()
    frontier = log.head()[0]
    assert frontier >= late.resource_version
    assert [(c.rev, c.name) for c in log.changes(start, upto=frontier)] == [
        (first, "early"),
        (late.resource_version, "late"),
    ]


def test_a_consistent_read_waits_for_the_transactions_committing_when_it_starts(other: Any) -> None:
    first = _stamped(other, "early")
    late = PriorityClass.objects.create(name="late", value=2)
    late.refresh_from_db()
    threading.Timer(0.3, other.commit).start()
    frontier = log.head(wait=True)[0]  # waits for "early" to commit
    assert frontier >= late.resource_version > first


def test_a_committer_between_registering_and_publishing_holds_the_frontier(other: Any) -> None:
    """A transaction that registered as committing but has not published its first revision yet may hold any
    revision up to the sequence's: the frontier does not move past the last one known."""
    known = log.head()[0]
    other.execute("SELECT pg_advisory_xact_lock_shared(%s, 0)", [triggers.REGISTERED])
    PriorityClass.objects.create(name="meanwhile", value=3)
    assert log.head()[0] == known
    other.rollback()
    assert log.head()[0] >= PriorityClass.objects.get(name="meanwhile").resource_version


def test_a_rolled_back_commit_leaves_a_gap_that_readers_pass(other: Any) -> None:
    start = log.head()[0]
    lost = _stamped(other, "lost")
    other.rollback()
    kept = PriorityClass.objects.create(name="kept", value=4)
    kept.refresh_from_db()
    frontier = log.head()[0]
    assert frontier >= kept.resource_version > lost
    assert [c.name for c in log.changes(start, upto=frontier)] == ["kept"]
