"""Kubernetes-style ``Status`` bodies for every API error, via DRF's exception handler hook."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import IntegrityError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response

from volcanoweb.manifests.errors import ApiError

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
    """Turn ApiError, Django's 404/403 and every DRF APIException into a Status response; None means 500."""
    if isinstance(exc, ApiError):
        return Response(status_body(exc.code, exc.reason, exc.message, exc.details()), status=exc.code)
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
        return None
    code = exc.status_code
    reason = next(
        (name for cls, name in _REASONS if isinstance(exc, cls)), "BadRequest" if code < 500 else "InternalError"
    )
    if code == 403 and reason == "Unauthorized":
        reason = "Forbidden"
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
    return Response(status_body(code, reason, _message(exc.detail), details or None), status=code, headers=headers)
