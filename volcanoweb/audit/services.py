"""Audit entries, written by every other app's services inside their transactions (recording only).

Live messages and controller work for a change are ``live.notify.changed``'s."""

from __future__ import annotations

from typing import Any

from volcanoweb.audit.models import AuditEntry


def record(
    actor: Any,
    action: str,
    kind: str,
    object_key: str,
    *,
    tenant: Any = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    source: str = "api",
    message: str = "",
) -> AuditEntry:
    """Write one audit entry (call inside the service's transaction so it commits or rolls back with it)."""
    is_user = actor is not None and getattr(actor, "pk", None) is not None
    return AuditEntry.objects.create(
        actor=actor if is_user else None,
        actor_name=getattr(actor, "username", "") or "system",
        tenant=tenant,
        action=action,
        kind=kind,
        object_key=object_key,
        before=before,
        after=after,
        source=source,
        message=message,
    )
