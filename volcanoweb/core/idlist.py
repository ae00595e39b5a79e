"""A filter on a long list of values passed as **one** parameter, on PostgreSQL and SQLite.

``filter(pk__in=ids)`` with 1,000 ids sends 1,000 parameters: psycopg's client-side binding then
quotes and splices each of them into the statement, which at that size costs more than running it
(issue 17, docs/performance.md "Issue 17: the binding cycle"), and SQLite limits the number of
variables of one statement. ``OneOf(F("pk"), ids)`` sends the whole list as one value:

* PostgreSQL: ``"id" = ANY(%s::bigint[])`` (or ``::text[]``) with one parameter, the array's text
  (``'{1,2,3}'``): psycopg's own list adapter dumps each element in Python, the text costs one
  ``join`` (0.16 ms for 1,000 ids against 0.5 ms as a list and 2 ms as 1,000 ``IN`` parameters, in
  psycopg alone); the index is used as for ``IN``;
* SQLite: ``"id" IN (SELECT value FROM json_each(%s))`` with one JSON text parameter.

Use it in ``filter()`` / ``Q()`` like any boolean expression: ``Pod.objects.filter(OneOf(F("pk"), ids))``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db.models import Expression, F, Q
from django.db.models.lookups import Lookup

__all__ = ["OneOf", "one_of"]


class OneOf(Lookup):  # type: ignore[type-arg]
    """``lhs`` equals one of the values of the list ``rhs`` (ints or strings), the list as one parameter."""

    lookup_name = "one_of"
    prepare_rhs = False  # the list is passed as it is, not through the field's get_prep_value

    def __init__(self, lhs: Expression | F, rhs: Iterable[Any]) -> None:
        super().__init__(lhs, list(rhs))

    def _lhs(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        sql, params = self.process_lhs(compiler, connection)
        return sql, list(params)

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        if not self.rhs:
            raise EmptyResultSet  # as Django's ``__in=[]``: the query matches nothing (and is not run)
        lhs, params = self._lhs(compiler, connection)
        if all(type(v) is int for v in self.rhs):
            return f"{lhs} = ANY(%s::bigint[])", [*params, "{" + ",".join(map(str, self.rhs)) + "}"]
        return f"{lhs} = ANY(%s::text[])", [*params, "{" + ",".join(map(_text_element, self.rhs)) + "}"]

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:  # SQLite (and any other)
        if not self.rhs:
            raise EmptyResultSet
        lhs, params = self._lhs(compiler, connection)
        return f"{lhs} IN (SELECT value FROM json_each(%s))", [*params, json.dumps(self.rhs)]


def _text_element(value: str) -> str:
    """``value`` as a quoted element of a PostgreSQL array literal."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def one_of(field: str, values: Iterable[Any]) -> Q:
    """``Q(<field>__in=values)`` with the values sent as one parameter (see the module docstring)."""
    return Q(OneOf(F(field), values))
