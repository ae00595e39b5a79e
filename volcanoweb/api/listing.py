"""List queries: label selectors, filters, ordering and limit/continue pagination, Kubernetes style.

Pagination: ``?limit=N`` (default 100, at most 500) returns ``metadata.continue`` when more items
remain; pass it back as ``?continue=<token>`` with the same filters and ordering. The token holds the
ordering's values of the page's last item (a keyset, ties broken by id): the next page starts right after
that item, so objects deleted or created on earlier pages never make a later page skip or repeat one.
Nulls sort last ascending and first descending, on SQLite as on PostgreSQL.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import F, Q, QuerySet

from volcanoweb.core import jsonq
from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.feed import log

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SET_RE = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\(([^()]*)\)\s*$")


@dataclass(frozen=True)
class Requirement:
    """One label selector requirement."""

    key: str
    op: str  # exists, !exists, =, !=, in, notin
    values: tuple[str, ...] = ()


def _bad_selector(selector: str, why: str) -> BadRequest:
    return BadRequest(
        f"unable to parse requirement: {why}", causes=[Cause("labelSelector", f"Invalid value: {selector!r}: {why}")]
    )


def _split(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(selector: str) -> list[Requirement]:
    """Parse ``a=b,c!=d,e in (x,y),f notin (z),g,!h``; raise BadRequest naming the problem."""
    requirements: list[Requirement] = []
    for part in _split(selector):
        match = _SET_RE.match(part)
        if match:
            key, op, raw = match.groups()
            values = tuple(v.strip() for v in raw.split(",") if v.strip())
            if not values:  # as Kubernetes (issue 28)
                raise _bad_selector(selector, "for 'in', 'notin' operators, values set can't be empty")
        elif "!=" in part:
            key, value = (s.strip() for s in part.split("!=", 1))
            op, values = "!=", (value,)
        elif "=" in part:
            key, value = (s.strip() for s in part.replace("==", "=", 1).split("=", 1))
            op, values = "=", (value,)
        elif part.startswith("!"):
            key, op, values = part[1:].strip(), "!exists", ()
        else:
            key, op, values = part, "exists", ()
        if not _KEY_RE.match(key) or len(key) > 316:
            raise _bad_selector(selector, f"invalid label key {key!r}")
        for value in values:
            if len(value) > 63 or not _VALUE_RE.match(value):
                raise _bad_selector(selector, f"invalid label value {value!r}")
        requirements.append(Requirement(key, op, values))
    return requirements


def apply_label_selector(queryset: QuerySet[Any], selector: str, field: str = "labels") -> QuerySet[Any]:
    """Filter a queryset by a label selector over a JSON ``labels`` column (same result on SQLite and PostgreSQL)."""
    for req in parse_label_selector(selector):
        if req.op == "exists":
            queryset = queryset.filter(**{f"{field}__has_key": req.key})
        elif req.op == "!exists":
            queryset = queryset.exclude(**{f"{field}__has_key": req.key})
        elif req.op == "=":
            queryset = queryset.filter(jsonq.label_equals(req.key, req.values[0], field))
        elif req.op == "!=":  # as in Kubernetes, objects without the label match too
            missing = jsonq.label_missing(req.key, field)
            queryset = queryset.filter(missing | ~jsonq.label_equals(req.key, req.values[0], field))
        elif req.op == "in":
            queryset = queryset.filter(jsonq.label_in(req.key, req.values, field))
        else:
            missing = jsonq.label_missing(req.key, field)
            queryset = queryset.filter(missing | ~jsonq.label_in(req.key, req.values, field))
    return queryset


def clean_text(value: str | None, name: str, max_length: int = 253) -> str | None:
    """Return a query parameter, refusing NUL characters and overlong values (400)."""
    if value is None:
        return None
    if "\x00" in value or len(value) > max_length:
        raise BadRequest(
            f"invalid {name} parameter",
            causes=[Cause(name, f"Invalid value: must be at most {max_length} characters without NUL")],
        )
    return value


def apply_filters(
    queryset: QuerySet[Any], params: Any, filters: dict[str, str], text_fields: tuple[str, ...]
) -> QuerySet[Any]:
    """Apply exact-match filters (query parameter → ORM lookup), ``labelSelector`` and text search ``q``."""
    for param, lookup in filters.items():
        value = clean_text(params.get(param), param)
        if value:
            queryset = queryset.filter(**{lookup: value})
    selector = clean_text(params.get("labelSelector"), "labelSelector", 2000)
    if selector:
        queryset = apply_label_selector(queryset, selector)
    text = clean_text(params.get("q"), "q")
    if text:
        condition = Q()
        for field in text_fields:
            condition |= Q(**{f"{field}__icontains": text})
        queryset = queryset.filter(condition)
    return queryset


def apply_ordering(
    queryset: QuerySet[Any], value: str | None, allowed: dict[str, str], default: list[str]
) -> QuerySet[Any]:
    """Order by ``?ordering=a,-b`` using the allowed names (API name → ORM field); ties broken by id."""
    value = clean_text(value, "ordering")
    if not value:
        return queryset.order_by(*default, "pk")
    fields = []
    for item in value.split(","):
        name = item.strip()
        descending = name.startswith("-")
        key = name.lstrip("-")
        if key not in allowed:
            raise BadRequest(
                f"unsupported ordering {key!r}; use one of {', '.join(sorted(allowed))} (prefix - to reverse)",
                causes=[Cause("ordering", f"Unsupported value: {key!r}", "FieldValueNotSupported")],
            )
        fields.append(("-" if descending else "") + allowed[key])
    return queryset.order_by(*fields, "pk")


def _limit(params: Any) -> int:
    raw = params.get("limit")
    if raw in (None, ""):
        return DEFAULT_LIMIT
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        raise BadRequest("limit must be an integer", causes=[Cause("limit", f"Invalid value: {raw!r}")]) from None
    if limit < 1:
        raise BadRequest("limit must be at least 1", causes=[Cause("limit", f"Invalid value: {limit}")])
    return min(limit, MAX_LIMIT)


_BAD_TOKEN = "invalid continue token"


def _order_fields(queryset: QuerySet[Any]) -> list[str]:
    """The queryset's ordering as field names (``-`` for descending), ending with the primary key."""
    fields = [str(f) for f in queryset.query.order_by]
    if not any(f.lstrip("-") in ("pk", "id") for f in fields):
        fields.append("pk")
    return fields


def _nulls_placed(queryset: QuerySet[Any], fields: list[str]) -> QuerySet[Any]:
    """Order by ``fields`` with nulls last ascending and first descending (the databases differ otherwise)."""
    return queryset.order_by(
        *(F(f[1:]).desc(nulls_first=True) if f.startswith("-") else F(f).asc(nulls_last=True) for f in fields)
    )


def _after(fields: list[str], values: list[Any]) -> Q:
    """Rows that sort after the row whose ordering values are ``values``."""
    after, equal = Q(pk__in=[]), Q()
    for field, value in zip(fields, values, strict=True):
        name = field.lstrip("-")
        if field.startswith("-"):  # descending, nulls first: what follows is smaller (a null: every value)
            beyond = Q(**{f"{name}__isnull": False}) if value is None else Q(**{f"{name}__lt": value})
        else:  # ascending, nulls last: what follows is larger, then the nulls (after a null: nothing)
            beyond = Q(pk__in=[]) if value is None else Q(**{f"{name}__gt": value}) | Q(**{f"{name}__isnull": True})
        after |= equal & beyond
        equal &= Q(**{f"{name}__isnull": True}) if value is None else Q(**{name: value})
    return after


def _key(item: Any, fields: list[str]) -> list[Any]:
    values = []
    for field in fields:
        value = getattr(item, field.lstrip("-"))
        values.append(value.isoformat() if hasattr(value, "isoformat") else value)
    return values


def _token(fields: list[str], values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"f": fields, "k": values}).encode()).decode().rstrip("=")


def _cursor(token: str | None, fields: list[str]) -> list[Any] | None:
    if not token:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        stored, values = data["f"], data["k"]
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeError):
        raise BadRequest(_BAD_TOKEN, causes=[Cause("continue", "Invalid value: the token is malformed")]) from None
    if stored != fields or not isinstance(values, list) or len(values) != len(fields):
        raise BadRequest(
            _BAD_TOKEN,
            causes=[Cause("continue", "Invalid value: the token was given for another ordering; list again")],
        )
    if any(isinstance(v, (dict, list)) for v in values):
        raise BadRequest(_BAD_TOKEN, causes=[Cause("continue", "Invalid value: the token is malformed")])
    return values


def paginate(queryset: QuerySet[Any], params: Any) -> tuple[list[Any], dict[str, Any]]:
    """Return one page of objects and the list ``metadata`` (``continue``, ``remainingItemCount``)."""
    limit = _limit(params)
    fields = _order_fields(queryset)
    cursor = _cursor(clean_text(params.get("continue"), "continue", 2000), fields)
    queryset = _nulls_placed(queryset, fields)
    if cursor is not None:
        try:
            queryset = queryset.filter(_after(fields, cursor))
        except (ValueError, TypeError, ValidationError):
            raise BadRequest(_BAD_TOKEN, causes=[Cause("continue", "Invalid value: the token is malformed")]) from None
    items = list(queryset[: limit + 1])
    meta: dict[str, Any] = {"resourceVersion": str(log.head()[0])}
    if len(items) > limit:
        items = items[:limit]
        last = _key(items[-1], fields)
        meta["continue"] = _token(fields, last)
        meta["remainingItemCount"] = queryset.filter(_after(fields, last)).count()
    return items, meta


def label_matches(labels: dict[str, Any] | None, requirements: list[Requirement]) -> bool:
    """Return True when ``labels`` satisfy every requirement (the same rules as :func:`apply_label_selector`)."""
    labels = labels or {}
    for req in requirements:
        present = req.key in labels
        value = str(labels.get(req.key, ""))
        if req.op == "exists":
            ok = present
        elif req.op == "!exists":
            ok = not present
        elif req.op == "=":
            ok = present and value == req.values[0]
        elif req.op == "!=":
            ok = not present or value != req.values[0]
        elif req.op == "in":
            ok = present and value in req.values
        else:
            ok = not present or value not in req.values
        if not ok:
            return False
    return True
