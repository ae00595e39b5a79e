"""Discovery as kube-apiserver answers it: the legacy documents and the aggregated one (``apidiscovery.k8s.io``).

kubectl 1.30+ and client-go ask ``/api`` and ``/apis`` with an ``Accept`` that lists
``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`` (then ``v2beta1``, then plain JSON):
a server that answers the aggregated document saves the client one request per group-version. The answer
names its type in ``Content-Type`` (client-go checks it) and varies on ``Accept``. Every discovery path is
also served with a trailing slash (``/apis/``, ``/apis/batch.volcano.sh/v1alpha1/``), as Go's router does.
``/version`` (what ``kubectl version`` prints for the server) is here too.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.core.errors import NotFound
from volcanoweb.kubeapi.base import KubeView
from volcanoweb.kubeapi.registry import BY_GROUP_VERSION, KubeResource

GROUP = "apidiscovery.k8s.io"
KIND = "APIGroupDiscoveryList"
#: The aggregated versions served, best first.
VERSIONS = ("v2", "v2beta1")
#: Subresources that each writable kind with a model serves (``/status``, read-only here).
STATUS_VERBS = ["get"]
SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-volcanoweb",
    "gitCommit": "volcanoweb",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "python",
    "compiler": "cpython",
    "platform": "linux/amd64",
}


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


def _group_versions() -> list[tuple[str, str]]:
    return sorted({key for key in BY_GROUP_VERSION if key[0]})


def _group_body(group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{g}/{v}", "version": v} for g, v in _group_versions() if g == group]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def _resource_list(group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for resource in BY_GROUP_VERSION[(group, version)].values():
        entry: dict[str, Any] = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.info.namespaced,
            "kind": resource.info.kind,
            "verbs": resource.verbs,
        }
        if resource.short_names:
            entry["shortNames"] = list(resource.short_names)
        if resource.categories:
            entry["categories"] = list(resource.categories)
        resources.append(entry)
        if resource.model is not None and resource.plural not in ("events", "namespaces", "commands"):
            resources.append(
                {
                    "name": f"{resource.plural}/status",
                    "singularName": "",
                    "namespaced": resource.info.namespaced,
                    "kind": resource.info.kind,
                    "verbs": ["get"],
                }
            )
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


class LegacyAPIVersionsView(KubeView):
    """``/api``: the core group's versions."""

    def get(self, request: Request) -> Response:
        address = request.get_host()
        return Response(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
            }
        )


class LegacyAPIGroupListView(KubeView):
    """``/apis``: the Volcano groups and scheduling.k8s.io."""

    def get(self, request: Request) -> Response:
        groups = sorted({g for g, _ in _group_versions()})
        return Response({"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_body(g) for g in groups]})


class APIGroupView(KubeView):
    """``/apis/{group}``."""

    def get(self, request: Request, group: str) -> Response:
        if not any(g == group for g, _ in _group_versions()):
            raise NotFound(f"the server could not find the requested resource (group {group})")
        return Response(_group_body(group))


class LegacyAPIResourceListView(KubeView):
    """``/api/v1`` and ``/apis/{group}/{version}``: the resources with verbs, short names and categories."""

    def get(self, request: Request, version: str, group: str = "") -> Response:
        if (group, version) not in BY_GROUP_VERSION:
            raise NotFound(f"the server could not find the requested resource ({group}/{version})")
        return Response(_resource_list(group, version))


class VersionView(KubeView):
    """``/version``: what ``kubectl version`` prints for the server (public, as on kube-apiserver, whose
    ``system:public-info-viewer`` role lets anonymous callers read it)."""

    permission_classes = [AllowAny]

    def get(self, request: Request) -> Response:
        return Response(SERVER_VERSION)


class APIVersionsView(LegacyAPIVersionsView):
    """``/api``: ``APIVersions``, or the core group's aggregated discovery."""

    def get(self, request: Request) -> HttpResponse | Response:  # type: ignore[override]
        return _answer(request, True, super().get(request))


class APIGroupListView(LegacyAPIGroupListView):
    """``/apis``: ``APIGroupList``, or every group's aggregated discovery."""

    def get(self, request: Request) -> HttpResponse | Response:  # type: ignore[override]
        return _answer(request, False, super().get(request))


class APIResourceListView(LegacyAPIResourceListView):
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
