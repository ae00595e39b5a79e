"""``volcanoweb.core.batchsql``: a plain INSERT stores what the ORM stores; a batch keeps order and transaction."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from volcanoweb.core.batchsql import copy_rows, db_value, execute_batch, insert_statement
from volcanoweb.insights.models import CycleSnapshot, QueueSample, TimelineEntry

pytestmark = pytest.mark.django_db(transaction=True)

FIGURES = {"allocated": {"cpu": 1500, "nvidia.com/gpu": 2}, "jobs": {"Running": 3}, "demand": {}}


def _sample(queue: str, at: datetime) -> QueueSample:
    return QueueSample(resolution="cycle", queue=queue, bucket=at, run_id=7, **FIGURES)


def _stored(queue: str) -> dict[str, Any]:
    return QueueSample.objects.filter(queue=queue).values().get() | {"id": None}


def test_an_insert_statement_stores_what_the_orm_stores() -> None:
    at = datetime(2026, 12, 2, 14, 2, 3, 456789, tzinfo=UTC)
    QueueSample.objects.bulk_create([_sample("by-orm", at)])
    execute_batch([insert_statement([_sample("by-sql", at), _sample("by-sql-2", at)])])
    orm, sql = _stored("by-orm"), _stored("by-sql")
    assert {**orm, "queue": "by-sql"} == sql  # JSON, time (zone and microseconds), defaults alike
    assert sql["allocated"] == {"cpu": 1500, "nvidia.com/gpu": 2}
    assert sql["bucket"] == at
    assert sql["samples"] == 1  # the model's default
    assert QueueSample.objects.filter(queue="by-sql-2").exists()


def test_binary_and_uuid_values_round_trip() -> None:
    key = uuid.uuid4()
    execute_batch([insert_statement([CycleSnapshot(id=key, data=b"\x00\xffzlib", size=5, now_at=2, last_run=3)])])
    row = CycleSnapshot.objects.get(pk=key)
    assert (bytes(row.data), row.size, row.now_at, row.last_run) == (b"\x00\xffzlib", 5, 2, 3)


def test_one_model_per_statement_and_not_empty() -> None:
    at = datetime(2026, 12, 2, tzinfo=UTC)
    with pytest.raises(TypeError, match="one model per statement"):
        insert_statement([_sample("a", at), CycleSnapshot(id=uuid.uuid4(), data=b"")])
    with pytest.raises(ValueError, match="nothing to insert"):
        insert_statement([])


def test_a_batch_gives_each_statements_row_count_and_rows_in_order() -> None:
    at = datetime(2026, 12, 2, tzinfo=UTC)
    with transaction.atomic():
        out = execute_batch(
            [
                insert_statement([_sample("q1", at), _sample("q2", at)]),
                ("UPDATE insights_queuesample SET samples = samples + 1 WHERE queue = %s", ["q2"]),
                ("SELECT queue, samples FROM insights_queuesample WHERE run_id = %s ORDER BY queue", [7]),
                ("UPDATE insights_queuesample SET samples = 9 WHERE queue = %s", ["none; DROP TABLE x"]),
            ]
        )
    assert [o.rowcount for o in out[:2]] == [2, 1]
    assert out[2].rows == [("q1", 1), ("q2", 2)]  # the query sees the statements before it
    assert (out[3].rowcount, out[3].rows) == (0, [])  # a parameter is a value, never statement text
    assert execute_batch([]) == []


def test_a_failed_statement_rolls_back_the_whole_transaction_and_the_connection_stays_usable() -> None:
    at = datetime(2026, 12, 2, tzinfo=UTC)

    def both() -> None:
        with transaction.atomic():
            execute_batch([insert_statement([_sample("first", at)])])
            execute_batch(
                [
                    insert_statement([_sample("second", at)]),
                    insert_statement([_sample("duplicate", at), _sample("duplicate", at)]),  # unique bucket
                ]
            )

    with pytest.raises(IntegrityError):
        both()
    assert not QueueSample.objects.exists()  # neither the first batch nor the start of the second
    with transaction.atomic():
        execute_batch([insert_statement([_sample("after", at)])])
    assert list(QueueSample.objects.values_list("queue", flat=True)) == ["after"]


def test_copied_rows_store_what_the_orm_stores() -> None:
    at = datetime(2026, 12, 2, 14, 2, 3, 456789, tzinfo=UTC)
    numbers = {"cpu": [7, 8], "holders": [{"podgroup": "a/b", "requests": {"cpu": 4000}}], "quote": 'it\'s "x"\\n'}
    TimelineEntry.objects.create(
        podgroup_key="ns/orm", namespace="ns", queue="q", reason="R", message="m;\t\\", numbers=numbers, started_at=at
    )
    columns = ("podgroup_key", "namespace", "queue", "kind", "reason", "plugin", "message", "numbers")
    values = ("ns/copy", "ns", "q", "wait", "R", "", "m;\t\\", db_value(TimelineEntry, "numbers", numbers))
    when = ("started_at", "ended_at", "started_run")
    copy_rows(TimelineEntry, columns + when, [(*values, db_value(TimelineEntry, "started_at", at), None, 0)])
    copy_rows(TimelineEntry, columns, [])  # nothing to write: nothing written
    orm, copied = (TimelineEntry.objects.filter(podgroup_key=k).values().get() for k in ("ns/orm", "ns/copy"))
    assert {**orm, "id": None, "podgroup_key": "ns/copy"} == {**copied, "id": None}
    assert copied["numbers"] == numbers
    assert (copied["started_at"], copied["ended_at"], copied["message"]) == (at, None, "m;\t\\")
    assert TimelineEntry.objects.count() == 2


def test_a_copy_that_breaks_a_constraint_raises_djangos_error_and_writes_nothing() -> None:
    at = db_value(TimelineEntry, "started_at", datetime(2026, 12, 2, tzinfo=UTC))
    columns = ("podgroup_key", "namespace", "kind", "reason", "plugin", "message", "numbers", "started_at")
    good = ("ns/a", "ns", "wait", "R", "", "", db_value(TimelineEntry, "numbers", {}), at)

    def copy() -> None:
        with transaction.atomic():
            copy_rows(TimelineEntry, columns, [good])  # started_run (NOT NULL) is missing

    with pytest.raises(IntegrityError):
        copy()
    assert not TimelineEntry.objects.exists()
