"""Shared steps of every apply: metadata and namespace checks, versions, outcomes (no writes here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from volcanoweb.core.errors import AlreadyExists, Conflict, Errors, invalid, not_found
from volcanoweb.manifests.fields import Metadata, check_metadata
from volcanoweb.manifests.parse import KindInfo
from volcanoweb.tenancy.access import Access, resolve_namespace
from volcanoweb.tenancy.models import Namespace

MODES = ("apply", "create", "update")


@dataclass
class Outcome:
    """What one apply did: ``created``, ``configured``, ``unchanged`` (or ``deleted``), with the object after."""

    action: str
    kind: str
    name: str
    namespace: str | None
    object: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        """Return the per-object line of an apply response."""
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "action": self.action}
        if self.namespace:
            out["namespace"] = self.namespace
        return out


def prepare(
    access: Access,
    doc: dict[str, Any],
    info: KindInfo,
    default_namespace: str | None,
    *,
    verb: str = "create",
    name_check: str = "subdomain",
) -> tuple[Metadata, Namespace | None]:
    """Check ``metadata`` and the caller's right to write in the namespace; return both."""
    errors = Errors()
    meta = check_metadata(errors, doc, namespaced=info.namespaced, name_check=name_check)
    if errors:
        raise invalid(info.kind, info.group, meta.name, errors)
    namespace = None
    if info.namespaced:
        namespace = resolve_namespace(access, meta.namespace or default_namespace or "default", verb, info, meta.name)
    return meta, namespace


def check_existence(info: KindInfo, name: str, existing: Any, mode: str) -> None:
    """Raise AlreadyExists for a create of an existing object and NotFound for an update of a missing one."""
    if mode == "create" and existing is not None:
        raise AlreadyExists(
            f'{info.qualified_resource} "{name}" already exists', kind=info.kind, name=name, group=info.group
        )
    if mode == "update" and existing is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)


def check_version(info: KindInfo, meta: Metadata, existing: Any) -> None:
    """Raise Conflict when the manifest carries a resourceVersion that is not the stored one."""
    if existing is None or not meta.resource_version:
        return
    if meta.resource_version != str(existing.resource_version):
        raise Conflict(
            f'Operation cannot be fulfilled on {info.qualified_resource} "{meta.name}": the object has been '
            "modified; please apply your changes to the latest version and try again",
            kind=info.kind,
            name=meta.name,
            group=info.group,
        )


def bump(obj: Any, *, spec_changed: bool) -> list[str]:
    """Advance resourceVersion (and generation when the spec changed); return the fields touched."""
    obj.resource_version += 1
    obj.updated_at = timezone.now()
    fields = ["resource_version", "updated_at"]
    if spec_changed:
        obj.generation += 1
        fields.append("generation")
    return fields


def raise_if(errors: Errors, info: KindInfo, name: str) -> None:
    """Raise the Invalid error for the collected causes, if any."""
    if errors:
        raise invalid(info.kind, info.group, name, errors)
