"""The ``Status`` 404 of any other path under /api/v1/ (and the Kubernetes API's /apis/, /api/, /openapi/)."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView
from volcanoweb.core.errors import NotFound


class NotFoundView(ApiView):
    """Any other path under /api/v1/ (and the Kubernetes API's /apis/, /api/, /openapi/): a Status 404 (401 first
    for anonymous callers)."""

    schema = None

    def _missing(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound(f"the server could not find the requested resource ({request.path})")

    get = post = put = patch = delete = _missing
