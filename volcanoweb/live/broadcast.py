"""Publish small change messages to WebSocket clients; only services call this.

A message is ``{"kind": ..., "id": ..., **fields}``: the kind of object
(job, pod, podgroup, queue, node, cycle...), its key, and a few fields such as
the phase or counters. Clients fetch details over REST.

Messages are sent after the surrounding transaction commits (never for a
rolled-back change), and within one transaction repeated messages about the
same object are merged, last write winning. Consumers coalesce further over a
short window so that a burst does not flood a browser.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from volcanoweb.live import groups

log = logging.getLogger(__name__)
_local = threading.local()


def _pending() -> dict[tuple[str, str, str], dict[str, Any]]:
    if not hasattr(_local, "pending"):
        _local.pending = {}
    pending: dict[tuple[str, str, str], dict[str, Any]] = _local.pending
    return pending


def publish(kind: str, key: str, *, tenant_id: int | None = None, **fields: Any) -> None:
    """Queue a message about one object for delivery on commit.

    ``tenant_id`` scopes it to that tenant's members (and platform admins);
    ``None`` sends it to every connected user (cluster-wide objects only).
    """
    group = groups.tenant_group(tenant_id) if tenant_id is not None else groups.cluster_group()
    payload = {"kind": kind, "id": key, **fields}
    pending = _pending()
    connection = transaction.get_connection()
    if any(entry[1] is flush for entry in connection.run_on_commit):
        pending[(group, kind, key)] = payload
        return
    # No flush is registered for the current transaction: whatever is pending
    # belongs to a transaction that rolled back, and must never be sent.
    pending.clear()
    pending[(group, kind, key)] = payload
    transaction.on_commit(flush)


def flush() -> None:
    """Send every queued message now (called on commit)."""
    pending = _pending()
    if not pending:
        return
    items = list(pending.items())
    pending.clear()
    send_many(((group, payload) for (group, _kind, _key), payload in items))


def send_many(messages: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Send (group, payload) pairs through the channel layer; failures are logged, never raised."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        for group, payload in messages:
            async_to_sync(layer.group_send)(group, {"type": "live.message", "payload": payload})
            if group.startswith("tenant."):
                async_to_sync(layer.group_send)(groups.admin_group(), {"type": "live.message", "payload": payload})
    except Exception:  # a broadcast must never break the write that caused it
        log.exception("live broadcast failed")


def discard_pending() -> None:
    """Drop queued messages (used when a transaction rolls back in long-running loops)."""
    _pending().clear()
