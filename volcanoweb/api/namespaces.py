"""``/api/v1/namespaces``: the namespaces the caller may use (the REST API's answer; the Kubernetes API's
is :mod:`volcanoweb.kubeapi`, dispatched per request)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, list_body
from volcanoweb.api.schema import ERRORS
from volcanoweb.tenancy.models import Namespace


class NamespaceListView(ApiView):
    """``/api/v1/namespaces``: the namespaces the caller may use, with their tenant."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        access = self.access(request)
        queryset = Namespace.objects.select_related("tenant").order_by("name")
        if not access.platform_admin:
            queryset = queryset.filter(tenant_id__in=access.readable_tenant_ids())
        items = [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns.name, "labels": ns.labels, "annotations": ns.annotations},
                "tenant": ns.tenant.name if ns.tenant else None,
            }
            for ns in queryset
        ]
        return Response(list_body("Namespace", items, {}))
