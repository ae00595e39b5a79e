"""``/api/v1/hypernodes``: list, create, get, replace and delete HyperNodes (the network topology)."""

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
from volcanoweb.jobs.models import HyperNode
from volcanoweb.manifests import parse, render


class HyperNodeCollectionView(ApiView):
    """``/api/v1/hypernodes``: everyone lists (lowest tier first); platform admins create."""

    @extend_schema(parameters=LIST_PARAMS, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        queryset = apply_filters(HyperNode.objects.all(), request.query_params, {}, ("name",))
        order = {"name": "name", "tier": "tier", "created": "created_at"}
        queryset = apply_ordering(queryset, request.query_params.get("ordering"), order, ["tier", "name"])
        items, meta = paginate(queryset, request.query_params)
        return Response(list_body("HyperNode", [render.hypernode(h) for h in items], meta, parse.HYPERNODE.api_version))

    @extend_schema(request=MANIFEST_BODY, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        doc = self.single_document(request, "HyperNode")
        outcome = jobs.apply_hypernode(self.access(request), doc, mode="create")
        return Response(outcome.object, status=status.HTTP_201_CREATED)


class HyperNodeObjectView(ApiView):
    """``/api/v1/hypernodes/{name}``."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, name: str) -> Response:
        obj = HyperNode.objects.filter(name=name).first()
        if obj is None:
            raise not_found(parse.HYPERNODE.qualified_resource, name, "HyperNode", parse.HYPERNODE.group)
        return Response(render.hypernode(obj))

    @extend_schema(request=MANIFEST_BODY, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def put(self, request: Request, name: str) -> Response:
        doc = self.single_document(request, "HyperNode")
        check_url_identity(doc, None, name)
        return Response(jobs.apply_hypernode(self.access(request), doc, mode="update").object)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        return Response(jobs.delete_hypernode(self.access(request), name).object)
