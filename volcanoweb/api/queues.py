"""``/api/v1/queues``: list, create, get, replace, delete, open and close queues."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, check_url_identity, list_body
from volcanoweb.api.listing import apply_filters, apply_ordering, paginate
from volcanoweb.api.schema import ERRORS, LIST_PARAMS, MANIFEST_BODY
from volcanoweb.core.errors import NotFound
from volcanoweb.manifests import parse, render
from volcanoweb.queues import services as queues
from volcanoweb.queues.models import Queue
from volcanoweb.tenancy.access import visible_queue_filter

QUEUE_ORDER = {"name": "name", "created": "created_at", "weight": "weight", "priority": "priority", "state": "state"}


class QueueCollectionView(ApiView):
    """``/api/v1/queues``: list the queues the caller can see; create (platform or tenant admins)."""

    @extend_schema(
        parameters=[*LIST_PARAMS, OpenApiParameter("state", str), OpenApiParameter("parent", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        access = self.access(request)
        queryset: QuerySet[Any] = Queue.objects.filter(visible_queue_filter(access)).distinct().select_related("parent")
        queryset = apply_filters(
            queryset, request.query_params, {"state": "state", "parent": "parent__name"}, ("name",)
        )
        queryset = apply_ordering(queryset, request.query_params.get("ordering"), QUEUE_ORDER, ["name"])
        items, meta = paginate(queryset, request.query_params)
        return Response(list_body("Queue", [render.queue(q) for q in items], meta, parse.QUEUE.api_version))

    @extend_schema(request=MANIFEST_BODY, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        doc = self.single_document(request, "Queue")
        outcome = queues.apply_queue(self.access(request), doc, mode="create")
        return Response(outcome.object, status=status.HTTP_201_CREATED)


class QueueObjectView(ApiView):
    """``/api/v1/queues/{name}``: get, replace, delete."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, name: str) -> Response:
        return Response(render.queue(queues.get_visible_queue(self.access(request), name)))

    @extend_schema(request=MANIFEST_BODY, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def put(self, request: Request, name: str) -> Response:
        access = self.access(request)
        queues.get_visible_queue(access, name)
        doc = self.single_document(request, "Queue")
        check_url_identity(doc, None, name)
        return Response(queues.apply_queue(access, doc, mode="update").object)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        access = self.access(request)

        def current() -> Any:
            try:
                return queues.get_visible_queue(access, name, for_update=True)
            except NotFound:
                return None

        outcome = self.delete_checked(
            request, current, lambda: queues.delete_queue(access, name), parse.QUEUE.qualified_resource, name
        )
        return Response(outcome.object)


class QueueOpenView(ApiView):
    """``POST /api/v1/queues/{name}/open``."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, name: str) -> Response:
        return Response(render.queue(queues.open_queue(self.access(request), name)))


class QueueCloseView(ApiView):
    """``POST /api/v1/queues/{name}/close``: Closed, or Closing while PodGroups still use it."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, name: str) -> Response:
        return Response(render.queue(queues.close_queue(self.access(request), name)))
