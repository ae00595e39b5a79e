"""Change notification: the one place where a committed write becomes live messages and controller work.

A service that changes an object calls :func:`changed` inside its transaction, next to its audit entry
(``audit.services.record`` only records). Once the transaction commits:

* the controllers react: the listeners registered with :func:`listen` are called (the runtime registers
  ``runtime.hooks.on_change`` when it is ready: a job to sync, bare pods to group, queues to resync,
  enqueued in-process when Celery runs eagerly), so this module never imports the controllers;
* the browsers learn of it from the change log (``live.feedsource``); only kinds that are no rows of the
  log go over ``live.broadcast``.

Nothing happens for a transaction that rolls back: :func:`discard` forgets the messages it queued (dry
runs, failed applies). Messages that need no controller work (a pod bound or evicted by a cycle, a
node's condition, a cycle summary) are published with ``live.broadcast.publish`` directly by the
controllers that write those rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from volcanoweb.live import broadcast
from volcanoweb.live.feedsource import LOG_KINDS

log = logging.getLogger(__name__)
#: (kind, obj, action) and (kind, objs, action) listeners called on commit (registered at app start-up).
_listeners: list[Any] = []
_many_listeners: list[Any] = []


def listen(one: Any, many: Any) -> None:
    """Register the reactions to committed changes (the runtime's hooks; idempotent)."""
    if one not in _listeners:
        _listeners.append(one)
    if many not in _many_listeners:
        _many_listeners.append(many)


def changed(kind: str, obj: Any, action: str) -> None:
    """Announce, once the transaction commits, that ``obj`` (of ``kind``) was created/updated/deleted/..."""
    transaction.on_commit(lambda: _react(kind, obj, action))
    _publish(kind, obj, action)


def changed_many(kind: str, objs: Sequence[Any], action: str) -> None:
    """:func:`changed` for many objects of one kind (a bulk apply): one on-commit reaction for all of them."""
    items = list(objs)
    if not items:
        return
    transaction.on_commit(lambda: _react_many(kind, items, action))
    for obj in items:
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


def _react(kind: str, obj: Any, action: str) -> None:
    for listener in list(_listeners):
        listener(kind, obj, action)


def _react_many(kind: str, objs: list[Any], action: str) -> None:
    for listener in list(_many_listeners):
        listener(kind, objs, action)
