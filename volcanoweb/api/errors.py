"""Kubernetes-style ``Status`` bodies for every API error, via DRF's exception handler hook."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import IntegrityError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from volcanoweb.core.errors import ApiError, TooManyRequests

log = logging.getLogger(__name__)

#: The message of every unexpected failure: never a traceback, whatever ``DEBUG`` says.
INTERNAL_MESSAGE = "Internal error occurred: the server could not handle the request; it has been logged"

_REASONS: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.NotAuthenticated, "Unauthorized"),
    (exceptions.AuthenticationFailed, "Unauthorized"),
    (exceptions.PermissionDenied, "Forbidden"),
    (exceptions.NotFound, "NotFound"),
    (exceptions.MethodNotAllowed, "MethodNotAllowed"),
    (exceptions.UnsupportedMediaType, "UnsupportedMediaType"),
    (exceptions.NotAcceptable, "NotAcceptable"),
    (exceptions.ParseError, "BadRequest"),
    (exceptions.ValidationError, "Invalid"),
    (exceptions.Throttled, "TooManyRequests"),
]


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return a ``{"kind": "Status", ...}`` failure body."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def _validation_causes(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    causes: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            causes.extend(_validation_causes(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(detail, list):
        for item in detail:
            causes.extend(_validation_causes(item, prefix))
    else:
        causes.append({"field": prefix, "message": str(detail), "reason": "FieldValueInvalid"})
    return causes


def _message(detail: Any) -> str:
    if isinstance(detail, list | dict):
        return "; ".join(
            f"{c['field']}: {c['message']}" if c["field"] else c["message"] for c in _validation_causes(detail)
        )
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Turn every exception into a Status response (JSON, or YAML when that was asked for)."""
    request = context.get("request")
    renderer = getattr(request, "accepted_renderer", None)
    if request is not None and getattr(renderer, "media_type", "") not in ("application/json", "application/yaml"):
        request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"
    return _handle(exc, context)


def _handle(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, ApiError):
        retry = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyRequests) else None
        return Response(status_body(exc.code, exc.reason, exc.message, exc.details()), status=exc.code, headers=retry)
    if isinstance(exc, Http404):
        return Response(status_body(404, "NotFound", "the server could not find the requested resource"), status=404)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(status_body(403, "Forbidden", str(exc) or "forbidden"), status=403)
    if isinstance(exc, IntegrityError):
        # Two writers raced past the existence check (e.g. two creates of one name); the loser
        # gets Kubernetes' answer to a conflicting write, and nothing of its request was kept.
        message = "Operation cannot be fulfilled: the object was created or changed concurrently; retry the request"
        return Response(status_body(409, "Conflict", message), status=409)
    if not isinstance(exc, exceptions.APIException):
        request = context.get("request")
        log.error(
            "unhandled error in %s %s", getattr(request, "method", "?"), getattr(request, "path", "?"), exc_info=exc
        )
        return Response(status_body(500, "InternalError", INTERNAL_MESSAGE), status=500)
    code = exc.status_code
    reason = next(
        (name for cls, name in _REASONS if isinstance(exc, cls)), "BadRequest" if code < 500 else "InternalError"
    )
    if code == 403 and reason == "Unauthorized":
        reason = "Forbidden"
    message = _message(exc.detail)
    if code == 401 and _kubectl_over_http(context.get("request")):
        message = PLAIN_HTTP_KUBECTL
    details: dict[str, Any] = {}
    if isinstance(exc, exceptions.ValidationError):
        details["causes"] = _validation_causes(exc.detail)
    headers: dict[str, str] = {}
    auth_header = getattr(exc, "auth_header", None)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    wait = getattr(exc, "wait", None)
    if wait:
        headers["Retry-After"] = str(int(wait))
    return Response(status_body(code, reason, message, details or None), status=code, headers=headers)


#: The 401 a kubectl gets on the plain HTTP port: kubectl never sends a bearer token over plain HTTP.
PLAIN_HTTP_KUBECTL = (
    "kubectl sends its bearer token only over HTTPS, and this is the plain HTTP port: use the HTTPS listener "
    "(HTTPS_PORT; `vcctl kubeconfig` writes its URL and certificate into the kubeconfig)"
)


def _kubectl_over_http(request: Any) -> bool:
    if request is None or request.is_secure():
        return False
    return str(request.headers.get("User-Agent", "")).startswith("kubectl/")


def status_response(code: int, reason: str, message: str) -> JsonResponse:
    """Return a ``Status`` failure as a plain Django response (outside DRF views)."""
    return JsonResponse(status_body(code, reason, message), status=code)


#: Paths whose errors are ``Status`` JSON: the REST API and the Kubernetes API (docs/kubernetes-api.md).
API_PREFIXES = ("/api/", "/apis/", "/openapi/")
API_PATHS = ("/api", "/apis", "/version", "/version/")


def is_api_path(path: str) -> bool:
    """Return True for a path served by the REST API or the Kubernetes API."""
    return path.startswith(API_PREFIXES) or path in API_PATHS


class ApiErrorMiddleware:
    """Under ``/api/`` and the Kubernetes API's paths (``/api``, ``/apis/``, ``/openapi/``, ``/version``), answer
    any exception a view lets through with a ``Status`` (500, logged), never HTML."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_path(request.path):
            return None
        if isinstance(exception, Http404):
            return status_response(404, "NotFound", "the server could not find the requested resource")
        if isinstance(exception, DjangoPermissionDenied):
            return status_response(403, "Forbidden", str(exception) or "forbidden")
        log.error("unhandled error in %s %s", request.method, request.path, exc_info=exception)
        return status_response(500, "InternalError", INTERNAL_MESSAGE)


class NulBytesMiddleware:
    """Refuse a request whose path or query parameters hold a NUL character (``%00``) with a 400, before any
    view runs: PostgreSQL can neither store nor compare one (a lookup by such a name was a 500 there), and
    no name, selector or time of ours may contain it. A ``Status`` under the APIs, plain text elsewhere."""

    MESSAGE = "the request's path or query contains a NUL character (%00), which no name or parameter may hold"

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path or any(
            "\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()
        ):
            if is_api_path(request.path.replace("\x00", "")):
                return status_response(400, "BadRequest", self.MESSAGE)
            return HttpResponse(self.MESSAGE, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
