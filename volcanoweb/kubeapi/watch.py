"""``?watch=1``: a stream of ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": ...}`` lines.

The stream compares snapshots of the watched objects (scoped and filtered like a list) every
:data:`POLL_SECONDS`, so it sees every writer (services, controllers, the scheduler's bulk updates)
in both modes without a change feed: the database is the one source of truth. See
docs/adr/0013-kubernetes-api.md for how resourceVersions relate to this.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from asgiref.sync import sync_to_async

from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.kubeapi import query
from volcanoweb.kubeapi.registry import KubeResource

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


class Differ:
    """Turns successive snapshots ({key: object}) into watch event lines."""

    def __init__(self, resource: KubeResource, *, as_table: bool, bookmarks: bool) -> None:
        self.resource = resource
        self.as_table = as_table
        self.bookmarks = bookmarks
        self.state: dict[str, dict[str, Any]] = {}
        self.prints: dict[str, str] = {}
        self.first = True
        self.last_bookmark = time.monotonic()

    def _emit(self, kind: str, obj: dict[str, Any]) -> bytes:
        line = _line(kind, obj, self.resource, self.as_table, self.first)
        self.first = False
        return line

    def start(self, state: dict[str, dict[str, Any]], *, replay: bool) -> list[bytes]:
        """Take the first snapshot; with ``replay`` every object is an ADDED event."""
        self.state = state
        self.prints = {key: _fingerprint(obj) for key, obj in state.items()}
        lines = [self._emit("ADDED", obj) for obj in state.values()] if replay else []
        if self.bookmarks:
            lines.append(_line("BOOKMARK", _bookmark(self.resource), self.resource, self.as_table, True))
        self.last_bookmark = time.monotonic()
        return lines

    def step(self, current: dict[str, dict[str, Any]]) -> list[bytes]:
        """Compare the next snapshot with the previous one."""
        lines = []
        for key, obj in current.items():
            mark = _fingerprint(obj)
            if key not in self.prints:
                lines.append(self._emit("ADDED", obj))
            elif self.prints[key] != mark:
                lines.append(self._emit("MODIFIED", obj))
            self.prints[key] = mark
        for key in [k for k in self.prints if k not in current]:
            lines.append(self._emit("DELETED", self.state.get(key) or {"metadata": {"name": key}}))
            del self.prints[key]
        self.state = current
        if self.bookmarks and time.monotonic() - self.last_bookmark >= BOOKMARK_SECONDS:
            lines.append(_line("BOOKMARK", _bookmark(self.resource), self.resource, self.as_table, True))
            self.last_bookmark = time.monotonic()
        return lines


async def events(
    snapshot: Callable[[], dict[str, dict[str, Any]]],
    *,
    resource: KubeResource,
    replay: bool,
    timeout: int,
    bookmarks: bool,
    as_table: bool,
) -> AsyncIterator[bytes]:
    """Yield watch event lines until ``timeout`` seconds have passed (ASGI: the client may disconnect earlier)."""
    read = sync_to_async(snapshot, thread_sensitive=True)
    deadline = time.monotonic() + timeout
    differ = Differ(resource, as_table=as_table, bookmarks=bookmarks)
    for line in differ.start(await read(), replay=replay):
        yield line
    while time.monotonic() < deadline:
        await asyncio.sleep(min(POLL_SECONDS, max(deadline - time.monotonic(), 0)))
        for line in differ.step(await read()):
            yield line


def events_sync(
    snapshot: Callable[[], dict[str, dict[str, Any]]],
    *,
    resource: KubeResource,
    replay: bool,
    timeout: int,
    bookmarks: bool,
    as_table: bool,
) -> Iterator[bytes]:
    """The same stream for WSGI servers (one thread per watch)."""
    deadline = time.monotonic() + timeout
    differ = Differ(resource, as_table=as_table, bookmarks=bookmarks)
    yield from differ.start(snapshot(), replay=replay)
    while time.monotonic() < deadline:
        time.sleep(min(POLL_SECONDS, max(deadline - time.monotonic(), 0)))
        yield from differ.step(snapshot())
