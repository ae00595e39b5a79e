"""``?watch=1``: the change log read from a revision, as Kubernetes' watch (ADR 0024).

* ``resourceVersion`` omitted or ``0`` (or ``sendInitialEvents=true``): the current state first, as ADDED
  events read at one revision (a consistent list), then every change after that revision;
  ``resourceVersion=N``: every change after N. Changes come in revision order, one event each, never merged,
  each with the object as of that change.
* Label and field selectors apply per event to the object before and after the change, so an object that
  leaves the selection is a DELETED event for this watch (and one that enters it an ADDED).
* A revision older than the compaction point ends the stream with an ``ERROR`` event carrying a 410
  ``Expired`` Status, as kube-apiserver sends it; a client relists.
* ``allowWatchBookmarks``: a BOOKMARK with the revision the watch has read up to, after the initial state
  (annotated ``k8s.io/initial-events-end``) and then every :data:`BOOKMARK_SECONDS`.

Under ASGI a watch is woken by this process's tailer (:mod:`volcanoweb.feed.tailer`) only when its kind and
namespace changed and reads the tailer's ring; under WSGI (and Django's test client) it polls the log itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection

from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.feed import log
from volcanoweb.feed.log import Change, Expired
from volcanoweb.feed.tailer import tailer, waker
from volcanoweb.kubeapi import lists, query
from volcanoweb.kubeapi.selection import Selection

POLL_SECONDS = 0.2
BOOKMARK_SECONDS = 10.0
DEFAULT_TIMEOUT = 1800
MAX_TIMEOUT = 3600


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


def _dump(kind: str, obj: dict[str, Any]) -> bytes:
    return (json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n").encode()


def expired_line(error: Expired) -> bytes:
    """The ``ERROR`` event kube-apiserver sends when a watch's revision was compacted."""
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error.message,
        "reason": "Expired",
        "code": 410,
    }
    return _dump("ERROR", status)


class Stream:
    """One watch: where it reads from, what it selects and how it prints."""

    def __init__(
        self,
        selection: Selection,
        *,
        since: int | None,
        initial: bool,
        bookmarks: bool,
        as_table: bool,
        timeout: int,
    ) -> None:
        self.selection = selection
        self.since = since
        self.initial = initial
        self.bookmarks = bookmarks
        self.as_table = as_table
        self.timeout = timeout
        self.cursor = 0
        self.first = True
        self.done = False
        self.last_bookmark = time.monotonic()

    # -- printing --------------------------------------------------------------------------------------------

    def line(self, kind: str, obj: dict[str, Any], change: Change | None = None) -> bytes:
        if self.as_table and kind != "BOOKMARK":
            meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            out = _dump(kind, query.table(self.selection.resource, [obj], meta, headers=self.first))
            self.first = False
            return out
        if change is None:
            return _dump(kind, obj)
        key = f"line:{kind}:{id(obj)}"
        cached = change.cache.get(key)
        if cached is None:
            cached = change.cache[key] = _dump(kind, obj)
        return bytes(cached)

    def bookmark(self, *, initial_end: bool = False) -> bytes:
        resource = self.selection.resource
        meta: dict[str, Any] = {"resourceVersion": str(self.cursor)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        self.last_bookmark = time.monotonic()
        return _dump(
            "BOOKMARK", {"apiVersion": resource.info.api_version, "kind": resource.info.kind, "metadata": meta}
        )

    # -- reading (sync: may touch the database) --------------------------------------------------------------

    def start(self) -> list[bytes]:
        """Check the revision and read the initial state; return the first lines."""
        if self.since is not None:
            try:
                log.check(self.since)
            except Expired as error:
                self.done = True
                return [expired_line(error)]
        lines: list[bytes] = []
        if self.initial:
            revision, objects = lists.snapshot(self.selection)
            self.cursor = max(revision, self.since or 0)
            lines = [self.line("ADDED", obj) for obj in objects]
            if self.bookmarks:
                lines.append(self.bookmark(initial_end=True))
        else:
            self.cursor = self.since or 0
        return lines

    def event_lines(self, changes: list[Change]) -> list[bytes]:
        """The event lines of the changes of the watched kind after the cursor (the cursor stays).

        Each change's line for this watch's :meth:`line_key` is kept on the change: the watches of one process
        that decide alike (one caller and selection) convert a change once, whatever cursor each reads from."""
        lines = []
        if self.selection.kind == "queues" and any(c.type == log.ADDED for c in changes):
            self.selection.refresh()
        key = self.line_key()
        for change in changes:
            if change.rev <= self.cursor:
                continue
            line = change.cache.get(key) if key is not None else None
            if line is None:
                event = self.selection.event(change)
                line = self.line(event[0], event[1], change) if event is not None else b""
                if key is not None:
                    change.cache[key] = line
            if line:
                lines.append(line)
        return lines

    def needs_thread(self, changes: list[Change]) -> bool:
        """Whether turning ``changes`` into lines may read the database (a manifest not rendered yet, a Table, the
        queues' visibility), and so must run in a thread rather than on the event loop."""
        key = self.line_key()
        if key is None:
            return True
        return any(
            change.rev > self.cursor and key not in change.cache and not self.selection.rendered(change)
            for change in changes
        )

    def convert(self, changes: list[Change], upto: int) -> list[bytes]:
        """Turn changes of the watched kind after the cursor into event lines; advance the cursor to ``upto``."""
        return self.advance(self.event_lines(changes), upto)

    def advance(self, lines: list[bytes], upto: int) -> list[bytes]:
        """Move the cursor to ``upto`` after ``lines``; add a bookmark when one is due."""
        self.cursor = max(self.cursor, upto)
        if self.bookmarks and time.monotonic() - self.last_bookmark >= BOOKMARK_SECONDS:
            lines = [*lines, self.bookmark()]
        return lines

    def line_key(self) -> str | None:
        """What decides this watch's line for a change (watches of one caller and selection get the same one,
        converted once per change); None when the lines are this watch's own (Table output, which prints its
        headers once per watch; queues, whose visibility the selection learns as it goes)."""
        selection = self.selection
        if self.as_table or selection.kind == "queues":
            return None
        access = selection.access
        decides = (
            selection.resource.info.api_version,
            selection.namespace,
            selection.label_selector,
            repr(selection.terms),
            access.platform_admin,
            sorted(access.roles),
        )
        return f"watch-line:{decides!r}"

    def read_log(self) -> list[bytes]:
        """Read the log itself from the cursor (one batch); a compacted cursor ends the stream with 410."""
        current, compacted = log.head()
        try:
            log.check(self.cursor, compacted)
        except Expired as error:
            self.done = True
            return [expired_line(error)]
        changes = log.changes(self.cursor, [self.selection.kind], upto=current)
        upto = changes[-1].rev if len(changes) == log.BATCH else current
        return self.convert(changes, upto)


def _released(step: Callable[..., list[bytes]]) -> Callable[..., list[bytes]]:
    """A step of an ASGI watch that gives its database connection back when done: a stream lasts up to an hour
    and must not hold one of the server's pooled connections between wakeups."""

    def run(*args: Any) -> list[bytes]:
        try:
            return step(*args)
        finally:
            connection.close()

    return run


def _positioned(feed: Any) -> Callable[[], list[bytes]]:
    def run() -> list[bytes]:
        feed.ensure_position()
        return []

    return run


async def events(stream: Stream) -> AsyncIterator[bytes]:
    """The ASGI stream: woken by the tailer when the watched kind changed (the client may disconnect earlier).

    The events of one wakeup go out as one chunk (a client reads lines, whatever the chunks): one write to the
    connection per wakeup, not one per event."""
    deadline = time.monotonic() + stream.timeout
    first = await sync_to_async(_released(stream.start))()
    if first:
        yield b"".join(first)
    if stream.done:
        return
    feed = tailer()
    wake = asyncio.Event()
    subscriber = feed.subscribe(
        stream.selection.kind, stream.selection.namespace, waker(asyncio.get_running_loop(), wake)
    )
    try:
        wake.set()  # what committed between the initial read and the subscription
        while not stream.done:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                # an idle watch sleeps until a change of its kind (or its next bookmark) is due
                await asyncio.wait_for(wake.wait(), timeout=min(left, BOOKMARK_SECONDS) if stream.bookmarks else left)
            wake.clear()
            found = feed.read(stream.selection.kind, stream.cursor)
            if found is None:  # behind the ring: read the log itself until caught up
                lines = await sync_to_async(_released(stream.read_log))()
                wake.set()
            elif found[0]:
                changes, upto = found
                if stream.needs_thread(changes):  # rendering may read the database
                    lines = await sync_to_async(_released(stream.event_lines))(changes)
                else:  # every line known or a dict away: no thread hop
                    lines = stream.event_lines(changes)
                lines = stream.advance(lines, upto)
            else:
                stream.cursor = max(stream.cursor, found[1])
                lines = [stream.bookmark()] if stream.bookmarks and _due(stream) else []
            if lines:
                yield b"".join(lines)
    finally:
        feed.unsubscribe(subscriber)


def _due(stream: Stream) -> bool:
    return time.monotonic() - stream.last_bookmark >= BOOKMARK_SECONDS


def events_sync(stream: Stream) -> Iterator[bytes]:
    """The same stream for WSGI servers and Django's test client (one thread per watch, polling the log)."""
    deadline = time.monotonic() + stream.timeout
    yield from stream.start()
    while not stream.done:
        lines = stream.read_log()
        yield from lines
        if lines:
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(POLL_SECONDS, left))
