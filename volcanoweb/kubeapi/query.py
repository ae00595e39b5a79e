"""Read helpers of the Kubernetes-shaped API: field selectors, list resourceVersions, Table output."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q, QuerySet

from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.kubeapi.registry import KubeResource

#: Field selectors every kind supports, and the extra ones per kind (dotted path -> ORM field, "" = in Python).
COMMON_FIELDS = {"metadata.name": "name", "metadata.namespace": "namespace"}
EXTRA_FIELDS: dict[str, dict[str, str]] = {
    "events": {
        "metadata.name": "",
        "involvedObject.kind": "involved_kind",
        "involvedObject.name": "involved_name",
        "involvedObject.namespace": "involved_namespace",
        "involvedObject.uid": "involved_uid",
        "involvedObject.apiVersion": "",  # what kubectl events --for sends; matched on the rendered event
        "involvedObject.resourceVersion": "",
        "involvedObject.fieldPath": "",
        "reportingComponent": "",
        "type": "type",
        "reason": "reason",
        "source": "source",
    },
    "pods": {"spec.nodeName": "node_name", "status.phase": "phase"},
    "commands": {"metadata.name": "", "metadata.namespace": "target_namespace"},
}
TABLE_MEDIA = "as=table"


@dataclass(frozen=True)
class FieldRequirement:
    """One ``path=value`` or ``path!=value`` term of a field selector."""

    path: str
    value: str
    negate: bool


def parse_field_selector(resource: KubeResource, selector: str | None) -> list[FieldRequirement]:
    """Return the terms of a field selector, refusing fields the kind does not support (400)."""
    if not selector:
        return []
    allowed = {**COMMON_FIELDS, **EXTRA_FIELDS.get(resource.plural, {})}
    terms: list[FieldRequirement] = []
    for raw in selector.split(","):
        part = raw.strip()
        if not part:
            continue
        if "!=" in part:
            path, value, negate = *part.split("!=", 1), True
        elif "==" in part:
            path, value, negate = *part.split("==", 1), False
        elif "=" in part:
            path, value, negate = *part.split("=", 1), False
        else:
            raise BadRequest(
                f"invalid field selector: {part!r}: expected field=value, field==value or field!=value",
                causes=[Cause("fieldSelector", f"Invalid value: {part!r}")],
            )
        path = path.strip()
        if path not in allowed:
            raise BadRequest(
                f"field label not supported: {path} (supported: {', '.join(sorted(allowed))})",
                causes=[Cause("fieldSelector", f"Unsupported value: {path!r}", "FieldValueNotSupported")],
            )
        terms.append(FieldRequirement(path, value.strip(), negate))
    return terms


def _orm_field(resource: KubeResource, path: str) -> str:
    extra = EXTRA_FIELDS.get(resource.plural, {})
    if path in extra:
        return extra[path]
    if path == "metadata.namespace":
        return resource.namespace_field if resource.info.namespaced else ""
    return COMMON_FIELDS[path]


def filter_fields(resource: KubeResource, queryset: QuerySet[Any], terms: list[FieldRequirement]) -> QuerySet[Any]:
    """Push the field selector terms that map to columns into the query."""
    for term in terms:
        column = _orm_field(resource, term.path)
        if not column:
            continue
        if column == "involved_uid":
            # Events the runtime records without the object's uid match any uid (kubectl describe asks by uid).
            try:
                uid = uuid.UUID(term.value)
            except ValueError:
                queryset = queryset if term.negate else queryset.none()
                continue
            condition = Q(involved_uid=uid) | Q(involved_uid__isnull=True)
            queryset = queryset.exclude(condition) if term.negate else queryset.filter(condition)
            continue
        queryset = queryset.exclude(**{column: term.value}) if term.negate else queryset.filter(**{column: term.value})
    return queryset


def lookup(obj: dict[str, Any], path: str) -> Any:
    """Return the value at a dotted path (``.status.state.phase``), or None."""
    node: Any = obj
    for key in path.strip(".").split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def matches(resource: KubeResource, obj: dict[str, Any], terms: list[FieldRequirement]) -> bool:
    """Return True when a rendered object satisfies the terms (those not pushed into the query too)."""
    for term in terms:
        value = lookup(obj, term.path)
        if term.path == "involvedObject.uid" and not value:
            continue
        text = "" if value is None else str(value)
        if (text == term.value) == term.negate:
            return False
    return True


def check_watch_version(value: str | None) -> int | None:
    """Return the revision a watch starts after (None: ``resourceVersion`` omitted or ``0``: the current state)."""
    if not value or value == "0":
        return None
    try:
        number = int(value)
    except ValueError:
        raise BadRequest(
            f"invalid resourceVersion {value!r}: must be a number",
            causes=[Cause("resourceVersion", f"Invalid value: {value!r}")],
        ) from None
    if number < 0:
        raise BadRequest(
            f"invalid resourceVersion {value!r}: must not be negative",
            causes=[Cause("resourceVersion", f"Invalid value: {value!r}")],
        )
    return number


def wants_table(accept: str) -> bool:
    """Return True when the Accept header asks for ``meta.k8s.io/v1`` Table output first."""
    for media in accept.split(","):
        params = {p.strip().lower() for p in media.split(";")[1:]}
        if "as=table" in {p.replace(" ", "") for p in params}:
            return "g=meta.k8s.io" in params and ("v=v1" in params or "v=v1beta1" in params)
        if media.strip().split(";")[0].strip() in ("application/json", "*/*", "application/yaml"):
            return False
    return False


def _age(value: Any, now: datetime) -> str:
    if not isinstance(value, str) or not value:
        return "<unknown>"
    try:
        then = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return value
    seconds = max(int((now - then).total_seconds()), 0)
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def _cell(column_type: str, value: Any, now: datetime) -> Any:
    if column_type == "date":
        return _age(value, now)
    if value is None:
        return None if column_type in ("integer", "number", "boolean") else ""
    return value


def table(resource: KubeResource, objects: list[dict[str, Any]], meta: dict[str, Any], *, headers: bool = True) -> Any:
    """Return a ``meta.k8s.io/v1`` Table of the objects with the kind's printer columns (as kubectl prints)."""
    now = datetime.now(tz=UTC)
    columns = [
        {"name": "Name", "type": "string", "format": "name", "description": "Name of the object", "priority": 0},
        *(
            {
                "name": c.name,
                "type": c.type,
                "format": "",
                "description": c.description or c.path,
                "priority": c.priority,
            }
            for c in resource.columns
        ),
    ]
    rows = [
        {
            "cells": [
                obj["metadata"]["name"],
                *(_cell(c.type, c.value(obj) if c.value else lookup(obj, c.path), now) for c in resource.columns),
            ],
            "object": obj,
        }
        for obj in objects
    ]
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "rows": rows}
    out["columnDefinitions"] = columns if headers else []
    return out
