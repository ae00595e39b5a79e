"""``/api/v1/audit``: the audit log (read-only; the services write it)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView
from volcanoweb.api.listing import apply_filters, paginate
from volcanoweb.api.schema import ERRORS, LIST_PARAMS
from volcanoweb.audit.models import AuditEntry


def audit_manifest(entry: AuditEntry) -> dict[str, Any]:
    """Return one audit entry."""
    return {
        "id": entry.pk,
        "at": entry.at.isoformat(),
        "actor": entry.actor_name,
        "tenant": entry.tenant.name if entry.tenant else None,
        "action": entry.action,
        "kind": entry.kind,
        "objectKey": entry.object_key,
        "source": entry.source,
        "message": entry.message,
        "before": entry.before,
        "after": entry.after,
    }


AUDIT_FILTERS = {"kind": "kind", "action": "action", "actor": "actor_name", "tenant": "tenant__name"}


class AuditListView(ApiView):
    """``/api/v1/audit``: the audit log of the caller's tenants (everything for platform admins)."""

    @extend_schema(
        parameters=[*LIST_PARAMS[:2], *(OpenApiParameter(n, str) for n in AUDIT_FILTERS), OpenApiParameter("q", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        queryset = self.access(request).scope(AuditEntry.objects.select_related("tenant"))
        queryset = apply_filters(queryset, request.query_params, AUDIT_FILTERS, ("object_key",)).order_by("-at", "-pk")
        items, meta = paginate(queryset, request.query_params)
        return Response(
            {
                "apiVersion": "v1",
                "kind": "AuditEntryList",
                "metadata": meta,
                "items": [audit_manifest(e) for e in items],
            }
        )
