"""The product's own 404, 403 and 500 pages (also with DEBUG on, where Django would list every URL pattern).

``urls.py`` points ``handler404``/``handler403``/``handler500`` here; :class:`ErrorPagesMiddleware` renders
the same 404 page while DEBUG is on, for browser pages only: the API keeps its Kubernetes ``Status`` bodies
and htmx fragments keep their own error partials.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import loader

TEXTS = {
    404: (
        "Page not found",
        "There is nothing at this address, or you cannot see it. A deleted job or queue no longer has a page; "
        "objects of tenants you are not a member of are not shown.",
    ),
    403: ("You cannot do this", "Your role does not allow this page or action. A tenant admin can change your role."),
}
NOT_PAGES = ("/api/", "/apis/", "/static/", "/ws/", "/admin/", "/healthz", "/livez", "/readyz", "/metrics")


def _render(request: HttpRequest, code: int) -> HttpResponse:
    title, text = TEXTS[code]
    context = {"error_code": code, "error_title": title, "error_text": text, "request_path": request.path}
    return render(request, f"{code}.html", context, status=code)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404."""
    return _render(request, 404)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403."""
    return _render(request, 403)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a static page (no context processors, nothing that could fail again)."""
    return HttpResponse(loader.get_template("500.html").render(), status=500)


def _is_page(request: HttpRequest) -> bool:
    if request.headers.get("HX-Request") or request.method not in ("GET", "HEAD"):
        return False
    return not request.path.startswith(NOT_PAGES)


class ErrorPagesMiddleware:
    """With DEBUG on, show the product's 404 page instead of Django's technical one on browser pages."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and getattr(request, "resolver_match", None) is None  # no URL pattern matched
            and _is_page(request)
        ):
            return page_not_found(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        if settings.DEBUG and isinstance(exception, Http404) and _is_page(request):
            return page_not_found(request, exception)
        return None
