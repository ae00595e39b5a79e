"""The tenant the user is looking at (stored in the session) and how it narrows every query."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest

from volcanoweb.tenancy.access import Access, access_for
from volcanoweb.tenancy.models import Role, Tenant

SESSION_KEY = "dashboard_tenant"
ALL = "all"
M = TypeVar("M", bound=Model)


@dataclass
class Scope:
    """The caller's rights plus the tenant selected in the switcher (``None``: all of the caller's tenants)."""

    access: Access
    tenants: list[tuple[int, str]] = field(default_factory=list)
    selected: int | None = None

    @property
    def tenant_ids(self) -> list[int] | None:
        """Return the tenant ids shown, or None for "everything" (platform admin with no selection)."""
        if self.selected is not None:
            return [self.selected]
        if self.access.platform_admin:
            return None
        return self.access.readable_tenant_ids()

    @property
    def selected_name(self) -> str:
        """Return the selected tenant's name, or "All tenants"."""
        return dict(self.tenants).get(self.selected, "All tenants") if self.selected else "All tenants"

    @property
    def role(self) -> str:
        """Return a label for the caller's role in the selected tenant."""
        if self.access.platform_admin:
            return "platform admin"
        if self.selected is not None:
            return Role(self.access.roles.get(self.selected, Role.VIEWER)).label.lower()
        return "member"

    def filter(self, queryset: QuerySet[M], field_name: str = "tenant_id") -> QuerySet[M]:
        """Narrow a queryset of tenant-owned rows to what is shown."""
        ids = self.tenant_ids
        if ids is None:
            return queryset
        return queryset.filter(**{f"{field_name}__in": ids})

    def queue_q(self) -> Q:
        """Return the Q for the queues shown: owned by, allowed to, or public for a shown tenant."""
        ids = self.tenant_ids
        if ids is None:
            return Q()
        public = Q(tenant__isnull=True, allowed_tenants__isnull=True)
        return Q(tenant_id__in=ids) | Q(allowed_tenants__in=ids) | public

    def can_write(self, tenant_id: int | None) -> bool:
        """Return True if the caller may change objects of that tenant."""
        return self.access.can_write(tenant_id)

    def can_manage_queue(self, queue: Any) -> bool:
        """Return True for platform admins and admins of the queue's owning tenant."""
        return self.access.platform_admin or bool(queue.tenant_id and self.access.is_tenant_admin(queue.tenant_id))


def get_scope(request: HttpRequest) -> Scope:
    """Return (and cache on the request) the caller's Scope."""
    cached: Scope | None = getattr(request, "_dashboard_scope", None)
    if cached is not None:
        return cached
    access = access_for(request.user)
    if access.platform_admin:
        tenants = list(Tenant.objects.order_by("name").values_list("id", "name"))
    else:
        tenants = sorted(access.tenant_names.items(), key=lambda item: item[1])
    valid = {tenant_id for tenant_id, _ in tenants}
    raw = request.session.get(SESSION_KEY)
    selected: int | None = raw if isinstance(raw, int) and raw in valid else None
    if raw is None and len(tenants) == 1 and not access.platform_admin:
        selected = tenants[0][0]
    scope = Scope(access=access, tenants=tenants, selected=selected)
    request._dashboard_scope = scope  # type: ignore[attr-defined]  # a per-request cache on the request
    return scope


def select_tenant(request: HttpRequest, value: str) -> None:
    """Store the switcher's choice; unknown values fall back to all tenants."""
    scope = get_scope(request)
    valid = {str(tenant_id): tenant_id for tenant_id, _ in scope.tenants}
    request.session[SESSION_KEY] = valid.get(value, ALL)
    request._dashboard_scope = None  # type: ignore[attr-defined]
