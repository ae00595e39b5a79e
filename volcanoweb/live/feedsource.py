"""The live channel's object changes, read from the change log (ADR 0024): what a change is for a browser.

A change of the log becomes the small message pages react to, ``{"kind": "job", "id": "ns/name",
"action": ..., "phase": ...}``, and its audience: the tenant of a namespaced object (platform admins see
every tenant's), everyone for the cluster kinds (nodes, priority classes, the scheduler configuration) and
public queues, the owner and allowed tenants of a private queue. Both are computed once per change and
process and kept on the change. Kinds that are not rows of the log (scheduling cycles) still come over
the channel layer (``live.broadcast``).
"""

from __future__ import annotations

import threading
from typing import Any

from volcanoweb.feed import log, tables
from volcanoweb.feed.log import Change
from volcanoweb.tenancy.access import queue_readers

#: The log's kinds → the live message kind (``data-live`` in the templates).
KINDS = {
    "jobs": "job",
    "podgroups": "podgroup",
    "pods": "pod",
    "queues": "queue",
    "cronjobs": "cronjob",
    "jobflows": "jobflow",
    "jobtemplates": "jobtemplate",
    "commands": "command",
    "priorityclasses": "priorityclass",
    "hypernodes": "hypernode",
    "events": "event",
    "namespaces": "namespace",
    "nodes": "node",
    "schedulerconfigurations": "schedulerconfiguration",
}
#: Live kinds whose messages come from the log only (``live.broadcast`` does not send them).
LOG_KINDS = frozenset(KINDS.values())
ACTIONS = {log.ADDED: "create", log.MODIFIED: "update", log.DELETED: "delete"}
#: Audience: None = everyone; a frozenset of tenant ids (empty: platform admins only).
Audience = frozenset[int] | None

_queue_readers: dict[int, Audience] = {}
_queue_lock = threading.Lock()


def needs_database(change: Change) -> bool:
    """True when the audience of the change is not in its row (a queue's allowed tenants)."""
    return change.kind == "queues" and "live" not in change.cache


def _queue_audience(change: Change) -> Audience:
    row = change.data
    obj_id = int(row.get("id") or 0)
    if change.type == log.DELETED:
        with _queue_lock:
            known = _queue_readers.pop(obj_id, ...)
        if known is not ...:
            return known
        owner = row.get("tenant_id")
        return frozenset({owner}) if owner else frozenset()
    readers = queue_readers(log.instance("queues", row))  # owner and allowed tenants (None: public)
    with _queue_lock:
        _queue_readers[obj_id] = readers
    return readers


#: The columns of a pod that pages show (and the eviction mark): the cluster's status-only echoes of a running
#: pod (restarts, timestamps) would otherwise reach every socket at scale.
POD_SHOWN = ("phase", "node_name", "deletion_timestamp")


def _shown_change(change: Change) -> bool:
    if change.kind != "pods" or change.type != log.MODIFIED or change.prev is None:
        return True
    before, after = change.prev, change.data
    if any(before.get(column) != after.get(column) for column in POD_SHOWN):
        return True
    return _evicted(before) != _evicted(after)


def _evicted(row: dict[str, Any]) -> bool:
    status = row.get("status")
    return isinstance(status, dict) and "evictedBy" in status


def message(change: Change) -> tuple[dict[str, Any], Audience] | None:
    """The live message of a change and its audience (None for kinds pages do not show); sync for queues."""
    cached = change.cache.get("live", ...)
    if cached is not ...:
        return cached  # type: ignore[no-any-return]
    kind = KINDS.get(change.kind)
    if kind is None or not _shown_change(change):
        change.cache["live"] = None
        return None
    row = change.data
    name = change.name or str(row.get("name") or "")
    ident = f"{change.namespace}/{name}" if change.namespace else name
    payload: dict[str, Any] = {"kind": kind, "id": ident, "action": ACTIONS[change.type], "rev": change.rev}
    phase = row.get("phase") or row.get("state")
    if isinstance(phase, str):
        payload["phase"] = phase
    if row.get("deletion_timestamp"):
        payload["terminating"] = True
    if _evicted(row):
        payload["evicted"] = True  # a pod a cycle evicted (preempt, reclaim, shuffle)
    audience: Audience
    if change.kind in tables.EVERYONE:
        audience = None
    elif change.kind == "queues":
        audience = _queue_audience(change)
    else:
        tenant = row.get("tenant_id")
        audience = frozenset({tenant}) if tenant else frozenset()
    result = (payload, audience)
    change.cache["live"] = result
    return result


def prepare(changes: list[Change]) -> None:
    """Compute the messages that need the database (run in a thread, before the loop reads them)."""
    for change in changes:
        if needs_database(change):
            message(change)


def visible(audience: Audience, admin: bool, tenants: frozenset[int]) -> bool:
    """Whether a socket of a platform admin (or of members of ``tenants``) may get a message."""
    return admin or audience is None or not audience.isdisjoint(tenants)
