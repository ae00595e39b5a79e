"""Who may see and change what: roles per tenant, namespace checks, scoping of querysets (read-only queries)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from django.db.models import Model, Q, QuerySet

from volcanoweb.core.errors import Forbidden, NotFound
from volcanoweb.tenancy.models import Membership, Namespace, Role, TokenScope

M = TypeVar("M", bound=Model)
WRITER_ROLES = (Role.TENANT_ADMIN, Role.MEMBER)


class KindInfo(Protocol):
    """What the denial messages need of a kind (``manifests.parse.KindInfo``, which sits above this module)."""

    @property
    def kind(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def qualified_resource(self) -> str: ...


@dataclass
class Access:
    """A caller's rights: platform admin flag and role per tenant id. Build with :func:`access_for`."""

    user: Any
    platform_admin: bool = False
    roles: dict[int, str] = field(default_factory=dict)
    tenant_names: dict[int, str] = field(default_factory=dict)

    @property
    def username(self) -> str:
        """Return the caller's username ("system" for internal callers)."""
        return getattr(self.user, "username", "") or "system"

    def can_read(self, tenant_id: int | None) -> bool:
        """Return True if the caller may read objects of that tenant (None: platform admins only)."""
        return self.platform_admin or (tenant_id is not None and tenant_id in self.roles)

    def can_write(self, tenant_id: int | None) -> bool:
        """Return True if the caller may create, change and delete objects of that tenant."""
        return self.platform_admin or (tenant_id is not None and self.roles.get(tenant_id) in WRITER_ROLES)

    def is_tenant_admin(self, tenant_id: int | None) -> bool:
        """Return True for a platform admin or an admin of that tenant."""
        return self.platform_admin or (tenant_id is not None and self.roles.get(tenant_id) == Role.TENANT_ADMIN)

    def readable_tenant_ids(self) -> list[int]:
        """Return the ids of tenants the caller belongs to."""
        return list(self.roles)

    def scope(self, queryset: QuerySet[M]) -> QuerySet[M]:
        """Return the queryset restricted to objects of the caller's tenants (everything for platform admins)."""
        if self.platform_admin:
            return queryset
        return queryset.filter(tenant_id__in=self.readable_tenant_ids())

    def default_namespace(self) -> str:
        """Return the namespace used when a manifest names none: the first of the caller's writable tenants."""
        writable = sorted((name, tid) for tid, name in self.tenant_names.items() if self.can_write(tid))
        for _, tenant_id in writable:
            namespace = Namespace.objects.filter(tenant_id=tenant_id).order_by("name").first()
            if namespace is not None:
                return namespace.name
        return "default"


SYSTEM = Access(user=None, platform_admin=True)


def within_scope(access: Access, scope: str) -> Access:
    """Return the rights of a request made with a token of ``scope``: ``admin`` keeps them all; ``submit``
    writes as a member at most (tenant-admin roles become member, a platform admin's power is dropped);
    ``read`` reads what the user may read (its writes are refused before any service runs)."""
    if scope == TokenScope.ADMIN:
        return access
    if scope == TokenScope.SUBMIT:
        roles = {tid: Role.MEMBER if role == Role.TENANT_ADMIN else role for tid, role in access.roles.items()}
        return Access(user=access.user, platform_admin=False, roles=roles, tenant_names=dict(access.tenant_names))
    roles = dict.fromkeys(access.roles, Role.VIEWER)
    return Access(
        user=access.user, platform_admin=access.platform_admin, roles=roles, tenant_names=dict(access.tenant_names)
    )


def is_platform_admin(user: Any) -> bool:
    """Return True for platform admins (Django superusers)."""
    return bool(user is not None and getattr(user, "is_authenticated", False) and user.is_superuser and user.is_active)


def access_for(user: Any) -> Access:
    """Return the caller's :class:`Access` (one query, cached on the user object)."""
    if user is None:
        return SYSTEM
    cached: Access | None = getattr(user, "_volcanoweb_access", None)
    if cached is not None:
        return cached
    access = Access(user=user, platform_admin=is_platform_admin(user))
    if getattr(user, "is_authenticated", False):
        for membership in Membership.objects.filter(user=user).select_related("tenant"):
            access.roles[membership.tenant_id] = membership.role
            access.tenant_names[membership.tenant_id] = membership.tenant.name
    user._volcanoweb_access = access
    return access


def forbidden(access: Access, verb: str, info: KindInfo, namespace: str | None, name: str = "") -> Forbidden:
    """Return Kubernetes' RBAC denial: ``<res> "<name>" is forbidden: User "u" cannot <verb> resource ...``."""
    subject = f'{info.qualified_resource} "{name}"' if name else info.qualified_resource
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    return Forbidden(
        f'{subject} is forbidden: User "{access.username}" cannot {verb} resource "{info.resource}" '
        f'in API group "{info.group}"{where}',
        kind=info.kind,
        name=name,
        group=info.group,
    )


def namespaces_by_name(names: Iterable[str]) -> dict[str, Namespace | None]:
    """Return the named namespaces with their tenants (None for a missing one) in one query."""
    wanted = sorted(set(names))
    found: dict[str, Namespace | None] = dict.fromkeys(wanted)
    if wanted:
        found.update((ns.name, ns) for ns in Namespace.objects.select_related("tenant").filter(name__in=wanted))
    return found


def resolve_namespace(
    access: Access,
    name: str,
    verb: str,
    info: KindInfo,
    object_name: str = "",
    *,
    namespaces: Mapping[str, Namespace | None] | None = None,
) -> Namespace:
    """Return the namespace if the caller may ``verb`` objects in it; raise Forbidden (or NotFound for admins).

    Non-admins get Forbidden whether or not the namespace exists, so existence does not leak.
    ``namespaces`` (from :func:`namespaces_by_name`) saves the query when it holds the name.
    """
    if namespaces is not None and name in namespaces:
        namespace = namespaces[name]
    else:
        namespace = Namespace.objects.select_related("tenant").filter(name=name).first()
    if namespace is None:
        if access.platform_admin:
            raise NotFound(f'namespaces "{name}" not found', kind="namespaces", name=name)
        raise forbidden(access, verb, info, name, object_name)
    read_only = verb in ("get", "list", "watch")
    allowed = access.can_read(namespace.tenant_id) if read_only else access.can_write(namespace.tenant_id)
    if not allowed:
        raise forbidden(access, verb, info, name, object_name)
    return namespace


def visible_queue_filter(access: Access) -> Q:
    """Return the Q selecting queues the caller sees: owned by, allowed to, or public for one of its tenants."""
    if access.platform_admin:
        return Q()
    tenant_ids = access.readable_tenant_ids()
    public = Q(tenant__isnull=True, allowed_tenants__isnull=True)
    return Q(tenant_id__in=tenant_ids) | Q(allowed_tenants__in=tenant_ids) | public


def queue_readers(queue: Any) -> frozenset[int] | None:
    """Return the ids of the tenants that may read ``queue`` (owner and allowed tenants); ``None``: every user.

    The same rule as :func:`visible_queue_filter`, for one queue (the live channel's audience of its changes).
    """
    allowed = {tenant.pk for tenant in queue.allowed_tenants.all()} if queue.pk else set()  # uses a prefetch
    if queue.tenant_id is None and not allowed:
        return None
    return frozenset(allowed | ({queue.tenant_id} if queue.tenant_id is not None else set()))
