"""What the kinds' writes share: the locked read of a namespaced object, the update half of an apply for
kinds stored as plain fields, and the create, update and delete of a platform admin's cluster-scoped object."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from volcanoweb.audit import services as audit
from volcanoweb.core.errors import not_found
from volcanoweb.live import notify
from volcanoweb.manifests import parse
from volcanoweb.manifests.objects import Outcome, bump
from volcanoweb.tenancy.access import Access, forbidden, resolve_namespace


def get_for_write(
    access: Access,
    model: type[Any],
    info: parse.KindInfo,
    namespace: str,
    name: str,
    verb: str,
) -> Any:
    """Return the namespaced object ``name``, locked, once the caller may ``verb`` objects of its namespace;
    raise NotFound when it does not exist.

    The row is locked ``FOR NO KEY UPDATE``, as every row lock of the product is (CONTRIBUTING, "Row locks").
    """
    resolve_namespace(access, namespace, verb, info, name)
    obj = model.objects.select_for_update(no_key=True).filter(namespace=namespace, name=name).first()
    if obj is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)
    return obj


def store_cluster_scoped(
    access: Access,
    info: parse.KindInfo,
    model: Any,
    show: Callable[[Any], dict[str, Any]],
    name: str,
    existing: Any,
    values: dict[str, Any],
) -> Outcome:
    """Create or update a platform admin's cluster-scoped object (PriorityClass, HyperNode) with ``values``."""
    if existing is not None:
        if all(getattr(existing, k) == v for k, v in values.items()):
            return Outcome("unchanged", info.kind, name, None, show(existing))
        before = show(existing)
        for key, value in values.items():
            setattr(existing, key, value)
        existing.save(update_fields=[*values, *bump(existing, spec_changed=True)])
        after = show(existing)
        audit.record(access.user, "update", info.kind, name, before=before, after=after)
        notify.changed(info.kind, existing, "update")
        return Outcome("configured", info.kind, name, None, after)
    created = model.objects.create(name=name, **values)
    after = show(created)
    audit.record(access.user, "create", info.kind, name, after=after)
    notify.changed(info.kind, created, "create")
    return Outcome("created", info.kind, name, None, after)


def delete_cluster_scoped(
    access: Access, info: parse.KindInfo, model: Any, show: Callable[[Any], dict[str, Any]], name: str
) -> Outcome:
    """Delete a platform admin's cluster-scoped object (PriorityClass, HyperNode)."""
    if not access.platform_admin:
        raise forbidden(access, "delete", info, None, name)
    existing = model.objects.select_for_update(no_key=True).filter(name=name).first()
    if existing is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)
    before = show(existing)
    existing.delete()
    audit.record(access.user, "delete", info.kind, name, before=before)
    notify.changed(info.kind, existing, "delete")
    return Outcome("deleted", info.kind, name, None, before)


def update_plain_fields(
    access: Access,
    info: parse.KindInfo,
    namespace: Any,
    existing: Any,
    fields: dict[str, Any],
    rendered: Callable[[Any], dict[str, Any]],
) -> Outcome:
    """The update half of an apply for a kind stored as plain fields (PodGroup, ResourceQuota): unchanged
    when every field is equal, else save those fields (and the version bump), audit, notify."""
    if all(getattr(existing, k) == v for k, v in fields.items()):
        return Outcome("unchanged", info.kind, existing.name, namespace.name, rendered(existing))
    before = rendered(existing)
    spec_changed = existing.spec != fields["spec"]
    for key, value in fields.items():
        setattr(existing, key, value)
    existing.save(update_fields=[*fields, *bump(existing, spec_changed=spec_changed)])
    after = rendered(existing)
    audit.record(access.user, "update", info.kind, existing.key, tenant=namespace.tenant, before=before, after=after)
    notify.changed(info.kind, existing, "update")
    return Outcome("configured", info.kind, existing.name, namespace.name, after)
