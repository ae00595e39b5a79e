"""Lists at a revision: ``metadata.resourceVersion``, ``limit``/``continue`` as (revision, last key) and
``resourceVersionMatch``, as kube-apiserver answers them (ADR 0024).

The first page is read in one snapshot with the log's head, so it is exactly the state at that revision.
A later page (or ``resourceVersionMatch=Exact``) is the state at the token's revision: the rows that did not
change since, as they are now, plus the objects that changed since, as the log says they were then (the row
before the first change after the revision; an object created since is left out, one deleted since is
back). So a delete between two pages skips nothing, and nothing appears twice. Once the log is compacted
past the revision, the answer is 410 ``Expired``, with a fresh-list hint.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Collate

from volcanoweb.api.listing import MAX_LIMIT, apply_label_selector, clean_text
from volcanoweb.core.errors import ApiError, BadRequest, Cause
from volcanoweb.feed import log
from volcanoweb.feed.log import Expired
from volcanoweb.kubeapi import query
from volcanoweb.kubeapi.selection import Selection

T = TypeVar("T")
#: The most objects a watch's initial state holds.
MAX_OBJECTS = 5000
MATCHES = ("Exact", "NotOlderThan")


class TooLarge(ApiError):
    """504: a list at a revision the log has not reached yet (kube-apiserver's "Too large resource version")."""

    code = 504
    reason = "Timeout"


def consistent(read: Callable[[int, int], T]) -> T:
    """Run ``read(revision, compacted)`` on the rows of one snapshot, ``revision`` being a revision every change
    at or below which the snapshot shows (changes above it that it shows too are undone by :func:`_at_revision`).

    On PostgreSQL the revision is the log's frontier, read before the snapshot starts (ADR 0029); on SQLite
    the head, read in the snapshot.
    """
    if connection.in_atomic_block:
        return read(*log.head(wait=True))  # inside the caller's transaction (a test's, a view's)
    if connection.vendor == "postgresql":
        current = log.head(wait=True)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return read(*current)
    with transaction.atomic():
        return read(*log.head())


def base_query(selection: Selection) -> QuerySet[Any]:
    """The scoped, filtered query of a selection (the label selector in SQL, the field terms that map to columns)."""
    resource = selection.resource
    queryset = resource.base(selection.access)
    if selection.namespace is not None:
        queryset = queryset.filter(**{resource.namespace_field: selection.namespace})
    queryset = query.filter_fields(resource, queryset, selection.terms)
    if selection.label_selector and resource.labels:
        queryset = apply_label_selector(queryset, selection.label_selector)
    return queryset


def _keyed(selection: Selection, queryset: QuerySet[Any], after: tuple[Any, ...] | None) -> QuerySet[Any]:
    """``queryset`` in key order (the kind's order fields, then pk) from just after ``after``.

    Names compare byte-wise (PostgreSQL ``COLLATE "C"``, SQLite's default), in the ``ORDER BY`` and in the
    ``>`` of the keyset alike, so the database agrees with Python's ``str`` order, which merges the pages read
    at an older revision.
    """
    fields = []
    for name in selection.resource.order:
        if name == "name" and connection.vendor == "postgresql":
            queryset = queryset.annotate(_key_name=Collate(F("name"), "C"))
            fields.append("_key_name")
        else:
            fields.append(name)
    if after is not None:
        condition = Q()
        for i, name in enumerate(fields):
            term = Q(**{n: after[j] for j, n in enumerate(fields[:i])}) & Q(**{f"{name}__gt": after[i]})
            condition |= term
        queryset = queryset.filter(condition)
    return queryset.order_by(*fields)


def _key(selection: Selection, obj: Any) -> tuple[Any, ...]:
    return tuple(obj.pk if name == "pk" else getattr(obj, name) for name in selection.resource.order)


def _encode_key(key: tuple[Any, ...]) -> list[Any]:
    return [v.isoformat() if isinstance(v, datetime) else v for v in key]


def _decode_key(selection: Selection, raw: list[Any]) -> tuple[Any, ...]:
    names = selection.resource.order
    if len(raw) != len(names):
        raise ValueError("key length")
    model = selection.resource.model
    out: list[Any] = []
    for name, value in zip(names, raw, strict=True):
        field = model._meta.pk if name == "pk" else model._meta.get_field(name)
        parsed = field.to_python(value)
        if parsed is None:
            raise ValueError("key value")
        out.append(parsed)
    return tuple(out)


def encode_continue(revision: int, key: tuple[Any, ...]) -> str:
    """The ``continue`` token: the list's revision and the last key of the page."""
    raw = json.dumps({"rv": revision, "k": _encode_key(key)}, separators=(",", ":"), default=str)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _bad_token(why: str) -> BadRequest:
    return BadRequest("invalid continue token", causes=[Cause("continue", f"Invalid value: {why}")])


def decode_continue(selection: Selection, token: str) -> tuple[int, tuple[Any, ...]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        revision = int(data["rv"])
        key = _decode_key(selection, list(data["k"]))
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeError, ValidationError):
        raise _bad_token("the token is malformed") from None
    if revision < 0:
        raise _bad_token("negative revision")
    return revision, key


def limit_of(params: Any) -> int | None:
    """``?limit=`` (None: everything, as kube-apiserver; at most :data:`MAX_LIMIT` per page when given)."""
    raw = params.get("limit")
    if raw in (None, "", "0"):
        return None
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        raise BadRequest("limit must be an integer", causes=[Cause("limit", f"Invalid value: {raw!r}")]) from None
    if limit < 0:
        raise BadRequest("limit must not be negative", causes=[Cause("limit", f"Invalid value: {limit}")])
    return min(limit, MAX_LIMIT)


def _at_revision(
    selection: Selection, revision: int, after: tuple[Any, ...] | None, limit: int
) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Up to ``limit`` objects after the key as they were at ``revision`` (the current rows, corrected by the log)."""
    before: dict[int, dict[str, Any] | None] = {}
    for change in log.iter_changes(revision, 1 << 62, [selection.kind]):
        if change.obj_id not in before:
            before[change.obj_id] = change.before
    queryset = _keyed(selection, base_query(selection), after)
    if before:
        queryset = queryset.exclude(pk__in=list(before))
    current = [(_key(selection, obj), selection.resource.render(obj)) for obj in queryset[: limit + 1]]
    then = []
    for row in before.values():
        if row is None:
            continue
        obj = log.instance(selection.kind, row)
        manifest = selection.resource.render(obj)
        key = _key(selection, obj)
        if (after is None or key > after) and selection.accepts(row, manifest):
            then.append((key, manifest))
    merged = sorted(current + then, key=lambda item: item[0])
    return merged[: limit + 1]


def snapshot(selection: Selection) -> tuple[int, list[dict[str, Any]]]:
    """The selected objects at one revision and that revision (a watch's initial state)."""

    def read(revision: int, compacted: int) -> tuple[int, list[dict[str, Any]]]:
        items = _at_revision(selection, revision, None, MAX_OBJECTS - 1)
        return revision, [m for _, m in items if query.matches(selection.resource, m, selection.terms)]

    return consistent(read)


def page(selection: Selection, params: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One page of a list and its ``metadata`` (``resourceVersion``, ``continue``, ``remainingItemCount``)."""
    limit = limit_of(params)
    token = clean_text(params.get("continue"), "continue", 1000)
    version = clean_text(params.get("resourceVersion"), "resourceVersion", 40)
    match = clean_text(params.get("resourceVersionMatch"), "resourceVersionMatch", 40)
    exact = _exact(version, match, token)
    after: tuple[Any, ...] | None = None
    revision: int | None = exact
    if token:
        revision, after = decode_continue(selection, token)
    chunk = limit if limit is not None else 1 << 40

    def read(current: int, compacted: int) -> tuple[int, list[tuple[tuple[Any, ...], dict[str, Any]]], int]:
        if revision is None or revision == current:
            return current, _at_revision(selection, current, after, chunk), compacted
        if revision > current:
            raise TooLarge(
                f"Too large resource version: {revision}, current: {current}",
                causes=[Cause("resourceVersion", "Too large resource version", "ResourceVersionTooLarge")],
            )
        try:
            log.check(revision, compacted)
        except Expired:
            raise _expired(token) from None
        return revision, _at_revision(selection, revision, after, chunk), compacted

    at, items, _ = consistent(read)
    meta: dict[str, Any] = {"resourceVersion": str(at)}
    if limit is not None and len(items) > limit:
        items = items[:limit]
        meta["continue"] = encode_continue(at, items[-1][0])
        if not selection.labels and not selection.terms:
            rest = _keyed(selection, base_query(selection), items[-1][0]).count()
            meta["remainingItemCount"] = rest
    objects = [m for _, m in items if query.matches(selection.resource, m, selection.terms)]
    return objects, meta


def _exact(version: str | None, match: str | None, token: str | None) -> int | None:
    """The revision ``resourceVersionMatch=Exact`` asks for (None: the latest; ``NotOlderThan`` is the latest)."""
    if match in (None, ""):
        return None
    if match not in MATCHES:
        raise BadRequest(
            f"invalid resourceVersionMatch {match!r}: supported values: Exact, NotOlderThan",
            causes=[Cause("resourceVersionMatch", f"Unsupported value: {match!r}", "FieldValueNotSupported")],
        )
    if not version:
        raise BadRequest(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
            causes=[Cause("resourceVersionMatch", "Forbidden: resourceVersionMatch needs resourceVersion")],
        )
    if token:
        raise BadRequest(
            "resourceVersionMatch is forbidden when continue is provided",
            causes=[Cause("resourceVersionMatch", "Forbidden: resourceVersionMatch with continue")],
        )
    if match == "NotOlderThan":
        return None
    if version == "0":
        raise BadRequest(
            "resourceVersionMatch Exact is forbidden for resourceVersion 0",
            causes=[Cause("resourceVersionMatch", "Forbidden: Exact with resourceVersion 0")],
        )
    try:
        return int(version)
    except ValueError:
        raise BadRequest(
            f"invalid resourceVersion {version!r}: must be a number",
            causes=[Cause("resourceVersion", f"Invalid value: {version!r}")],
        ) from None


def _expired(token: str | None) -> Expired:
    if not token:
        return Expired("The resourceVersion for the provided list is too old.")
    return Expired(
        "The provided continue parameter is too old to display a consistent list result. You can start a new "
        "list without the continue parameter, or use the continue token in this response to retrieve the "
        "remainder of the results. Continuing with the provided token results in an inconsistent list - "
        "objects that were created, modified, or deleted between the time the first chunk was returned and "
        "now may show up in the list."
    )
