"""Writes for namespace ResourceQuotas (tenant admins of the namespace's tenant only)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from volcanoweb.audit import services as audit
from volcanoweb.core.errors import Errors, not_found
from volcanoweb.jobs.models import ResourceQuota
from volcanoweb.jobs.services.common import update_plain_fields
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.fields import check_resource_list, expect
from volcanoweb.manifests.objects import Outcome, check_existence, check_version, prepare, raise_if
from volcanoweb.tenancy.access import Access, forbidden, resolve_namespace


def check_resourcequota_spec(errors: Errors, spec: Any) -> dict[str, Any]:
    """Check a ResourceQuota ``spec``: ``hard`` is a ResourceList; quota scopes are not supported."""
    if spec is None:
        spec = {}
    if not expect(errors, "spec", spec, dict, "object"):
        return {}
    for key in ("scopes", "scopeSelector"):
        if spec.get(key):
            errors.add(f"spec.{key}", "Unsupported value: quota scopes are not supported (every pod counts)")
    hard = spec.get("hard") or {}
    check_resource_list(errors, "spec.hard", hard)
    return (
        {"hard": {str(k): v if isinstance(v, str) else str(v) for k, v in hard.items()}}
        if isinstance(hard, dict)
        else {}
    )


def _quota_writer(access: Access, info: parse.KindInfo, namespace: Any, verb: str, name: str) -> None:
    # Quotas bound what the whole tenant may run: only its admins (or platform admins) set them.
    if not access.is_tenant_admin(namespace.tenant_id):
        raise forbidden(access, verb, info, namespace.name, name)


@transaction.atomic
def apply_resourcequota(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a namespace ResourceQuota (tenant admins of the namespace's tenant only)."""
    info = parse.RESOURCEQUOTA
    meta, namespace = prepare(access, doc, info, default_namespace)
    assert namespace is not None
    _quota_writer(access, info, namespace, "create", meta.name)
    existing = (
        ResourceQuota.objects.select_for_update(no_key=True).filter(namespace=namespace.name, name=meta.name).first()
    )
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    spec = check_resourcequota_spec(errors, doc.get("spec"))
    raise_if(errors, info, meta.name)
    fields = {"hard": spec["hard"], "spec": spec, "labels": meta.labels, "annotations": meta.annotations}
    if existing is not None:
        return update_plain_fields(access, info, namespace, existing, fields, render.resourcequota)
    quota = ResourceQuota.objects.create(namespace=namespace.name, name=meta.name, tenant=namespace.tenant, **fields)
    after = render.resourcequota(quota)
    audit.record(access.user, "create", info.kind, quota.key, tenant=namespace.tenant, after=after)
    notify.changed(info.kind, quota, "create")
    return Outcome("created", info.kind, meta.name, namespace.name, after)


@transaction.atomic
def delete_resourcequota(access: Access, namespace: str, name: str) -> Outcome:
    """Delete a ResourceQuota (tenant admins of the namespace's tenant only)."""
    info = parse.RESOURCEQUOTA
    ns = resolve_namespace(access, namespace, "delete", info, name)
    _quota_writer(access, info, ns, "delete", name)
    quota = ResourceQuota.objects.select_for_update(no_key=True).filter(namespace=namespace, name=name).first()
    if quota is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)
    before = render.resourcequota(quota)
    quota.delete()
    audit.record(access.user, "delete", info.kind, f"{namespace}/{name}", tenant=ns.tenant, before=before)
    notify.changed(info.kind, quota, "delete")
    return Outcome("deleted", info.kind, name, namespace, before)
