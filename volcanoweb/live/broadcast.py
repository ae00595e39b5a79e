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

import asyncio
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

from volcanoweb.live import groups

log = logging.getLogger(__name__)
_local = threading.local()


def _pending() -> dict[tuple[str, str, str], dict[str, Any]]:
    if not hasattr(_local, "pending"):
        _local.pending = {}
    pending: dict[tuple[str, str, str], dict[str, Any]] = _local.pending
    return pending


#: Kinds that every signed-in user may read (the REST API lists them unscoped): only these, and public queues,
#: may go to the shared cluster group. A namespaced object without a tenant goes to the platform admins only.
CLUSTER_KINDS = frozenset({"node", "cycle", "priorityclass", "schedulerconfiguration"})


def audience(kind: str, *, tenant_id: int | None = None, tenant_ids: Iterable[int] | None = None) -> list[str]:
    """Return the groups a message about one object goes to (platform admins get every tenant's too).

    ``tenant_ids`` (queues: owner and allowed tenants, see ``tenancy.access.queue_readers``) wins over
    ``tenant_id``; an empty collection means the platform admins only.
    """
    if tenant_ids is not None:
        return [groups.tenant_group(t) for t in sorted(set(tenant_ids))] or [groups.admin_group()]
    if tenant_id is not None:
        return [groups.tenant_group(tenant_id)]
    if kind in CLUSTER_KINDS:
        return [groups.cluster_group()]
    return [groups.admin_group()]


def publish_queue(queue: Any, **fields: Any) -> None:
    """Queue a message about a Queue for its readers only: everyone for a public queue, else its tenants."""
    from volcanoweb.tenancy.access import queue_readers

    readers = queue_readers(queue)
    if readers is None:
        _queue_message([groups.cluster_group()], "queue", queue.name, fields)
    else:
        _queue_message(audience("queue", tenant_ids=readers), "queue", queue.name, fields)


def publish(
    kind: str, key: str, *, tenant_id: int | None = None, tenant_ids: Iterable[int] | None = None, **fields: Any
) -> None:
    """Queue a message about one object for delivery on commit, to :func:`audience` (``kind`` decides
    whether an object without a tenant is everyone's: see :data:`CLUSTER_KINDS`)."""
    _queue_message(audience(kind, tenant_id=tenant_id, tenant_ids=tenant_ids), kind, key, fields)


def _queue_message(targets: list[str], kind: str, key: str, fields: dict[str, Any]) -> None:
    payload = {"kind": kind, "id": key, **fields}
    pending = _pending()
    connection = transaction.get_connection()
    if any(entry[1] is flush for entry in connection.run_on_commit):
        for group in targets:
            pending[(group, kind, key)] = payload
        return
    # No flush is registered for the current transaction: whatever is pending
    # belongs to a transaction that rolled back, and must never be sent.
    pending.clear()
    for group in targets:
        pending[(group, kind, key)] = payload
    transaction.on_commit(flush)  # at once outside a transaction


def flush() -> None:
    """Send every queued message now (called on commit)."""
    pending = _pending()
    if not pending:
        return
    items = list(pending.items())
    pending.clear()
    send_many(((group, payload) for (group, _kind, _key), payload in items))


def send_many(messages: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Send (group, payload) pairs through the channel layer; failures are logged, never raised.

    A tenant's message is also sent to the platform admins' group. The payloads of one group go out
    as one ``live.batch`` channel message (up to :data:`BATCH_SIZE` payloads; a single payload as
    ``live.message``), so a cycle that binds 1,000 pods costs a few group sends, not 2,000. All of it is
    sent from one coroutine; with a Redis layer it runs on this process's long-lived broadcast loop
    (:func:`_loop`), so the layer's connection pool is reused (``async_to_sync`` per message would start
    an event loop, a thread and a Redis connection for every call, ~5 ms each).
    """
    layer = get_channel_layer()
    if layer is None:
        return
    by_group: dict[str, list[dict[str, Any]]] = {}
    for group, payload in messages:
        by_group.setdefault(group, []).append(payload)
        if group.startswith("tenant."):
            by_group.setdefault(groups.admin_group(), []).append(payload)
    if not by_group:
        return
    batch: list[tuple[str, dict[str, Any]]] = []
    for group, payloads in by_group.items():
        for start in range(0, len(payloads), BATCH_SIZE):
            chunk = payloads[start : start + BATCH_SIZE]
            if len(chunk) == 1:
                batch.append((group, {"type": "live.message", "payload": chunk[0]}))
            else:
                batch.append((group, {"type": "live.batch", "payloads": chunk}))

    async def send_all() -> None:
        for group, message in batch:
            await layer.group_send(group, message)

    try:
        if isinstance(layer, InMemoryChannelLayer):
            async_to_sync(send_all)()  # its queues belong to the caller's loop (embedded mode, tests)
        else:
            asyncio.run_coroutine_threadsafe(send_all(), _loop()).result(SEND_TIMEOUT)
    except Exception:  # a broadcast must never break the write that caused it
        log.exception("live broadcast failed")


#: Most payloads in one ``live.batch`` channel message.
BATCH_SIZE = 500
#: Seconds a flush waits for the channel layer before giving up (the write that caused it has committed).
SEND_TIMEOUT = 10.0
_loop_lock = threading.Lock()
_broadcast_loop: tuple[int, asyncio.AbstractEventLoop] | None = None


def _loop() -> asyncio.AbstractEventLoop:
    """Return this process's broadcast event loop, started in a daemon thread on first use (again after a fork)."""
    global _broadcast_loop
    with _loop_lock:
        if _broadcast_loop is None or _broadcast_loop[0] != os.getpid() or _broadcast_loop[1].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="live-broadcast", daemon=True).start()
            _broadcast_loop = (os.getpid(), loop)
        return _broadcast_loop[1]


def pending_snapshot() -> dict[tuple[str, str, str], dict[str, Any]]:
    """Return a copy of the messages queued so far (to restore after a rolled-back savepoint)."""
    return dict(_pending())


def restore_pending(snapshot: dict[tuple[str, str, str], dict[str, Any]]) -> None:
    """Put the queued messages back as they were at ``snapshot`` (what a rolled-back savepoint queued is dropped)."""
    pending = _pending()
    pending.clear()
    pending.update(snapshot)


def discard_pending() -> None:
    """Drop queued messages (used when a transaction rolls back in long-running loops)."""
    _pending().clear()
