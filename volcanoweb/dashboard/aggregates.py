"""Σ pod requests per group, computed by the database: the pages never load pods to add them up.

``Pod.requests`` is a JSON object of integers in scheduler units (``{"cpu": 1000, "memory": ...}``) whose
keys vary (extended resources), so the database expands it and sums per key in one grouped query:
``jsonb_each`` on PostgreSQL (stack mode), ``json_each`` on SQLite (embedded mode), the same statement
otherwise. Any other database adds up in Python (:func:`sums_in_python`, also the tests' reference).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet

from volcanoweb.jobs.models import Pod

Key = tuple[Any, ...]
#: Per backend: the expansion of ``p.req`` (only when it is a JSON object; ``jsonb_each`` refuses anything
#: else) into ``kv(key, value)`` rows, the condition that keeps numbers, and the numeric value.
EXPAND = {
    "postgresql": (
        "CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(p.req) = 'object' THEN p.req ELSE '{}'::jsonb END) AS kv",
        "jsonb_typeof(kv.value) = 'number'",
        "kv.value::numeric",
    ),
    "sqlite": (
        "CROSS JOIN json_each(CASE WHEN json_type(p.req) = 'object' THEN p.req ELSE '{}' END) AS kv",
        "kv.type IN ('integer', 'real')",
        "kv.value",
    ),
}


@dataclass
class PodSums:
    """How many pods a group has and Σ of their numeric requests per resource."""

    pods: int = 0
    requests: dict[str, float] = field(default_factory=dict)


def request_sums(queryset: QuerySet[Pod], *group: str) -> dict[Key, PodSums]:
    """Return ``{(group values...): PodSums}`` for the pods of ``queryset`` (one query).

    ``group`` names fields, lookups (``podgroup__queue_name``) or annotations of ``queryset``; with
    none, the single key is ``()``. Non-numeric request values are ignored.
    """
    rows = queryset.order_by().values_list(*group, "requests")
    vendor = connections[rows.db].vendor
    if vendor not in EXPAND:
        return sums_in_python(rows)
    expand, is_number, number = EXPAND[vendor]
    try:
        inner, params = rows.query.sql_with_params()
    except EmptyResultSet:
        return {}
    cols = [f"g{i}" for i in range(len(group))]
    columns = ", ".join([*cols, "req"])
    distinct = ", ".join(f"i.{c}" for c in [*cols, "req"])
    keys = ", ".join(f"p.{c}" for c in cols)
    lead = f"{keys}, " if cols else ""
    by_group = f"GROUP BY {keys}" if cols else ""
    # Pods of one task request the same: count each distinct (group, requests) once, then expand
    # only those objects; the rows with a NULL resource name carry the pod counts.
    # (SQLite has no column list on a derived table, hence the CTE ``i``.)
    sql = (
        f"WITH i ({columns}) AS ({inner}), "
        f"p ({columns}, n) AS (SELECT {distinct}, COUNT(*) FROM i GROUP BY {distinct}) "
        f"SELECT {lead}NULL, SUM(p.n) FROM p {by_group} "
        f"UNION ALL "
        f"SELECT {lead}kv.key, SUM({number} * p.n) FROM p {expand} "
        f"WHERE {is_number} GROUP BY {lead}kv.key"
    )
    out: dict[Key, PodSums] = {}
    with connections[rows.db].cursor() as cursor:
        cursor.execute(sql, params)
        for row in cursor.fetchall():
            key, name, amount = tuple(row[: len(cols)]), row[len(cols)], row[len(cols) + 1]
            sums = out.setdefault(key, PodSums())
            if name is None:
                sums.pods = int(amount or 0)
            else:
                sums.requests[name] = float(amount)
    return {key: sums for key, sums in out.items() if sums.pods}  # no pods, no group: a row of NULL


def sums_in_python(rows: Iterable[tuple[Any, ...]]) -> dict[Key, PodSums]:
    """The same sums over ``(group values..., requests)`` rows, added up here."""
    out: dict[Key, PodSums] = {}
    for row in rows:
        sums = out.setdefault(tuple(row[:-1]), PodSums())
        sums.pods += 1
        requests = row[-1] if isinstance(row[-1], dict) else {}
        for name, value in requests.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                sums.requests[name] = sums.requests.get(name, 0.0) + float(value)
    return out
