"""``?watch=1``: a stream of ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": ...}`` lines.

The stream compares snapshots of the watched objects (scoped and filtered like a list) every
:data:`POLL_SECONDS`, so it sees every writer (services, controllers, the scheduler's bulk updates)
in both modes without a change feed: the database is the one source of truth. See
docs/adr/0012-kubernetes-api.md for how resourceVersions relate to this.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from volcanoweb.kubeapi import query
from volcanoweb.kubeapi.registry import KubeResource
from volcanoweb.manifests.errors import BadRequest, Cause

POLL_SECONDS = 0.5
BOOKMARK_SECONDS = 10.0
DEFAULT_TIMEOUT = 1800
MAX_TIMEOUT = 3600
MAX_OBJECTS = 5000


def timeout_seconds(value: str | None) -> int:
    """Return the watch's duration (``timeoutSeconds``, default 30 minutes, at most one hour)."""
    if value in (None, ""):
        return DEFAULT_TIMEOUT
    try:
        seconds = int(value)
    except ValueError:
        raise BadRequest(
            "timeoutSeconds must be an integer", causes=[Cause("timeoutSeconds", f"Invalid value: {value!r}")]
        ) from None
    if seconds < 0:
        raise BadRequest("timeoutSeconds must not be negative", causes=[Cause("timeoutSeconds", "Invalid value")])
    return min(seconds, MAX_TIMEOUT)


def _line(kind: str, obj: dict[str, Any], resource: KubeResource, as_table: bool, first: bool) -> bytes:
    if as_table and kind != "BOOKMARK":
        obj = query.table(
            resource, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")}, headers=first
        )
    return (json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n").encode()


def _bookmark(resource: KubeResource) -> dict[str, Any]:
    return {
        "apiVersion": resource.info.api_version,
        "kind": resource.info.kind,
        "metadata": {"resourceVersion": query.list_version(), "annotations": {"k8s.io/initial-events-end": "true"}},
    }


def _fingerprint(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


def _snapshot_in_thread(snapshot: Callable[[], dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    close_old_connections()
    return snapshot()


async def events(
    snapshot: Callable[[], dict[str, dict[str, Any]]],
    *,
    resource: KubeResource,
    replay: bool,
    timeout: int,
    bookmarks: bool,
    as_table: bool,
) -> AsyncIterator[bytes]:
    """Yield watch event lines until ``timeout`` seconds have passed (the client may disconnect earlier)."""
    read = sync_to_async(_snapshot_in_thread, thread_sensitive=True)
    deadline = time.monotonic() + timeout
    state = await read(snapshot)
    prints = {key: _fingerprint(obj) for key, obj in state.items()}
    first = True
    if replay:
        for obj in state.values():
            yield _line("ADDED", obj, resource, as_table, first)
            first = False
    if bookmarks:
        yield _line("BOOKMARK", _bookmark(resource), resource, as_table, first)
    last_bookmark = time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(min(POLL_SECONDS, max(deadline - time.monotonic(), 0)))
        current = await read(snapshot)
        for key, obj in current.items():
            mark = _fingerprint(obj)
            if key not in prints:
                yield _line("ADDED", obj, resource, as_table, first)
                first = False
            elif prints[key] != mark:
                yield _line("MODIFIED", obj, resource, as_table, first)
                first = False
            prints[key] = mark
        for key in [k for k in prints if k not in current]:
            yield _line("DELETED", state.get(key) or {"metadata": {"name": key}}, resource, as_table, first)
            first = False
            del prints[key]
        state = current
        if bookmarks and time.monotonic() - last_bookmark >= BOOKMARK_SECONDS:
            yield _line("BOOKMARK", _bookmark(resource), resource, as_table, first)
            last_bookmark = time.monotonic()
