"""Fast bulk UPDATE of many rows with different values (one statement per batch).

Django's ``bulk_update`` builds ``CASE WHEN pk=... THEN ...`` per field, which grows quadratically
with the batch on PostgreSQL, and builds an expression per value in Python (on SQLite, where the embedded
mode's writers take turns, building them was an eighth of the process's CPU). Both databases join a
``VALUES`` list instead: PostgreSQL as ``UPDATE ... FROM (VALUES ...) AS v(...)`` with typed values, SQLite
(3.33 or later) as ``WITH v(...) AS (VALUES ...) UPDATE ... FROM v``, in batches within its parameter limit.
Other databases fall back to ``bulk_update``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from django.db import connection, models


def bulk_update_rows(
    model: type[models.Model], objs: Sequence[Any], fields: Sequence[str], batch_size: int = 1000
) -> None:
    """Write ``fields`` of every object in ``objs`` (saved rows) with one UPDATE per batch."""
    if not objs or not fields:
        return
    if connection.vendor == "postgresql":
        _update_postgresql(model, objs, fields, batch_size)
    elif connection.vendor == "sqlite" and sqlite3.sqlite_version_info >= (3, 33, 0):
        _update_sqlite(model, objs, fields, batch_size)
    else:
        model._default_manager.bulk_update(objs, list(fields), batch_size=100)


def _update_postgresql(model: type[models.Model], objs: Sequence[Any], fields: Sequence[str], batch_size: int) -> None:
    pk, columns = _pk_and_columns(model, fields)
    pk_type = pk.rel_db_type(connection) if hasattr(pk, "rel_db_type") else pk.db_type(connection)
    types = [pk_type] + [str(c.db_type(connection)) for c in columns]
    row = "(" + ", ".join(f"%s::{t}" for t in types) + ")"
    statement = 'UPDATE "{table}" AS t SET {assignments} FROM (VALUES {values}) AS v({names}) WHERE t."{pk}" = v."pk"'
    _update_joined(model, objs, pk, columns, row, statement, batch_size)


def _update_sqlite(model: type[models.Model], objs: Sequence[Any], fields: Sequence[str], batch_size: int) -> None:
    pk, columns = _pk_and_columns(model, fields)
    row = "(" + ", ".join(["%s"] * (1 + len(columns))) + ")"
    statement = 'WITH v({names}) AS (VALUES {values}) UPDATE "{table}" SET {assignments} FROM v '
    statement += 'WHERE "{table}"."{pk}" = v."pk"'
    limit = connection.features.max_query_params or 999
    _update_joined(model, objs, pk, columns, row, statement, max(1, min(batch_size, limit // (1 + len(columns)))))


def _update_joined(
    model: type[models.Model],
    objs: Sequence[Any],
    pk: Any,
    columns: Sequence[models.Field[Any, Any]],
    row: str,
    statement: str,
    size: int,
) -> None:
    """Run ``statement`` (its ``{table}``, ``{names}``, ``{assignments}``, ``{values}`` and ``{pk}`` filled in) for
    each batch of at most ``size`` objects, ``row`` being the placeholder of one object's key and columns."""
    names = ", ".join(['"pk"'] + [f'"{c.column}"' for c in columns])
    assignments = ", ".join(f'"{c.column}" = v."{c.column}"' for c in columns)
    table = model._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(objs), size):
            chunk = objs[start : start + size]
            params: list[Any] = []
            for obj in chunk:
                params.append(pk.get_db_prep_save(obj.pk, connection))
                for column in columns:
                    params.append(column.get_db_prep_save(getattr(obj, column.attname), connection))
            values = ", ".join([row] * len(chunk))
            sql = statement.format(table=table, names=names, assignments=assignments, values=values, pk=pk.column)
            cursor.execute(sql, params)


def _pk_and_columns(model: type[models.Model], fields: Sequence[str]) -> tuple[Any, list[models.Field[Any, Any]]]:
    meta = model._meta
    assert meta.pk is not None
    return meta.pk, [_column(meta.get_field(name)) for name in fields]


def _column(field: Any) -> models.Field[Any, Any]:
    """The field as a concrete column (``get_field`` may also answer a relation's reverse side)."""
    assert isinstance(field, models.Field), f"{field} is not a column"
    return field
