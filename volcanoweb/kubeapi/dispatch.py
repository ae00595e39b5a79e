"""The core v1 paths that the REST API also serves (``/api/v1/namespaces``, ``.../pods``, ``.../events``,
``/api/v1/nodes``): which of the two views answers a request.

A request that uses a Kubernetes-only feature (watch, Table output, fieldSelector, resourceVersion) goes to
the Kubernetes view; others keep the REST API's answers (already Kubernetes lists), so both clients work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from volcanoweb.kubeapi import query


def is_kube_request(request: HttpRequest) -> bool:
    """Return True when a request on a shared core path needs the Kubernetes view."""
    if request.method == "PATCH":
        return True  # the REST API has no PATCH: kubectl apply/patch/label of a pod needs the Kubernetes view
    params = request.GET
    kube_only = (
        "watch",
        "fieldSelector",
        "resourceVersion",
        "resourceVersionMatch",
        "timeoutSeconds",
        "sendInitialEvents",
    )
    if any(key in params for key in kube_only):
        return True
    return query.wants_table(request.headers.get("Accept", ""))


def core_dispatch(
    kube: Callable[..., HttpResponseBase], rest: Callable[..., HttpResponseBase]
) -> Callable[..., HttpResponseBase]:
    """Return a view that sends Kubernetes-only requests to ``kube`` and the others to ``rest``."""

    @csrf_exempt
    def view(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
        if is_kube_request(request):
            return kube(request, **kwargs)
        rest_kwargs = {k: v for k, v in kwargs.items() if k in ("namespace", "name")}
        return rest(request, **rest_kwargs)

    return view
