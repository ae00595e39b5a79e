"""``/api/v1/priorityclasses``: list, create, get, replace and delete priority classes."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, check_url_identity, list_body
from volcanoweb.api.listing import apply_filters, apply_ordering, paginate
from volcanoweb.api.schema import ERRORS, LIST_PARAMS, MANIFEST_BODY
from volcanoweb.core.errors import not_found
from volcanoweb.jobs import services as jobs
from volcanoweb.jobs.models import PriorityClass
from volcanoweb.manifests import parse, render


class PriorityClassCollectionView(ApiView):
    """``/api/v1/priorityclasses``: everyone lists; platform admins create."""

    @extend_schema(parameters=LIST_PARAMS, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        queryset = apply_filters(PriorityClass.objects.all(), request.query_params, {}, ("name",))
        order = {"name": "name", "value": "value", "created": "created_at"}
        queryset = apply_ordering(queryset, request.query_params.get("ordering"), order, ["-value", "name"])
        items, meta = paginate(queryset, request.query_params)
        return Response(
            list_body("PriorityClass", [render.priorityclass(p) for p in items], meta, parse.PRIORITYCLASS.api_version)
        )

    @extend_schema(request=MANIFEST_BODY, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        doc = self.single_document(request, "PriorityClass")
        outcome = jobs.apply_priorityclass(self.access(request), doc, mode="create")
        return Response(outcome.object, status=status.HTTP_201_CREATED)


class PriorityClassObjectView(ApiView):
    """``/api/v1/priorityclasses/{name}``."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, name: str) -> Response:
        obj = PriorityClass.objects.filter(name=name).first()
        if obj is None:
            raise not_found(parse.PRIORITYCLASS.qualified_resource, name, "PriorityClass", parse.PRIORITYCLASS.group)
        return Response(render.priorityclass(obj))

    @extend_schema(request=MANIFEST_BODY, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def put(self, request: Request, name: str) -> Response:
        doc = self.single_document(request, "PriorityClass")
        check_url_identity(doc, None, name)
        return Response(jobs.apply_priorityclass(self.access(request), doc, mode="update").object)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        access = self.access(request)
        outcome = self.delete_checked(
            request,
            lambda: PriorityClass.objects.select_for_update(no_key=True).filter(name=name).first(),
            lambda: jobs.delete_priorityclass(access, name),
            parse.PRIORITYCLASS.qualified_resource,
            name,
        )
        return Response(outcome.object)
