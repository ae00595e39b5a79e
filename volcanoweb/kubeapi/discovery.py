"""Discovery as kube-apiserver answers it: the legacy documents and the aggregated one (``apidiscovery.k8s.io``).

kubectl 1.30+ and client-go ask ``/api`` and ``/apis`` with an ``Accept`` that lists
``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`` (then ``v2beta1``, then plain JSON):
a server that answers the aggregated document saves the client one request per group-version. The answer
names its type in ``Content-Type`` (client-go checks it) and varies on ``Accept``. Every discovery path is
also served with a trailing slash (``/apis/``, ``/apis/batch.volcano.sh/v1alpha1/``), as Go's router does.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.kubeapi import views
from volcanoweb.kubeapi.registry import BY_GROUP_VERSION, KubeResource

GROUP = "apidiscovery.k8s.io"
KIND = "APIGroupDiscoveryList"
#: The aggregated versions served, best first.
VERSIONS = ("v2", "v2beta1")
#: Subresources that each writable kind with a model serves (``/status``, read-only here).
STATUS_VERBS = ["get"]


def _params(media_range: str) -> tuple[str, dict[str, str]]:
    kind, _, rest = media_range.partition(";")
    params: dict[str, str] = {}
    for part in rest.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            params[key.strip().lower()] = value.strip().strip('"')
    return kind.strip().lower(), params


def aggregated_version(accept: str) -> str | None:
    """Return the aggregated discovery version (``v2``/``v2beta1``) the ``Accept`` header asks for first, if any.

    Accept's order is the client's preference (client-go sends no ``q``); a plain ``application/json`` before
    any aggregated type means the legacy documents.
    """
    for media_range in accept.split(","):
        kind, params = _params(media_range)
        if kind not in ("application/json", "*/*", "application/*"):
            continue
        if params.get("as") == KIND and params.get("g") == GROUP and params.get("v") in VERSIONS:
            return params["v"]
        if "as" not in params:
            return None
    return None


def _kind_ref(resource: KubeResource) -> dict[str, str]:
    return {"group": resource.group, "version": resource.version, "kind": resource.info.kind}


def _resource(resource: KubeResource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": resource.plural,
        "responseKind": _kind_ref(resource),
        "scope": "Namespaced" if resource.info.namespaced else "Cluster",
        "singularResource": resource.singular,
        "verbs": resource.verbs,
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    subresources = [
        {"subresource": name, "responseKind": kind, "verbs": verbs} for name, kind, verbs in subresources_of(resource)
    ]
    if subresources:
        entry["subresources"] = subresources
    return entry


def subresources_of(resource: KubeResource) -> list[tuple[str, dict[str, str], list[str]]]:
    """Return ``(name, responseKind, verbs)`` of the subresources a kind serves (legacy and aggregated)."""
    out: list[tuple[str, dict[str, str], list[str]]] = []
    if resource.model is not None and resource.plural not in ("events", "namespaces", "commands"):
        out.append(("status", _kind_ref(resource), STATUS_VERBS))
    if resource.plural == "pods":
        out.append(("log", {"group": "", "version": "v1", "kind": "Pod"}, ["get"]))
    return out


def _group_item(group: str) -> dict[str, Any]:
    versions = sorted(v for g, v in BY_GROUP_VERSION if g == group)
    return {
        "metadata": {"name": group, "creationTimestamp": None},
        "versions": [
            {
                "version": version,
                "resources": [_resource(r) for r in BY_GROUP_VERSION[(group, version)].values()],
                "freshness": "Current",
            }
            for version in versions
        ],
    }


def aggregated(core: bool, version: str) -> dict[str, Any]:
    """Return the aggregated document of ``/api`` (``core``) or ``/apis``."""
    groups = [""] if core else sorted({g for g, _ in BY_GROUP_VERSION if g})
    return {
        "kind": KIND,
        "apiVersion": f"{GROUP}/{version}",
        "metadata": {},
        "items": [_group_item(g) for g in groups],
    }


def _answer(request: Request, core: bool, legacy: Response) -> HttpResponse | Response:
    version = aggregated_version(request.headers.get("Accept", ""))
    if version is None:
        legacy["Vary"] = "Accept"
        return legacy
    response = HttpResponse(
        json.dumps(aggregated(core, version)),
        content_type=f"application/json;g={GROUP};v={version};as={KIND}",
    )
    response["Vary"] = "Accept"
    return response


class APIVersionsView(views.APIVersionsView):
    """``/api``: ``APIVersions``, or the core group's aggregated discovery."""

    def get(self, request: Request) -> HttpResponse | Response:  # type: ignore[override]
        return _answer(request, True, super().get(request))


class APIGroupListView(views.APIGroupListView):
    """``/apis``: ``APIGroupList``, or every group's aggregated discovery."""

    def get(self, request: Request) -> HttpResponse | Response:  # type: ignore[override]
        return _answer(request, False, super().get(request))


class APIResourceListView(views.APIResourceListView):
    """``/api/v1`` and ``/apis/{group}/{version}``, with the ``pods/log`` subresource listed."""

    def get(self, request: Request, version: str, group: str = "") -> Response:
        response = super().get(request, version=version, group=group)
        assert isinstance(response.data, dict)
        listed = {r["name"] for r in response.data["resources"]}
        for resource in BY_GROUP_VERSION[(group, version)].values():
            for name, _kind, verbs in subresources_of(resource):
                full = f"{resource.plural}/{name}"
                if full not in listed:
                    response.data["resources"].append(
                        {
                            "name": full,
                            "singularName": "",
                            "namespaced": resource.info.namespaced,
                            "kind": resource.info.kind,
                            "verbs": verbs,
                        }
                    )
        return response
