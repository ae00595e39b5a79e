"""Writes for tenancy: API tokens (memberships and tenants are edited in the admin through these too)."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from volcanoweb.audit import services as audit
from volcanoweb.core.errors import NotFound
from volcanoweb.tenancy.models import ApiToken, Membership, Namespace, Tenant, hash_token

TOKEN_PREFIX = "vw_"


@transaction.atomic
def create_token(
    user: Any, name: str = "default", *, expires_at: datetime | None = None, actor: Any = None
) -> tuple[ApiToken, str]:
    """Create an API token for ``user``; return the row and the raw token (shown once, only its hash is kept)."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=(name or "default")[:100], prefix=raw[:10], token_hash=hash_token(raw), expires_at=expires_at
    )
    audit.record(
        actor or user,
        "create",
        "ApiToken",
        f"{user.username}/{token.name}",
        after={"prefix": token.prefix, "name": token.name},
    )
    return token, raw


@transaction.atomic
def revoke_token(user: Any, token_id: int, *, actor: Any = None) -> ApiToken:
    """Revoke one of ``user``'s tokens (idempotent)."""
    token = ApiToken.objects.select_for_update().filter(user=user, pk=token_id).first()
    if token is None:
        raise NotFound(f'tokens "{token_id}" not found', kind="ApiToken", name=str(token_id))
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit.record(
            actor or user, "revoke", "ApiToken", f"{user.username}/{token.name}", before={"prefix": token.prefix}
        )
    return token


@transaction.atomic
def set_membership(tenant: Tenant, user: Any, role: str, *, actor: Any = None, source: str = "admin") -> Membership:
    """Add a user to a tenant or change their role."""
    membership, created = Membership.objects.get_or_create(tenant=tenant, user=user, defaults={"role": role})
    before = None if created else {"role": membership.role}
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    audit.record(
        actor,
        "create" if created else "update",
        "Membership",
        f"{tenant.name}/{user.username}",
        tenant=tenant,
        before=before,
        after={"role": role},
        source=source,
    )
    return membership


@transaction.atomic
def save_tenant(actor: Any, tenant: Tenant, *, source: str = "admin") -> Tenant:
    """Create or update a tenant (admin form), with an audit entry."""
    created = tenant.pk is None
    tenant.save()
    audit.record(
        actor,
        "create" if created else "update",
        "Tenant",
        tenant.name,
        tenant=tenant,
        after={"name": tenant.name, "displayName": tenant.display_name},
        source=source,
    )
    return tenant


@transaction.atomic
def save_namespace(actor: Any, namespace: Namespace, *, source: str = "admin") -> Namespace:
    """Create or update a namespace; moving it to another tenant moves its objects' tenant too."""
    from volcanoweb.jobs.models import Command, Event, Job, Pod, PodGroup
    from volcanoweb.workflows.models import CronJob, JobFlow, JobTemplate

    created = namespace.pk is None
    namespace.save()
    if not created:
        for model in (Job, Pod, PodGroup, CronJob, JobFlow, JobTemplate):
            # Q: a None tenant is an ``IS NULL`` lookup here (the typed keyword form does not take None)
            model.objects.filter(namespace=namespace.name).exclude(Q(tenant_id=namespace.tenant_id)).update(
                tenant_id=namespace.tenant_id
            )
        for log_model in (Event, Command):
            field = "namespace" if log_model is Event else "target_namespace"
            log_model.objects.filter(**{field: namespace.name}).update(tenant_id=namespace.tenant_id)
    audit.record(
        actor,
        "create" if created else "update",
        "Namespace",
        namespace.name,
        tenant=namespace.tenant,
        after={"name": namespace.name, "tenant": namespace.tenant.name if namespace.tenant else None},
        source=source,
    )
    return namespace


@transaction.atomic
def remove_membership(membership: Membership, *, actor: Any = None, source: str = "admin") -> None:
    """Remove a user from a tenant."""
    audit.record(
        actor,
        "delete",
        "Membership",
        f"{membership.tenant.name}/{membership.user.username}",
        tenant=membership.tenant,
        before={"role": membership.role},
        source=source,
    )
    membership.delete()


@transaction.atomic
def delete_namespace(actor: Any, namespace: Namespace, *, source: str = "admin") -> None:
    """Delete a namespace record (the admin's inline); audited."""
    audit.record(
        actor,
        "delete",
        "Namespace",
        namespace.name,
        tenant=namespace.tenant,
        before={"name": namespace.name, "tenant": namespace.tenant.name if namespace.tenant else None},
        source=source,
    )
    namespace.delete()


def touch_token(token: ApiToken, now: Any) -> None:
    """Record when a token was last used: a bookkeeping timestamp, not a domain change (no audit entry, no
    live message); one UPDATE of that column only."""
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
