"""``/api/v1/whoami``: who the caller is, and its tenants, roles and namespaces."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView
from volcanoweb.tenancy.models import ApiToken, Namespace


class WhoAmIView(ApiView):
    """``/api/v1/whoami``: the caller, platform-admin flag, tenants with roles and namespaces."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 401: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        access = self.access(request)
        namespaces: dict[int, list[str]] = {}
        for ns in Namespace.objects.filter(tenant_id__in=access.readable_tenant_ids()).order_by("name"):
            namespaces.setdefault(ns.tenant_id or 0, []).append(ns.name)
        tenants = [
            {"name": access.tenant_names[tid], "role": role, "namespaces": namespaces.get(tid, [])}
            for tid, role in sorted(access.roles.items(), key=lambda item: access.tenant_names[item[0]])
        ]
        return Response(
            {
                "kind": "WhoAmI",
                "username": access.username,
                "platformAdmin": access.platform_admin,
                "tenants": tenants,
                "defaultNamespace": access.default_namespace(),
                "authentication": "token" if isinstance(request.auth, ApiToken) else "session",
            }
        )
