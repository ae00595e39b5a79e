"""Few round trips for a handful of small writes: one pipelined batch on PostgreSQL, plain ``INSERT`` text.

The insights recording writes a few rows after every scheduling cycle (issue 19: it must not slow the
cycle by more than 5 %). Through the ORM each of them is a compiled statement and a wait for the
server: at 500 nodes the five statements of a quiet cycle cost more than the budget, the ORM's
statement building about half of it (``docs/performance.md``, "Issue 19: the recording's statements").
Two tools cut that down, on both databases:

* :func:`pipelined` runs its block in psycopg's pipeline mode on PostgreSQL: statements are sent
  without waiting for their results, and the client waits once, when a result is read (a
  ``fetch``) or when the block ends, so ``BEGIN``, several writes and ``COMMIT`` cost one round trip.
  In the block, a statement's ``rowcount`` is only known after such a wait (the ORM's ``update()``
  returns -1 there): call the ``sync`` the block is given, or read a result with a ``fetch*`` call,
  before reading it. On SQLite (in-process, no round trips) the block runs as it is and ``sync``
  does nothing.
* :func:`insert_statement` gives one multi-row ``INSERT`` (no ``RETURNING``) for model instances,
  with the values each field prepares for the database as the ORM's insert does (``pre_save`` then
  ``get_db_prep_save``: JSON, dates, binary and UUID values per vendor); the caller executes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

from django.db import connection as default_connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import AutoField, BigAutoField, Field, Model, SmallAutoField

__all__ = ["insert_statement", "pipelined"]


def _nothing() -> None:
    return None


@contextmanager
def pipelined(connection: BaseDatabaseWrapper = default_connection) -> Iterator[Callable[[], None]]:
    """Send the block's statements in batches on PostgreSQL (psycopg's pipeline mode); give its ``sync``.

    ``sync()`` waits for the results of everything sent so far (then ``rowcount`` is known). Put the
    block inside the transaction (``with transaction.atomic(), pipelined() as sync:``): Django then starts
    it outside the pipeline, and psycopg sends ``BEGIN`` with the block's first statement."""
    if connection.vendor != "postgresql":
        yield _nothing
        return
    connection.ensure_connection()
    # an error of a statement surfaces when its result is read (a sync, the block's end): as Django's
    # exception (``IntegrityError``, …), like one raised by ``execute``
    with connection.wrap_database_errors, connection.connection.pipeline() as pipeline:

        def sync() -> None:
            with connection.wrap_database_errors:
                pipeline.sync()

        yield sync


@cache
def _columns(model: type[Model]) -> tuple[Field[Any, Any], ...]:
    """The concrete fields an insert names: all but a database-generated primary key."""
    auto = (AutoField, BigAutoField, SmallAutoField)
    return tuple(f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, auto)))


def insert_statement(
    objs: Sequence[Model], connection: BaseDatabaseWrapper = default_connection
) -> tuple[str, list[Any]]:
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
