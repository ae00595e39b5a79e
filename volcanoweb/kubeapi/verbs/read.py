"""The read verbs: get (an object or its ``/status``), list (paged, or as a Table) and watch (a stream)."""

from __future__ import annotations

from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponseBase, StreamingHttpResponse
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.listing import clean_text
from volcanoweb.core.errors import NotFound
from volcanoweb.kubeapi import lists, query, watch
from volcanoweb.kubeapi.registry import KubeResource
from volcanoweb.kubeapi.selection import Selection
from volcanoweb.kubeapi.verbs.base import ResourceBase
from volcanoweb.tenancy.access import Access


class ReadVerbs(ResourceBase):
    """GET on a collection or an object: get, list, or ``?watch=true``."""

    def get(self, request: Request, **kwargs: Any) -> HttpResponseBase:
        resource, namespace, name, subresource = self.kwargs_of(kwargs)
        access = self.access(request)
        params = request.query_params
        if params.get("watch") in ("1", "true", "True"):
            return self.watch(request, access, resource, namespace, name)
        if name is not None:
            if subresource not in (None, "status"):
                raise NotFound(f"the server could not find the requested resource ({resource.plural}/{subresource})")
            obj = resource.render(self.find(access, resource, namespace, name))
            if query.wants_table(request.headers.get("Accept", "")):
                return Response(
                    query.table(resource, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")})
                )
            return Response(obj)
        selection = self.selection(request, access, resource, namespace, None, "list")
        objects, meta = lists.page(selection, params)
        if query.wants_table(request.headers.get("Accept", "")):
            return Response(query.table(resource, objects, meta))
        list_version = resource.info.api_version
        return Response(
            {"apiVersion": list_version, "kind": f"{resource.info.kind}List", "metadata": meta, "items": objects}
        )

    def selection(
        self,
        request: Request,
        access: Access,
        resource: KubeResource,
        namespace: str | None,
        name: str | None,
        verb: str,
    ) -> Selection:
        """What a list or watch selects: authorized first (403 before anything is read), then the selectors."""
        params = request.query_params
        self.scoped(access, resource, namespace, verb)
        selector = clean_text(params.get("fieldSelector"), "fieldSelector", 2000) or ""
        if name is not None:
            selector = ",".join(s for s in (selector, f"metadata.name={name}") if s)
        terms = query.parse_field_selector(resource, selector)
        label_selector = clean_text(params.get("labelSelector"), "labelSelector", 2000)
        return Selection.build(resource, access, namespace, terms, label_selector)

    def watch(
        self, request: Request, access: Access, resource: KubeResource, namespace: str | None, name: str | None
    ) -> StreamingHttpResponse:
        params = request.query_params
        selection = self.selection(request, access, resource, namespace, name, "watch")
        since = query.check_watch_version(clean_text(params.get("resourceVersion"), "resourceVersion", 40))
        initial = params.get("sendInitialEvents") in ("true", "1") if "sendInitialEvents" in params else since is None
        stream = watch.Stream(
            selection,
            since=since,
            initial=initial,
            bookmarks=params.get("allowWatchBookmarks") in ("true", "1"),
            as_table=query.wants_table(request.headers.get("Accept", "")),
            timeout=watch.timeout_seconds(params.get("timeoutSeconds")),
        )
        driver = watch.events if isinstance(request._request, ASGIRequest) else watch.events_sync
        response = StreamingHttpResponse(driver(stream), content_type="application/json")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response
