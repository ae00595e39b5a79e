"""Pages whose live socket connects to the stack's live processes (``LIVE_PORT``) may connect there."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class LiveSocketCSPMiddleware:
    """Add the live processes' origin on the page's own host (``ws://host:LIVE_PORT``, ``wss://`` over HTTPS)
    to the page's ``connect-src``; nothing when sockets are same-origin (``LIVE_PORT`` 0)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        port = int(getattr(settings, "LIVE_PORT", 0) or 0)
        if port and response.get("Content-Type", "").startswith("text/html"):
            scheme = "wss" if request.is_secure() else "ws"
            host = request.get_host().rsplit(":", 1)[0] if not request.get_host().endswith("]") else request.get_host()
            update = dict(getattr(response, "_csp_update", None) or {})
            update["connect-src"] = [*update.get("connect-src", []), f"{scheme}://{host}:{port}"]
            response._csp_update = update  # type: ignore[attr-defined]  # django-csp reads it
        return response
