"""Live messages for committed writes of kinds that are no rows of the change log.

A service that changes an object calls :func:`changed` inside its transaction, next to its audit entry
(``audit.services.record`` only records). The browsers learn of changes to the log's kinds from the change
log itself (``live.feedsource``), and the controllers from their informer (``runtime.informer``), whoever
wrote: this module only publishes, on commit, the kinds the log does not follow (``live.broadcast``).

Nothing happens for a transaction that rolls back: :func:`discard` forgets the messages it queued (dry
runs, failed applies).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from volcanoweb.live import broadcast
from volcanoweb.live.feedsource import LOG_KINDS

log = logging.getLogger(__name__)


def changed(kind: str, obj: Any, action: str) -> None:
    """Announce, once the transaction commits, that ``obj`` (of ``kind``) was created/updated/deleted/..."""
    _publish(kind, obj, action)


def changed_many(kind: str, objs: Sequence[Any], action: str) -> None:
    """:func:`changed` for many objects of one kind (a bulk apply)."""
    if kind.lower() in LOG_KINDS:
        return
    for obj in objs:
        _publish(kind, obj, action)


def _publish(kind: str, obj: Any, action: str) -> None:
    if kind.lower() in LOG_KINDS:
        return  # a row of the change log: the sockets read it there (live.feedsource)
    namespace = getattr(obj, "namespace", "") or ""
    name = getattr(obj, "name", "") or str(getattr(obj, "version", ""))
    key = f"{namespace}/{name}" if namespace else name
    fields: dict[str, Any] = {"action": action}
    phase = getattr(obj, "phase", None) or getattr(obj, "state", None)
    if isinstance(phase, str):
        fields["phase"] = phase
    try:
        tenant_id = getattr(obj, "tenant_id", None) if namespace else None
        broadcast.publish(kind.lower(), key, tenant_id=tenant_id, **fields)
    except Exception:  # a broadcast must never break the write that caused it
        log.exception("live broadcast failed for %s %s", kind, key)


def discard() -> None:
    """Forget the messages queued by a transaction that was rolled back (dry runs, failed applies)."""
    broadcast.discard_pending()
