"""Helpers shared by the views: fragment rendering, error display, safe redirects."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django_htmx.middleware import HtmxDetails

from volcanoweb.core.errors import ApiError
from volcanoweb.dashboard.scope import get_scope, select_tenant


class HtmxHttpRequest(HttpRequest):
    """The type of a request through django_htmx's middleware, which sets ``htmx`` (falsy without htmx)."""

    htmx: HtmxDetails


def page(
    request: HttpRequest, template: str, context: dict[str, Any], fragments: dict[str, str] | None = None
) -> HttpResponse:
    """Render the page, or only one of its live fragments when ``?fragment=<name>`` asks for it."""
    context.setdefault("scope", get_scope(request))
    name = request.GET.get("fragment")
    if fragments and name in fragments:
        return render(request, fragments[name], context)
    return render(request, template, context)


def error_info(exc: ApiError) -> dict[str, Any]:
    """Return an error as the ``_error.html`` partial expects it."""
    causes = [{"field": c.field, "message": c.message} for c in getattr(exc, "causes", [])]
    return {"message": exc.message, "reason": exc.reason, "causes": causes}


def safe_next(request: HttpRequest, fallback: str = "/") -> str:
    """Return the ``next`` parameter when it points inside this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return target
    return fallback


@require_POST
def switch_tenant(request: HttpRequest) -> HttpResponse:
    """Store the tenant chosen in the switcher and go back."""
    select_tenant(request, request.POST.get("tenant", ""))
    return HttpResponseRedirect(safe_next(request))
