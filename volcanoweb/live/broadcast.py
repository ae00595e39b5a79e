"""Publish small change messages to WebSocket clients; only services call this.

A message is ``{"kind": ..., "id": ..., **fields}``: the kind of object
(job, pod, podgroup, queue, node, cycle...), its key, and a few fields such as
the phase or counters. Clients fetch details over REST.

Messages are sent after the surrounding transaction commits (never for a
rolled-back change). Within one transaction repeated messages about the same
object are merged, last write winning; each process then merges what it
committed per group over :data:`PUBLISH_INTERVAL` into one channel message
(:class:`Outbox`), and each consumer keeps a bounded queue per client
(``live.consumers``). docs/adr/0019-live-updates-that-keep-up.md.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

from volcanoweb.core.stageprof import stage
from volcanoweb.live import groups
from volcanoweb.live.feedsource import LOG_KINDS

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


def publish(
    kind: str, key: str, *, tenant_id: int | None = None, tenant_ids: Iterable[int] | None = None, **fields: Any
) -> None:
    """Queue a message about one object for delivery on commit, to :func:`audience` (``kind`` decides
    whether an object without a tenant is everyone's: see :data:`CLUSTER_KINDS`).

    The kinds that are rows of the change log (jobs, pods, queues, nodes...: ``live.feedsource.LOG_KINDS``)
    reach the sockets from the log; only the others (scheduling cycles) go over the channel layer."""
    if kind in LOG_KINDS:
        return
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


@stage("broadcast")
def flush() -> None:
    """Hand every queued message to this process's outbox now (called on commit)."""
    pending = _pending()
    if not pending:
        return
    items = list(pending.items())
    pending.clear()
    send_many(((group, payload) for (group, _kind, _key), payload in items))


def send_many(messages: Iterable[tuple[str, dict[str, Any]]], committed: float | None = None) -> None:
    """Send (group, payload) pairs committed at ``committed`` (epoch seconds, default now); never raises.

    A tenant's message is also for the platform admins' group. The pairs go to this process's
    :class:`Outbox`, which merges them per group and per object with whatever else this process committed
    in the last :data:`PUBLISH_INTERVAL`, and sends each group **one** ``live.batch`` channel message (up to
    :data:`BATCH_SIZE` payloads) per interval: a burst of commits costs a few group sends, not one per
    commit, and the committing thread never waits for the channel layer. With a Redis layer the sends run
    on this process's long-lived broadcast loop (:func:`_loop`), which reuses the layer's connections; the
    in-memory layer (embedded mode, tests) is sent to at once from the caller, whose loop owns its queues.
    """
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        outbox = _outbox()
        first = outbox.add(messages, time.time() if committed is None else committed)
        if isinstance(layer, InMemoryChannelLayer):
            batch = outbox.take()

            async def send_all() -> None:
                for group, message in batch:
                    await layer.group_send(group, message)

            if batch:
                async_to_sync(send_all)()
        elif first:
            loop = _loop()
            loop.call_soon_threadsafe(outbox.wake, loop)
    except Exception:  # a broadcast must never break the write that caused it
        log.exception("live broadcast failed")


#: Seconds over which one process's committed changes are merged into one channel message per group. The
#: first change after a quiet interval goes out at once; under load a group gets at most one message per
#: interval from each process (a commit waits at most this long before its message leaves).
PUBLISH_INTERVAL = 0.2
#: Most payloads in one ``live.batch`` channel message.
BATCH_SIZE = 500
#: Seconds a flush at process exit, or a revocation, waits for the channel layer.
SEND_TIMEOUT = 10.0


class Outbox:
    """This process's committed changes not yet sent: per group, the latest payload per object.

    Every channel message it makes is ``{"type": "live.batch", "payloads": [...], "group": g, "src": s,
    "seq": n, "t0": t, "changes": k}``: ``t0`` is the commit time (epoch seconds) of the oldest change in it
    (what the consumer reports to the client, so that the delay from commit to screen can be measured),
    ``changes`` how many changes were merged into its payloads, and ``src``/``seq`` number this process's
    messages per group without gaps, so that a consumer can tell that the channel layer lost one (its
    ``capacity`` or ``expiry``) and ask its client to refetch instead of silently missing a change.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.src = uuid.uuid4().hex[:12]
        self.groups: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self.oldest: dict[str, float] = {}
        self.changes: dict[str, int] = {}
        self.seq: dict[str, int] = {}
        self.next_send = 0.0
        self.pump: asyncio.Future[None] | None = None
        self.event: asyncio.Event | None = None

    def add(self, messages: Iterable[tuple[str, dict[str, Any]]], committed: float) -> bool:
        """Merge ``messages`` in; return whether the outbox was empty (the caller then wakes the sender)."""
        with self.lock:
            first = not self.groups
            for group, payload in messages:
                targets = (group, groups.admin_group()) if group.startswith("tenant.") else (group,)
                for target in targets:
                    pending = self.groups.setdefault(target, {})
                    key = (str(payload.get("kind")), str(payload.get("id")))
                    # field by field, newest value first: a later message about the same object (its pod
                    # deleted after an eviction) must not drop what an earlier one said (``evicted``)
                    pending[key] = {**pending[key], **payload} if key in pending else dict(payload)
                    self.changes[target] = self.changes.get(target, 0) + 1
                    if committed < self.oldest.get(target, committed + 1):
                        self.oldest[target] = committed
            return first and bool(self.groups)

    def take(self) -> list[tuple[str, dict[str, Any]]]:
        """Return the channel messages for everything pending (one per group and :data:`BATCH_SIZE`), and empty."""
        with self.lock:
            pending, oldest, changes = self.groups, self.oldest, self.changes
            self.groups, self.oldest, self.changes = {}, {}, {}
            out: list[tuple[str, dict[str, Any]]] = []
            for group, by_key in pending.items():
                payloads = list(by_key.values())
                for start in range(0, len(payloads), BATCH_SIZE):
                    seq = self.seq.get(group, 0) + 1
                    self.seq[group] = seq
                    chunk = payloads[start : start + BATCH_SIZE]
                    message = {
                        "type": "live.batch",
                        "payloads": chunk,
                        "group": group,
                        "src": self.src,
                        "seq": seq,
                        "t0": oldest[group],
                        "changes": changes[group] if start == 0 else 0,
                    }
                    out.append((group, message))
            return out

    def wake(self, loop: asyncio.AbstractEventLoop) -> None:
        """(In the broadcast loop) start the sender coroutine if needed and tell it that there is work."""
        if self.event is None:
            self.event = asyncio.Event()
        if self.pump is None or self.pump.done():
            self.pump = asyncio.ensure_future(self._run(loop))
        self.event.set()

    async def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self.event is not None
        while True:
            await self.event.wait()
            self.event.clear()
            wait = self.next_send - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)  # what commits meanwhile joins this send
            await self.send_now()
            self.next_send = loop.time() + PUBLISH_INTERVAL

    async def send_now(self) -> None:
        """Send everything pending through the channel layer (failures are logged)."""
        layer = get_channel_layer()
        for group, message in self.take():
            try:
                await layer.group_send(group, message)
            except Exception:  # the next message's sequence number tells the consumers to refetch
                log.exception("live broadcast to %s failed", group)


_outbox_lock = threading.Lock()
_outboxes: dict[int, Outbox] = {}


def _outbox() -> Outbox:
    """Return this process's outbox (a new one after a fork)."""
    pid = os.getpid()
    with _outbox_lock:
        if pid not in _outboxes:
            _outboxes.clear()
            _outboxes[pid] = Outbox()
        return _outboxes[pid]


@atexit.register
def _drain_at_exit() -> None:
    """Send what this process committed in its last interval before it exits (management commands)."""
    outbox = _outboxes.get(os.getpid())
    if outbox is None or not outbox.groups or _broadcast_loop is None or _broadcast_loop[1].is_closed():
        return
    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(outbox.send_now(), _broadcast_loop[1]).result(SEND_TIMEOUT)


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
