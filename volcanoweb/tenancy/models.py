"""Tenants, their namespaces and members, per-user API tokens, and the shape shared by Kubernetes-style objects."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    """A member's role inside one tenant (platform admins are Django superusers)."""

    TENANT_ADMIN = "tenant-admin", "Tenant admin"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


class Tenant(models.Model):
    """A team: owns namespaces (and through them jobs, pods...) and may own or use queues."""

    name = models.SlugField(max_length=63, unique=True, help_text="DNS-1123 label, e.g. team-a")
    display_name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Namespace(models.Model):
    """A Kubernetes namespace; namespaced objects belong to the namespace's tenant.

    A namespace without a tenant (such as ``default``) is reachable by platform admins only.
    Its annotations may carry ``scheduling.volcano.sh/queue-name`` (default queue for PodGroups).
    """

    name = models.SlugField(max_length=63, unique=True)
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="namespaces")
    labels = models.JSONField(default=dict, blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    resource_version = models.BigIntegerField(
        default=0, help_text="the last revision of the change log that changed this row (stamped by the database)"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in a tenant; one row per (user, tenant)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tenant__name", "user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="tenancy_membership_user_tenant")]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


def hash_token(raw: str) -> str:
    """Return the SHA-256 hex digest stored for a raw token (tokens are random, so no salt is needed)."""
    return hashlib.sha256(raw.encode()).hexdigest()


class TokenScope(models.TextChoices):
    """What a token may do, at most (and never more than its user's roles allow)."""

    READ = "read", "Read only"
    SUBMIT = "submit", "Submit (write as a member)"
    ADMIN = "admin", "Admin (all the user's rights)"


#: The scopes in increasing order of rights.
SCOPE_ORDER = (TokenScope.READ, TokenScope.SUBMIT, TokenScope.ADMIN)


class ApiToken(models.Model):
    """A per-user API token; only its hash is stored, the raw value is shown once at creation.

    Every token expires (``expires_at``, from ``API_TOKEN_TTL_DAYS`` by default), has a ``scope`` and, when
    an admin-scoped token minted it, a ``parent``: revoking a token revokes its children (docs/adr/0025).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, default="default")
    prefix = models.CharField(max_length=16, db_index=True, help_text="first characters, to recognise a token")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    scope = models.CharField(max_length=10, choices=TokenScope.choices, default=TokenScope.ADMIN)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children", help_text="minted by"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user} {self.name} ({self.prefix}…)"

    def is_usable(self, now: datetime | None = None) -> bool:
        """Return True unless the token, or a token that minted it, is revoked or expired."""
        now = now or timezone.now()
        token: ApiToken | None = self
        seen: set[int] = set()
        while token is not None and token.pk not in seen:
            if token.revoked_at is not None or (token.expires_at is not None and token.expires_at <= now):
                return False
            seen.add(token.pk)
            token = token.parent if token.parent_id else None
        return True


class KubeObject(models.Model):
    """Abstract: the metadata every Kubernetes-style object carries (name, uid, labels, versions, times)."""

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=253)
    labels = models.JSONField(default=dict, blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    resource_version = models.PositiveBigIntegerField(default=1, help_text="bumped on every write")
    generation = models.PositiveBigIntegerField(default=1, help_text="bumped on every spec change")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.name


class NamespacedObject(KubeObject):
    """Abstract: a namespaced object; ``tenant`` is denormalised from the namespace for scoping."""

    namespace = models.CharField(max_length=63, db_index=True)
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def key(self) -> str:
        """Return ``namespace/name``."""
        return f"{self.namespace}/{self.name}"
