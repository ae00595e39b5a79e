"""Few round trips for a handful of small statements: one batch per call on PostgreSQL, plain ``INSERT`` text.

The insights recording writes a few rows after every scheduling cycle (issue 19: it must not slow the
cycle by more than 5 %). Through the ORM each of them is a compiled statement and a wait for the
server: at 500 nodes the five statements of a quiet cycle cost more than that budget, the ORM's
statement building about half of it (``docs/performance.md``, "Issue 19: the recording's statements").
Two tools cut that down, on both databases:

* :func:`execute_batch` runs a list of statements and returns each one's row count and rows. On
  PostgreSQL they go as **one** query text (psycopg's client-side binding, which Django's cursors use,
  sends ``a; b; c`` with its parameters in one message): one round trip and one pass through the
  driver for the list. On SQLite (in-process, no round trips) they run one after the other.
* :func:`copy_rows` inserts many rows given as tuples of database values: PostgreSQL's ``COPY`` through
  psycopg (its C implementation writes the rows; no statement text to build or quote), SQLite's
  ``executemany``. A busy cycle writes hundreds of timeline rows: through the ORM's ``bulk_create``
  (on PostgreSQL an ``UNNEST`` of one array per column, which psycopg's client-side binding quotes
  element by element, JSON texts character by character) that was most of the recording's time.
* :func:`insert_statement` gives one multi-row ``INSERT`` (no ``RETURNING``) for model instances,
  with the values each field prepares for the database as the ORM's insert does (``pre_save`` then
  ``get_db_prep_save``: JSON, dates, binary and UUID values per vendor).

Both run in the caller's transaction; an error of any statement of a batch raises Django's exception
(``IntegrityError``, …) and the caller's ``atomic`` block rolls the whole transaction back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from django.db import connection as default_connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import AutoField, BigAutoField, Field, Model, SmallAutoField

__all__ = ["Outcome", "Statement", "copy_rows", "execute_batch", "insert_statement"]

#: One statement: its text (``%s`` placeholders) and its parameters.
Statement = tuple[str, Sequence[Any]]


@dataclass
class Outcome:
    """What one statement of a batch did: its row count and, for a query, its rows."""

    rowcount: int
    rows: list[tuple[Any, ...]] = field(default_factory=list)


def _outcome(cursor: Any) -> Outcome:
    return Outcome(cursor.rowcount, cursor.fetchall() if cursor.description is not None else [])


def execute_batch(
    statements: Sequence[Statement], connection: BaseDatabaseWrapper = default_connection
) -> list[Outcome]:
    """Run ``statements`` in order, in one round trip on PostgreSQL; return each one's :class:`Outcome`."""
    if not statements:
        return []
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            outcomes = []
            for sql, params in statements:
                cursor.execute(sql, params)
                outcomes.append(_outcome(cursor))
            return outcomes
        if any(";" in sql for sql, _ in statements):  # pragma: no cover - a caller's mistake
            raise ValueError("a batched statement must not contain ';'")
        cursor.execute("; ".join(sql for sql, _ in statements), [p for _, params in statements for p in params])
        outcomes = [_outcome(cursor)]
        while cursor.nextset():
            outcomes.append(_outcome(cursor))
    if len(outcomes) != len(statements):  # pragma: no cover - a cursor without client-side binding
        raise RuntimeError(f"{len(statements)} statements gave {len(outcomes)} results")
    return outcomes


def copy_rows(
    model: type[Model],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    connection: BaseDatabaseWrapper = default_connection,
) -> None:
    """Insert ``rows`` (values as the database takes them: see :func:`db_value`) into ``model``'s ``columns``."""
    if not rows:
        return
    qn = connection.ops.quote_name
    table, names = qn(model._meta.db_table), ", ".join(qn(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # psycopg's COPY, below Django's cursor: its errors are made Django's here, as execute's are
            with connection.wrap_database_errors, cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})", rows)


def db_value(model: type[Model], name: str, value: Any, connection: BaseDatabaseWrapper = default_connection) -> Any:
    """``value`` of ``model``'s field ``name`` as the database takes it (JSON, dates per vendor)."""
    return model._meta.get_field(name).get_db_prep_save(value, connection)  # type: ignore[union-attr]


@cache
def _columns(model: type[Model]) -> tuple[Field[Any, Any], ...]:
    """The concrete fields an insert names: all but a database-generated primary key."""
    auto = (AutoField, BigAutoField, SmallAutoField)
    return tuple(f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, auto)))


def insert_statement(objs: Sequence[Model], connection: BaseDatabaseWrapper = default_connection) -> Statement:
    """Return ``INSERT INTO table (…) VALUES (…), (…)`` and its parameters for ``objs`` (one model)."""
    if not objs:
        raise ValueError("nothing to insert")
    model = type(objs[0])
    fields = _columns(model)
    qn = connection.ops.quote_name
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) VALUES " + ", ".join(
        [row] * len(objs)
    )
    params = []
    for obj in objs:
        if type(obj) is not model:
            raise TypeError(f"one model per statement: {type(obj).__name__} among {model.__name__}")
        params += [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    return sql, params
