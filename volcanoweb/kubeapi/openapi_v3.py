"""``/openapi/v3``: the list of group-version documents and each document (built in
:mod:`volcanoweb.kubeapi.openapi`); ``/openapi/v2`` is :mod:`volcanoweb.kubeapi.openapi_v2`."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.core.errors import NotFound
from volcanoweb.kubeapi import openapi
from volcanoweb.kubeapi.base import KubeView
from volcanoweb.kubeapi.registry import BY_GROUP_VERSION


class OpenAPIV3RootView(KubeView):
    """``/openapi/v3``: the list of group-version documents."""

    def get(self, request: Request) -> Response:
        return Response(openapi.v3_root())


class OpenAPIV3GroupView(KubeView):
    """``/openapi/v3/apis/{group}/{version}`` and ``/openapi/v3/api/v1``."""

    def get(self, request: Request, version: str, group: str = "") -> Response:
        if (group, version) not in BY_GROUP_VERSION:
            raise NotFound(f"the server could not find the requested resource ({group}/{version})")
        return Response(openapi.v3_document(group, version))
