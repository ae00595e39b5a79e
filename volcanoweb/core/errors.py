"""The project's error vocabulary, shaped like Kubernetes ``Status`` failures (the lowest layer: all may import it).

The API layer turns any :class:`ApiError` into a ``{"kind": "Status", ...}`` body; services and the
validators raise them without knowing about HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One field-level problem: a path like ``spec.tasks[1].replicas``, a message and a k8s cause type."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"

    def as_dict(self) -> dict[str, str]:
        """Return the Status ``details.causes[]`` entry."""
        return {"field": self.field, "message": self.message, "reason": self.reason}


@dataclass
class Errors:
    """A collector of causes, used by the validators."""

    causes: list[Cause] = field(default_factory=list)

    def add(self, path: str, message: str, reason: str = "FieldValueInvalid") -> None:
        """Record one problem."""
        self.causes.append(Cause(path, message, reason))

    def required(self, path: str) -> None:
        """Record a missing required field (Kubernetes wording)."""
        self.add(path, "Required value", "FieldValueRequired")

    def __bool__(self) -> bool:
        return bool(self.causes)

    def __len__(self) -> int:
        return len(self.causes)


class ApiError(Exception):
    """A failure with an HTTP status code and a Kubernetes ``reason``."""

    code = 500
    reason = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        kind: str = "",
        name: str = "",
        group: str = "",
        causes: list[Cause] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.name = name
        self.group = group
        self.causes = list(causes or [])

    def details(self) -> dict[str, Any]:
        """Return the Status ``details`` object."""
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [cause.as_dict() for cause in self.causes]
        return details


class BadRequest(ApiError):
    """The request itself is malformed (unparseable YAML, too large, wrong shape)."""

    code = 400
    reason = "BadRequest"


class Invalid(ApiError):
    """An object failed validation or admission; ``causes`` name each field."""

    code = 400
    reason = "Invalid"


class Unauthorized(ApiError):
    """No (valid) credentials."""

    code = 401
    reason = "Unauthorized"


class Forbidden(ApiError):
    """The caller may not do this."""

    code = 403
    reason = "Forbidden"


class NotFound(ApiError):
    """The object does not exist (or is not visible to the caller)."""

    code = 404
    reason = "NotFound"


class AlreadyExists(ApiError):
    """Create of an object that exists."""

    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    """A stale resourceVersion or an operation that the object's state does not allow."""

    code = 409
    reason = "Conflict"


class TooLarge(ApiError):
    """The request asks for more than a configured bound (the bound is named in the message)."""

    code = 413
    reason = "RequestEntityTooLarge"


class TooManyRequests(ApiError):
    """Throttled: retry after ``retry_after`` seconds (the ``Retry-After`` header)."""

    code = 429
    reason = "TooManyRequests"

    def __init__(self, message: str, *, retry_after: int = 1, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServiceUnavailable(ApiError):
    """The server cannot answer now."""

    code = 503
    reason = "ServiceUnavailable"


def invalid(kind: str, group: str, name: str, errors: Errors) -> Invalid:
    """Return the Kubernetes-style ``<Kind>.<group> "<name>" is invalid: ...`` error for the causes."""
    qualified = f"{kind}.{group}" if group else kind
    joined = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in errors.causes)
    if len(errors.causes) > 1:
        joined = f"[{joined}]"
    return Invalid(
        f'{qualified} "{name}" is invalid: {joined}', kind=kind, name=name, group=group, causes=errors.causes
    )


def not_found(resource: str, name: str, kind: str = "", group: str = "") -> NotFound:
    """Return ``<resource> "<name>" not found`` (e.g. ``jobs.batch.volcano.sh "x" not found``)."""
    return NotFound(f'{resource} "{name}" not found', kind=kind or resource, name=name, group=group)
