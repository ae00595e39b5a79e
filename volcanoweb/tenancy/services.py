"""Writes for tenancy: API tokens (memberships and tenants are edited in the admin through these too)."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from volcanoweb.audit import services as audit
from volcanoweb.core.errors import Forbidden, NotFound
from volcanoweb.tenancy.models import (
    SCOPE_ORDER,
    ApiToken,
    Membership,
    Namespace,
    Role,
    Tenant,
    TokenScope,
    hash_token,
)

TOKEN_PREFIX = "vw_"


def max_scope(user: Any) -> str:
    """Return the widest token scope the user's roles allow: admin for platform and tenant admins, submit for
    members, read for viewers (and users of no tenant)."""
    if getattr(user, "is_superuser", False):
        return TokenScope.ADMIN
    roles = set(Membership.objects.filter(user=user).values_list("role", flat=True))
    if Role.TENANT_ADMIN in roles:
        return TokenScope.ADMIN
    return TokenScope.SUBMIT if Role.MEMBER in roles else TokenScope.READ


def _forbid(user: Any, message: str) -> Forbidden:
    return Forbidden(f'User "{getattr(user, "username", "")}" cannot create this token: {message}', kind="ApiToken")


@transaction.atomic
def create_token(
    user: Any,
    name: str = "default",
    *,
    expires_at: datetime | None = None,
    scope: str | None = None,
    parent: ApiToken | None = None,
    actor: Any = None,
) -> tuple[ApiToken, str]:
    """Create an API token for ``user``; return the row and the raw token (shown once, only its hash is kept).

    ``scope`` defaults to the widest the user's roles allow (never wider; nor wider than ``parent``'s, the
    admin-scoped token that mints it); ``expires_at`` defaults to ``API_TOKEN_TTL_DAYS`` from now, at most
    ``API_TOKEN_MAX_TTL_DAYS`` and never after ``parent``'s expiry.
    """
    now = timezone.now()
    allowed = max_scope(user)
    scope = scope or (min(allowed, parent.scope, key=SCOPE_ORDER.index) if parent is not None else allowed)
    if scope not in SCOPE_ORDER:
        raise _forbid(user, f"unknown scope {scope!r} (read, submit or admin)")
    scope = str(TokenScope(scope).value)  # a plain string on the row (it is rendered as YAML and JSON)
    if SCOPE_ORDER.index(TokenScope(scope)) > SCOPE_ORDER.index(TokenScope(allowed)):
        raise _forbid(user, f"scope {scope} is more than the user's roles allow ({allowed})")
    if parent is not None:
        if parent.user_id != getattr(user, "pk", None) or parent.scope != TokenScope.ADMIN or not parent.is_usable(now):
            raise _forbid(user, "only a session or a usable admin-scoped token of the same user mints tokens")
        if SCOPE_ORDER.index(TokenScope(scope)) > SCOPE_ORDER.index(TokenScope(parent.scope)):
            raise _forbid(user, f"scope {scope} is more than the minting token's ({parent.scope})")
    latest = now + timedelta(days=settings.API_TOKEN_MAX_TTL_DAYS)
    expires_at = expires_at or now + timedelta(days=settings.API_TOKEN_TTL_DAYS)
    expires_at = min(expires_at, latest)
    if parent is not None and parent.expires_at is not None:
        expires_at = min(expires_at, parent.expires_at)
    if expires_at <= now:
        raise _forbid(user, "the expiry is in the past")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=(name or "default")[:100],
        prefix=raw[:10],
        token_hash=hash_token(raw),
        expires_at=expires_at,
        scope=scope,
        parent=parent,
    )
    audit.record(
        actor or user,
        "create",
        "ApiToken",
        f"{user.username}/{token.name}",
        after={
            "prefix": token.prefix,
            "name": token.name,
            "scope": token.scope,
            "expiresAt": expires_at.isoformat(),
            "parent": parent.prefix if parent is not None else None,
        },
    )
    return token, raw


@transaction.atomic
def revoke_token(user: Any, token_id: int, *, actor: Any = None) -> ApiToken:
    """Revoke one of ``user``'s tokens and every token it minted, down the line (idempotent). Each revoked
    token's open WebSockets close (``live.revocation``, on its save)."""
    token = ApiToken.objects.select_for_update(no_key=True).filter(user=user, pk=token_id).first()
    if token is None:
        raise NotFound(f'tokens "{token_id}" not found', kind="ApiToken", name=str(token_id))
    now = timezone.now()
    pending, seen = [token], set()
    while pending:
        item = pending.pop()
        if item.pk in seen:
            continue
        seen.add(item.pk)
        if item.revoked_at is None:
            item.revoked_at = now
            item.save(update_fields=["revoked_at"])
            audit.record(
                actor or user,
                "revoke",
                "ApiToken",
                f"{item.user.username}/{item.name}",
                before={"prefix": item.prefix},
                message="" if item.pk == token.pk else f"minted by a revoked token ({token.prefix})",
            )
        pending.extend(ApiToken.objects.select_for_update(no_key=True).filter(parent=item).select_related("user"))
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
