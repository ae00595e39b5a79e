"""List queries: label selectors, filters, ordering and limit/continue pagination, Kubernetes style.

Pagination: ``?limit=N`` (default 100, at most 500) returns ``metadata.continue`` when more items
remain; pass it back as ``?continue=<token>`` with the same filters and ordering. The token is an
opaque offset (not a snapshot: items created meanwhile may shift pages).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

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


def _offset(token: str | None) -> int:
    if not token:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        offset = int(data["o"])
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeError):
        raise BadRequest(
            "invalid continue token", causes=[Cause("continue", "Invalid value: the token is malformed")]
        ) from None
    if offset < 0:
        raise BadRequest("invalid continue token", causes=[Cause("continue", "Invalid value: negative offset")])
    return offset


def paginate(queryset: QuerySet[Any], params: Any) -> tuple[list[Any], dict[str, Any]]:
    """Return one page of objects and the list ``metadata`` (``continue``, ``remainingItemCount``)."""
    limit, offset = _limit(params), _offset(clean_text(params.get("continue"), "continue", 200))
    items = list(queryset[offset : offset + limit + 1])
    meta: dict[str, Any] = {"resourceVersion": str(log.head()[0])}
    if len(items) > limit:
        items = items[:limit]
        token = base64.urlsafe_b64encode(json.dumps({"o": offset + limit}).encode()).decode().rstrip("=")
        meta["continue"] = token
        meta["remainingItemCount"] = max(queryset.count() - offset - limit, 0)
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
