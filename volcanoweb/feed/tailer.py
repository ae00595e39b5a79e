"""One reader of the change log per process, fanning out to that process's subscribers (a watch cache).

The tailer thread polls the log (``FEED_POLL_SECONDS``: one cheap read of the last revision taken; on
PostgreSQL the safe frontier only when it moved, ADR 0029), reads the new entries once, keeps the recent
ones per kind in a ring, and wakes only the subscribers of the kinds (and namespaces) that changed: an idle
watch costs nothing per change it does not select. A subscriber reads the ring from its own cursor; one that
fell behind the ring reads the log itself (:func:`volcanoweb.feed.log.changes`): nothing is lost or merged.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from volcanoweb.core.metrics import FEED_READ_LAG
from volcanoweb.feed import log
from volcanoweb.feed.log import Change

logger = logging.getLogger(__name__)
#: Entries kept per kind, and of every kind (for subscribers of everything: the live sockets).
RING = 20_000
RING_ALL = 50_000
#: The kind a subscriber of every change subscribes to.
EVERYTHING = "*"


def _after(entries: collections.deque[Change], after: int) -> list[Change]:
    """The entries with a revision above ``after``, taken from the newest end: a subscriber that keeps up reads
    what arrived since its last read, not the whole ring."""
    out: list[Change] = []
    for change in reversed(entries):
        if change.rev <= after:
            break
        out.append(change)
    out.reverse()
    return out


@dataclass(eq=False)
class Subscriber:
    """A consumer of one kind (optionally one namespace), woken through ``notify`` (thread-safe)."""

    kind: str
    namespace: str | None
    notify: Callable[[], None]


@dataclass
class _Ring:
    #: the ring holds every change of its kind with a revision above ``start``
    start: int
    entries: collections.deque[Change] = field(default_factory=lambda: collections.deque(maxlen=RING))


#: generations are unique across the tailers of a process (a tailer started again after :func:`shutdown` or a
#: fork must not meet what was derived from an earlier one's rings)
_GENERATIONS = itertools.count(1)


class Tailer:
    """The process's log reader (start with :func:`tailer`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rings: dict[str, _Ring] = {}
        self.everything = _Ring(start=-1, entries=collections.deque(maxlen=RING_ALL))
        #: kind -> namespace (None: every namespace) -> subscribers: a change wakes the subscribers of its kind in
        #: its namespace and in every namespace, whatever the number of watches of other namespaces
        self.subscribers: dict[str, dict[str | None, set[Subscriber]]] = collections.defaultdict(
            lambda: collections.defaultdict(set)
        )
        self.position = -1
        #: bumped whenever the rings start again (a restart after idling, a log that went back): what was
        #: derived from the old rings (the sockets' filtered batches) is stale then
        self.generation = next(_GENERATIONS)
        #: the revision the tailer started from: a kind without a ring has had no change since
        self.origin = -1
        self.started = threading.Event()
        #: set while someone is subscribed: an idle process's tailer reads nothing
        self.active = threading.Event()
        #: set by :func:`shutdown`: the thread closes its connections and ends
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="feed-tailer", daemon=True)

    # -- subscribers -----------------------------------------------------------------------------------------

    def subscribe(self, kind: str, namespace: str | None, notify: Callable[[], None]) -> Subscriber:
        """Register a consumer; ``notify`` is called from the tailer thread when its kind changed."""
        subscriber = Subscriber(kind, namespace, notify)
        with self.lock:
            self.subscribers[kind][namespace].add(subscriber)
        self.active.set()
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self.lock:
            by_namespace = self.subscribers[subscriber.kind]
            group = by_namespace.get(subscriber.namespace)
            if group is not None:
                group.discard(subscriber)
                if not group:
                    del by_namespace[subscriber.namespace]

    def read(self, kind: str, after: int) -> tuple[list[Change], int] | None:
        """Return the kind's changes after ``after`` from the ring and the revision read up to, or None when
        the ring does not reach back that far (the caller reads the log itself)."""
        with self.lock:
            if self.position < 0:
                return None
            ring = self.rings.get(kind)
            start = self.origin if ring is None else ring.start
            if after < start:
                return None
            if ring is None or after >= self.position:
                return [], self.position
            return _after(ring.entries, after), self.position

    def read_all(self, after: int | None) -> tuple[list[Change], int] | None:
        """Every change after ``after`` and the revision read up to, or None when the ring does not reach back
        (``after`` None: a subscriber that starts with the present, before the tailer had a position)."""
        with self.lock:
            if self.position < 0:
                return None if after is not None else ([], -1)
            if after is None or after > self.position:
                # subscribed while the tailer was (re)starting, or the log went back (a flushed test
                # database): everything since the tailer (re)started
                after = self.origin
            if after < self.everything.start:
                return None
            if after >= self.position:
                return [], self.position
            return _after(self.everything.entries, after), self.position

    # -- the thread ------------------------------------------------------------------------------------------

    def _publish(self, batch: list[Change], upto: int) -> None:
        woken: set[Subscriber] = set()
        with self.lock:
            everything = self.everything.entries
            for change in batch:
                if len(everything) == everything.maxlen:
                    self.everything.start = everything[0].rev
                everything.append(change)
                ring = self.rings.get(change.kind)
                if ring is None:
                    ring = self.rings[change.kind] = _Ring(start=self.position)
                if len(ring.entries) == ring.entries.maxlen:
                    ring.start = ring.entries[0].rev
                ring.entries.append(change)
                by_namespace = self.subscribers.get(change.kind)
                if by_namespace:
                    woken.update(by_namespace.get(None, ()))
                    woken.update(by_namespace.get(change.namespace, ()))
            self.position = upto
            if batch:
                woken.update(self.subscribers.get(EVERYTHING, {}).get(None, ()))
        for subscriber in woken:
            try:
                subscriber.notify()
            except Exception:  # a closed event loop: the subscriber is going away
                logger.debug("feed subscriber could not be woken", exc_info=True)

    def _reset(self, position: int) -> None:
        """The log went back (a test database was flushed): forget what the rings hold."""
        with self.lock:
            self.rings.clear()
            self.everything = _Ring(start=position, entries=collections.deque(maxlen=RING_ALL))
            self.position = self.origin = position
            self.generation = next(_GENERATIONS)
            subscribers = [s for by_ns in self.subscribers.values() for group in by_ns.values() for s in group]
        for subscriber in subscribers:
            subscriber.notify()

    def ensure_position(self) -> None:
        """Give a (re)started tailer its position, the head now (sync: a subscriber calls this before it takes
        its cursor, so that nothing it needs is before the tailer's start)."""
        if self.position >= 0:
            return
        current, _ = log.head()
        with self.lock:
            if self.position < 0:
                self.rings.clear()
                self.everything = _Ring(start=current, entries=collections.deque(maxlen=RING_ALL))
                self.position = self.origin = current
                self.generation = next(_GENERATIONS)

    def catch_up(self) -> None:
        """Read what committed since the last read (the thread's step; tests call it directly)."""
        self.ensure_position()
        if log.latest() == self.position:
            return  # nothing was taken since: no frontier to compute (PostgreSQL) and nothing to read
        current, _ = log.head()
        if current < self.position:
            self._reset(current)
            return
        while self.position < current:
            batch = log.changes(self.position, upto=current)
            now = time.time()
            for change in batch:
                if change.at:
                    FEED_READ_LAG.observe(now - change.at)
            # revisions of rolled-back transactions are never used: a read may find fewer than it asked for
            self._publish(batch, batch[-1].rev if len(batch) == log.BATCH else current)

    def _idle(self) -> bool:
        with self.lock:
            return not any(group for by_ns in self.subscribers.values() for group in by_ns.values())

    def _run(self) -> None:
        poll = float(settings.FEED_POLL_SECONDS)
        while not self.stopping.is_set():
            if self._idle() or self.stopping.is_set():
                self.active.clear()
                with self.lock:  # nothing is read while idle: a subscriber starts again from the head
                    self.position = -1
                self.started.set()
                self._close_connection()
                if not self.stopping.is_set():
                    self.active.wait()
                continue
            try:
                self.catch_up()
                self.started.set()
                self.stopping.wait(poll)
            except Exception:
                logger.exception("feed tailer: reading the log failed; retrying")
                self._close_connection()
                self.started.set()
                self.stopping.wait(1.0)
        self._close_connection()

    @staticmethod
    def _close_connection() -> None:
        """Drop this thread's database connection (a broken one, or one an idle tailer need not hold)."""
        with contextlib.suppress(Exception):
            connection.close()


_tailer: Tailer | None = None
_tailer_lock = threading.Lock()


def _forget_after_fork() -> None:
    """A forked child has none of its parent's threads: it starts a tailer of its own when it needs one."""
    global _tailer, _tailer_lock
    _tailer, _tailer_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def tailer() -> Tailer:
    """Return this process's tailer, starting its thread on first use (it reads only while subscribed to)."""
    global _tailer
    with _tailer_lock:
        if _tailer is None:
            _tailer = Tailer()
            _tailer.thread.start()
        return _tailer


def shutdown(timeout: float = 5.0) -> None:
    """End this process's tailer thread, if one runs (its connections closed); the next use starts anew."""
    global _tailer
    with _tailer_lock:
        running, _tailer = _tailer, None
    if running is None:
        return
    running.stopping.set()
    running.active.set()
    running.thread.join(timeout)


def waker(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> Callable[[], None]:
    """A thread-safe ``notify`` that sets ``event`` on ``loop``."""

    def notify() -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    return notify
