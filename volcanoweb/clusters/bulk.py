"""Fast bulk UPDATE of many rows with different values (one statement per batch).

Django's ``bulk_update`` builds ``CASE WHEN pk=... THEN ...`` per field, which grows quadratically
with the batch on PostgreSQL; on PostgreSQL this joins a ``VALUES`` list instead. Other databases
fall back to ``bulk_update`` in small batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, models


def bulk_update_rows(
    model: type[models.Model], objs: Sequence[Any], fields: Sequence[str], batch_size: int = 1000
) -> None:
    """Write ``fields`` of every object in ``objs`` (saved rows) with one UPDATE per batch."""
    if not objs or not fields:
        return
    if connection.vendor != "postgresql":
        model._default_manager.bulk_update(objs, list(fields), batch_size=100)
        return
    meta = model._meta
    pk = meta.pk
    assert pk is not None
    columns = [_column(meta.get_field(name)) for name in fields]
    pk_type = pk.rel_db_type(connection) if hasattr(pk, "rel_db_type") else pk.db_type(connection)
    types = [pk_type] + [str(c.db_type(connection)) for c in columns]
    placeholder = "(" + ", ".join(f"%s::{t}" for t in types) + ")"
    names = ", ".join(['"pk"'] + [f'"{c.column}"' for c in columns])
    assignments = ", ".join(f'"{c.column}" = v."{c.column}"' for c in columns)
    table = meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(objs), batch_size):
            chunk = objs[start : start + batch_size]
            params: list[Any] = []
            for obj in chunk:
                params.append(obj.pk)
                for column in columns:
                    params.append(column.get_db_prep_save(getattr(obj, column.attname), connection))
            values = ", ".join([placeholder] * len(chunk))
            cursor.execute(
                f'UPDATE "{table}" AS t SET {assignments} FROM (VALUES {values}) AS v({names}) '
                f'WHERE t."{pk.column}" = v."pk"',
                params,
            )


def _column(field: Any) -> models.Field[Any, Any]:
    """The field as a concrete column (``get_field`` may also answer a relation's reverse side)."""
    assert isinstance(field, models.Field), f"{field} is not a column"
    return field
