"""Audit entries, written by every other app's services inside their transactions (recording only).

Live messages and controller work for a change are ``live.notify.changed``'s."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypedDict, Unpack

from volcanoweb.audit.models import AuditEntry

#: Where the current request came from when it is not the API (``dashboard``): set by the dashboard's middleware,
#: so the services' default source ``api`` reads as what it was without each one being told.
_SOURCE: ContextVar[str | None] = ContextVar("audit_source", default=None)


@contextlib.contextmanager
def requests_from(source: str) -> Iterator[None]:
    """Within the block, entries recorded with the default source (``api``) get ``source`` instead."""
    token = _SOURCE.set(source)
    try:
        yield
    finally:
        _SOURCE.reset(token)


class EntryDetails(TypedDict, total=False):
    """The optional parts of an audit entry (keyword arguments of :func:`record` and :func:`entry`)."""

    #: the tenant the object belongs to (None: a platform-wide object)
    tenant: Any
    #: the object as rendered before and after the change (None: it did not exist)
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    #: where the request came from; ``api`` (the default) reads as :func:`requests_from`'s source
    source: str
    message: str


def record(actor: Any, action: str, kind: str, object_key: str, **details: Unpack[EntryDetails]) -> AuditEntry:
    """Write one audit entry (call inside the service's transaction so it commits or rolls back with it)."""
    entry_ = entry(actor, action, kind, object_key, **details)
    entry_.save(force_insert=True)
    return entry_


def entry(actor: Any, action: str, kind: str, object_key: str, **details: Unpack[EntryDetails]) -> AuditEntry:
    """Return an unsaved audit entry, as :func:`record` writes it (for :func:`record_many`)."""
    is_user = actor is not None and getattr(actor, "pk", None) is not None
    source = details.get("source", "api")
    if source == "api":
        source = _SOURCE.get() or source
    return AuditEntry(
        actor=actor if is_user else None,
        actor_name=getattr(actor, "username", "") or "system",
        tenant=details.get("tenant"),
        action=action,
        kind=kind,
        object_key=object_key,
        before=details.get("before"),
        after=details.get("after"),
        source=source,
        message=details.get("message", ""),
    )


def record_many(entries: Sequence[AuditEntry]) -> list[AuditEntry]:
    """Write audit entries made by :func:`entry` in one insert, in order (inside the service's transaction)."""
    return AuditEntry.objects.bulk_create(list(entries)) if entries else []
