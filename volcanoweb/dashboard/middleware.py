"""Pages whose live socket connects to the stack's live processes (``LIVE_PORT``) may connect there; a page knows
the change-log revision it was rendered at, for its socket to start from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


#: The apps whose views render whole pages with live regions.
PAGE_APPS = ("volcanoweb.dashboard.", "volcanoweb.insights.")


class LiveRevisionMiddleware:
    """Read the change log's revision before a page's view reads anything (``request.live_revision``).

    The page gives it to its socket (``/ws/live/?since=``), which starts there rather than at the moment it
    connects: a change committed while the page loaded, before its socket subscribed, was otherwise never sent,
    and the page stayed stale until the next change of the same object. Whole pages only (GET, not htmx
    fragments, which a socket already follows), of a signed-in user."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> None:
        if request.method != "GET" or request.headers.get("HX-Request"):
            return
        if not str(getattr(view, "__module__", "")).startswith(PAGE_APPS):
            return
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return
        from volcanoweb.feed import log

        request.live_revision = log.revision()  # type: ignore[attr-defined]
