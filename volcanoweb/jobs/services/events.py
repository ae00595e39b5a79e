"""Writes for Events: the runtime's observations about objects (no audit entry)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from volcanoweb.jobs.models import Event


def record_event(
    involved: Any, kind: str, type_: str, reason: str, message: str, *, source: str = "volcanoweb"
) -> Event:
    """Record an event about an object; a repeat of the last (reason, message) about the same object bumps its
    count instead (the same uid, when the object has one: a job made again under a deleted job's name gets events of
    its own, not the old job's counts).

    Called by the runtime's services inside their transactions; no audit entry (events are observations).
    """
    namespace = getattr(involved, "namespace", "") or ""
    uid = getattr(involved, "uid", None)
    now = timezone.now()
    last = (
        Event.objects.select_for_update(no_key=True)
        .filter(
            involved_kind=kind,
            involved_namespace=namespace,
            involved_name=involved.name,
            reason=reason,
            message=message,
        )
        .filter(**({"involved_uid": uid} if uid else {}))
        .order_by("-last_timestamp")
        .first()
    )
    if last is not None:
        last.count += 1
        last.last_timestamp = now
        last.save(update_fields=["count", "last_timestamp"])
        return last
    return Event.objects.create(
        namespace=namespace,
        tenant_id=getattr(involved, "tenant_id", None),
        involved_kind=kind,
        involved_namespace=namespace,
        involved_name=involved.name,
        involved_uid=uid,
        type=type_,
        reason=reason,
        message=message,
        source=source,
        first_timestamp=now,
        last_timestamp=now,
    )
