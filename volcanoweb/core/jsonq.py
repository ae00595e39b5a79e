"""Portable queries over JSON label maps: the same SQL meaning on SQLite (embedded) and PostgreSQL (stack).

Django's JSON lookups do not all behave alike on both backends: ``__contains`` on a JSONField is refused
by SQLite (``NotSupportedError``), and comparing a ``KeyTextTransform`` annotation with a plain string
makes SQLite parse the string as JSON (``OperationalError: malformed JSON``). The helpers here compare
the *text* of one key (``labels ->> 'key'`` on PostgreSQL, ``JSON_EXTRACT(labels, '$."key"')`` on SQLite)
cast to ``text``, so the ordinary text lookups apply on both. Keys are passed as expressions, never as
``labels__<key>`` lookups, so that keys holding ``__``, dots or slashes (``volcano.sh/createdByJobFlow``)
stay one key.
"""

from __future__ import annotations

from django.db.models import Q, TextField
from django.db.models.expressions import Expression
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.db.models.lookups import Exact, In, IsNull


def label_text(key: str, field: str = "labels") -> Expression:
    """Return the label's value as text (NULL when the object has no such label)."""
    return Cast(KeyTextTransform(key, field), output_field=TextField())


def label_equals(key: str, value: str, field: str = "labels") -> Q:
    """Objects whose label ``key`` is exactly ``value`` (``labels__contains={key: value}``, portably)."""
    return Q(Exact(label_text(key, field), value))


def label_in(key: str, values: tuple[str, ...] | list[str], field: str = "labels") -> Q:
    """Objects whose label ``key`` is one of ``values``."""
    return Q(In(label_text(key, field), list(values)))


def label_missing(key: str, field: str = "labels") -> Q:
    """Objects without the label ``key`` (or whose value is JSON ``null``)."""
    return Q(IsNull(label_text(key, field), True))
