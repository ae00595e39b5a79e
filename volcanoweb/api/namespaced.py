"""The namespaced kinds of :data:`volcanoweb.api.resources.NAMESPACED` (jobs, pods, PodGroups, CronJobs,
...): list and create in a namespace, get, replace and delete one, list across the caller's namespaces."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, check_url_identity, list_body
from volcanoweb.api.listing import apply_filters, apply_ordering, clean_text, paginate
from volcanoweb.api.resources import NAMESPACED, Resource
from volcanoweb.api.schema import ERRORS, FILTER_PARAMS, LIST_PARAMS, MANIFEST_BODY
from volcanoweb.core.errors import not_found
from volcanoweb.tenancy.access import resolve_namespace


def _list(request: Request, queryset: Any, resource: Resource, default_order: list[str]) -> dict[str, Any]:
    queryset = apply_filters(queryset, request.query_params, resource.filters, resource.text_fields)
    queryset = apply_ordering(queryset, request.query_params.get("ordering"), resource.ordering, default_order)
    items, meta = paginate(queryset, request.query_params)
    return list_body(resource.info.kind, [resource.render(obj) for obj in items], meta, resource.info.api_version)


class NamespacedCollectionView(ApiView):
    """``/api/v1/namespaces/{ns}/<resource>``: list and create."""

    resource_name = "jobs"

    @extend_schema(parameters=[*LIST_PARAMS, *FILTER_PARAMS], responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, namespace: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        resolve_namespace(self.access(request), namespace, "list", resource.info)
        queryset = resource.model.objects.filter(namespace=namespace)
        return Response(_list(request, queryset, resource, ["name"]))

    @extend_schema(request=MANIFEST_BODY, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, namespace: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        doc = self.single_document(request, resource.info.kind)
        check_url_identity(doc, namespace, None)
        outcome = resource.apply(self.access(request), doc, namespace, mode="create")
        return Response(outcome.object, status=status.HTTP_201_CREATED)


class NamespacedObjectView(ApiView):
    """``/api/v1/namespaces/{ns}/<resource>/{name}``: get, replace, delete."""

    resource_name = "jobs"

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, namespace: str, name: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        resolve_namespace(self.access(request), namespace, "get", resource.info, name)
        obj = resource.model.objects.filter(namespace=namespace, name=name).first()
        if obj is None:
            raise not_found(resource.info.qualified_resource, name, resource.info.kind, resource.info.group)
        return Response(resource.render(obj))

    @extend_schema(request=MANIFEST_BODY, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def put(self, request: Request, namespace: str, name: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        doc = self.single_document(request, resource.info.kind)
        check_url_identity(doc, namespace, name)
        outcome = resource.apply(self.access(request), doc, namespace, mode="update")
        return Response(outcome.object)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, namespace: str, name: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        access = self.access(request)

        def current() -> Any:
            obj = resource.model.objects.select_for_update(no_key=True).filter(namespace=namespace, name=name).first()
            return obj if obj is not None and access.can_read(obj.tenant_id) else None

        outcome = self.delete_checked(
            request, current, lambda: resource.delete(access, namespace, name), resource.info.qualified_resource, name
        )
        return Response(outcome.object)


class AllNamespacesView(ApiView):
    """``/api/v1/<resource>``: list across the caller's namespaces (``?namespace=`` filters)."""

    resource_name = "jobs"

    @extend_schema(
        parameters=[*LIST_PARAMS, *FILTER_PARAMS, OpenApiParameter("namespace", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        resource = NAMESPACED[self.resource_name]
        queryset = self.access(request).scope(resource.model.objects.all())
        namespace = clean_text(request.query_params.get("namespace"), "namespace", 63)
        if namespace:
            queryset = queryset.filter(namespace=namespace)
        return Response(_list(request, queryset, resource, ["namespace", "name"]))
