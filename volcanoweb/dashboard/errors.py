"""The product's own 404, 403 and 500 pages and fragments: Django's debug pages are never shown, DEBUG or not.

``urls.py`` points ``handler404``/``handler403``/``handler500`` here (and ``CSRF_FAILURE_VIEW`` at
:func:`csrf_failure`); :class:`ErrorPagesMiddleware` renders
the same pages while DEBUG is on (where Django would show its technical 404 and 500 pages), and for htmx
requests a small error fragment instead of any page. The API keeps its Kubernetes ``Status`` bodies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.core.exceptions import PermissionDenied
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
log = logging.getLogger(__name__)
NOT_PAGES = ("/api/", "/apis/", "/static/", "/ws/", "/admin/", "/healthz", "/livez", "/readyz", "/metrics")


def _render(request: HttpRequest, code: int, text: str = "", title: str = "") -> HttpResponse:
    default_title, default = TEXTS[code]
    title, text = title or default_title, text or default
    context = {"error_code": code, "error_title": title, "error_text": text, "request_path": request.path}
    return render(request, f"{code}.html", context, status=code)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404."""
    return _render(request, 404)


def not_found_page(request: HttpRequest, text: str) -> HttpResponse:
    """The 404 page saying what happened (``This job was deleted by bob at ...``)."""
    return _render(request, 404, text)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403."""
    return _render(request, 403)


#: What a stale form says: its page was rendered before the user signed in again (here or in another tab), which
#: gave the session a new CSRF secret, or before the session ended.
STALE_FORM = (
    "This page is older than your sign-in: you signed in again (perhaps in another tab) or your session ended, so "
    "its forms are no longer accepted. Reload the page and try again; nothing was changed."
)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: Django's own page (with DEBUG, its help section) was swapped into the page by htmx. A
    partial gets a small fragment, a form post the product's 403 page, both saying what to do."""
    if request.headers.get("HX-Request"):
        return render(request, "dashboard/_error.html", {"error": {"message": STALE_FORM}}, status=403)
    return _render(request, 403, STALE_FORM, "This page is out of date")


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a static page (no context processors, nothing that could fail again)."""
    return HttpResponse(loader.get_template("500.html").render(), status=500)


def _is_page(request: HttpRequest) -> bool:
    if request.headers.get("HX-Request") or request.method not in ("GET", "HEAD"):
        return False
    return not request.path.startswith(NOT_PAGES)


def _is_fragment(request: HttpRequest) -> bool:
    return bool(request.headers.get("HX-Request")) and not request.path.startswith(NOT_PAGES)


def error_fragment(request: HttpRequest, code: int) -> HttpResponse:
    """The small partial an htmx request gets for an error (never a whole page inside a page region)."""
    messages = {
        404: "Not found: it no longer exists, or you cannot see it.",
        403: "Your role does not allow this.",
        500: "The server could not complete the request; the error is in its log. Try again.",
    }
    return render(request, "dashboard/_error.html", {"error": {"message": messages[code]}}, status=code)


def _to_sign_in(response: HttpResponse) -> bool:
    return response.status_code == 302 and str(response.get("Location", "")).startswith(str(settings.LOGIN_URL))


def _page_to_sign_in(request: HttpRequest) -> HttpResponse:
    """For a partial whose session ended: the browser would follow the redirect and htmx swap the sign-in page into
    the region; send the whole page there instead, to come back to it (``HX-Current-URL``) after signing in."""
    current = urlsplit(request.headers.get("HX-Current-URL", ""))
    page = (current.path or "/") + (f"?{current.query}" if current.query else "")
    response = HttpResponse(status=200)
    response["HX-Redirect"] = f"{settings.LOGIN_URL}?{urlencode({'next': page}, safe='/')}"
    return response


class ErrorPagesMiddleware:
    """With DEBUG on, show the product's 404/403/500 page instead of Django's technical ones on browser pages; for
    htmx requests (DEBUG or not) a small error fragment, and the whole page to the sign-in when the session ended
    (never the sign-in page inside a region)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if _is_fragment(request) and _to_sign_in(response):
            return _page_to_sign_in(request)
        if response.status_code == 404 and getattr(request, "resolver_match", None) is None:  # no URL matched
            if _is_fragment(request):
                return error_fragment(request, 404)
            if settings.DEBUG and _is_page(request):
                return page_not_found(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        fragment = _is_fragment(request)
        if not fragment and not (settings.DEBUG and not request.path.startswith(NOT_PAGES)):
            return None  # Django's handlers (ours, with DEBUG off); the API has its own
        if isinstance(exception, Http404):
            return error_fragment(request, 404) if fragment else page_not_found(request, exception)
        if isinstance(exception, PermissionDenied):
            return error_fragment(request, 403) if fragment else permission_denied(request, exception)
        log.error("%s %s failed", request.method, request.path, exc_info=exception)
        return error_fragment(request, 500) if fragment else server_error(request)


class AuditSourceMiddleware:
    """Requests to the dashboard's pages and forms (not the API, the Kubernetes API or the admin) record their audit
    entries with source ``dashboard``, not the services' default ``api``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(NOT_PAGES):
            return self.get_response(request)
        from volcanoweb.audit import services as audit

        with audit.requests_from("dashboard"):
            return self.get_response(request)
