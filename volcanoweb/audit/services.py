"""Audit entries and the post-commit change hook; called by every other app's services."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from volcanoweb.audit.models import AuditEntry
from volcanoweb.live import broadcast

log = logging.getLogger(__name__)


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


def _notify_runtime(kind: str, obj: Any, action: str) -> None:
    """After commit, let the runtime controllers react to the change."""
    from volcanoweb.runtime import hooks  # the runtime imports the services that call this module

    transaction.on_commit(lambda: hooks.on_change(kind, obj, action))


def on_change(kind: str, obj: Any, action: str) -> None:
    """Hook point for live updates: announce a change to ``obj`` once the transaction commits.

    Notifies the runtime controllers and calls ``live.broadcast.publish`` (which delivers on
    commit and merges repeats). Cluster-scoped kinds (queues, priority classes, the scheduler
    config) go to everyone, queues to the tenants that may read them; namespaced ones only to their tenant.
    """
    _notify_runtime(kind, obj, action)
    namespace = getattr(obj, "namespace", "") or ""
    name = getattr(obj, "name", "") or str(getattr(obj, "version", ""))
    key = f"{namespace}/{name}" if namespace else name
    fields: dict[str, Any] = {"action": action}
    phase = getattr(obj, "phase", None) or getattr(obj, "state", None)
    if isinstance(phase, str):
        fields["phase"] = phase
    try:
        if kind == "Queue":
            broadcast.publish_queue(obj, **fields)  # only to the tenants that may read it (or everyone if public)
        else:
            tenant_id = getattr(obj, "tenant_id", None) if namespace else None
            broadcast.publish(kind.lower(), key, tenant_id=tenant_id, **fields)
    except Exception:  # a broadcast must never break the write that caused it
        log.exception("live broadcast failed for %s %s", kind, key)


def discard_changes() -> None:
    """Forget announcements queued by a transaction that was rolled back (dry runs, failed applies)."""
    broadcast.discard_pending()
