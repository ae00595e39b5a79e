"""Writes for PriorityClasses (cluster-scoped, platform admins only)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from volcanoweb.core.errors import Errors
from volcanoweb.jobs.models import PriorityClass
from volcanoweb.jobs.services.common import delete_cluster_scoped, store_cluster_scoped
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.objects import Outcome, check_existence, check_version, prepare, raise_if
from volcanoweb.manifests.workflows import check_priorityclass
from volcanoweb.tenancy.access import Access, forbidden


@transaction.atomic
def apply_priorityclass(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a PriorityClass (platform admins only; value is immutable, one global default)."""
    info = parse.PRIORITYCLASS
    meta, _ = prepare(access, doc, info, None)
    if not access.platform_admin:
        raise forbidden(access, "create", info, None, meta.name)
    existing = PriorityClass.objects.select_for_update(no_key=True).filter(name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    fields = check_priorityclass(errors, meta.name, doc)
    raise_if(errors, info, meta.name)
    assert fields is not None
    if existing is not None and existing.value != fields["value"]:
        errors.add("value", "Forbidden: may not be changed in an update.", "FieldValueForbidden")
    if fields["globalDefault"]:
        other = PriorityClass.objects.filter(global_default=True).exclude(name=meta.name).first()
        if other is not None:
            errors.add(
                "globalDefault",
                f"PriorityClass {other.name} is already marked as default. Only one default can exist",
                "FieldValueForbidden",
            )
    raise_if(errors, info, meta.name)
    values = {
        "value": fields["value"],
        "global_default": fields["globalDefault"],
        "description": fields["description"],
        "preemption_policy": fields["preemptionPolicy"],
        "labels": meta.labels,
        "annotations": meta.annotations,
    }
    return store_cluster_scoped(access, info, PriorityClass, render.priorityclass, meta.name, existing, values)


@transaction.atomic
def delete_priorityclass(access: Access, name: str) -> Outcome:
    """Delete a PriorityClass (platform admins only)."""
    return delete_cluster_scoped(access, parse.PRIORITYCLASS, PriorityClass, render.priorityclass, name)
