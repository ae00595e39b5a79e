"""``/api/v1/events`` and ``/api/v1/namespaces/{ns}/events``: the events, in the ``v1`` Event shape."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, list_body
from volcanoweb.api.listing import apply_filters, clean_text, paginate
from volcanoweb.api.schema import ERRORS, LIST_PARAMS
from volcanoweb.jobs.models import Event
from volcanoweb.manifests import parse, render
from volcanoweb.tenancy.access import resolve_namespace


def event_manifest(event: Event) -> dict[str, Any]:
    """Return an Event in the ``v1`` Event shape."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{event.involved_name}.{event.pk:x}", "namespace": event.namespace},
        "involvedObject": {
            "kind": event.involved_kind,
            "namespace": event.involved_namespace,
            "name": event.involved_name,
            "uid": str(event.involved_uid or ""),
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message,
        "count": event.count,
        "firstTimestamp": render.timestamp(event.first_timestamp),
        "lastTimestamp": render.timestamp(event.last_timestamp),
        "source": {"component": event.source},
    }


EVENT_FILTERS = {"involvedKind": "involved_kind", "involvedName": "involved_name", "type": "type", "reason": "reason"}
EVENT_PARAMS = [OpenApiParameter(name, str) for name in EVENT_FILTERS]


def _event_list(request: Request, queryset: Any) -> dict[str, Any]:
    queryset = apply_filters(queryset, request.query_params, EVENT_FILTERS, ("message", "involved_name"))
    queryset = queryset.order_by("-last_timestamp", "-pk")
    items, meta = paginate(queryset, request.query_params)
    return list_body("Event", [event_manifest(e) for e in items], meta)


class EventListView(ApiView):
    """``/api/v1/events``: events of the caller's tenants (cluster-wide ones for platform admins)."""

    @extend_schema(
        parameters=[*LIST_PARAMS[:2], *EVENT_PARAMS, OpenApiParameter("namespace", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        queryset = self.access(request).scope(Event.objects.all())
        namespace = clean_text(request.query_params.get("namespace"), "namespace", 63)
        if namespace:
            queryset = queryset.filter(namespace=namespace)
        return Response(_event_list(request, queryset))


class NamespacedEventListView(ApiView):
    """``/api/v1/namespaces/{ns}/events``."""

    @extend_schema(parameters=[*LIST_PARAMS[:2], *EVENT_PARAMS], responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, namespace: str) -> Response:
        info = parse.KindInfo("v1", "Event", "events", True)
        resolve_namespace(self.access(request), namespace, "list", info)
        return Response(_event_list(request, Event.objects.filter(namespace=namespace)))
