"""WebSocket consumers: authenticate, join the caller's groups, forward through a bounded queue per client.

A socket also joins control groups (its user, its login session or API token): logging out, revoking the
token, losing a tenant membership or being deactivated closes it at once (:mod:`volcanoweb.live.revocation`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from volcanoweb.core.metrics import FEED_READ_LAG, LIVE_FRAME_LAG, bucket_counts
from volcanoweb.feed.tailer import EVERYTHING, tailer
from volcanoweb.live import feedsource, groups
from volcanoweb.live.hub import hub as live_hub

log = logging.getLogger(__name__)

#: Close codes: the credentials are gone (the browser signs in again), and a client that keeps sending garbage.
CLOSE_UNAUTHORIZED = 4401
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
#: Largest accepted client frame (clients only send pings), and how many bad frames close the socket.
MAX_FRAME_BYTES = 4096
MAX_BAD_FRAMES = 5
UNEXPECTED = 'unexpected frame: send {"kind": "ping"}, {"kind": "subscribe", "topics": [[kind, id prefix]]} or nothing'

#: A client that fell too far behind: the server closes it (the browser reconnects at once and refetches
#: every live region of its page). See :data:`MAX_BEHIND`.
CLOSE_TOO_SLOW = 4408
#: Least seconds between two frames to one client: what arrives meanwhile is merged into the next frame.
#: The first frame after a quiet spell goes at once.
FRAME_INTERVAL = 0.2
#: Objects a client's queue holds before the most numerous kind is folded into one
#: ``{"kind": k, "id": "*", "count": n}`` marker (pages listing that kind refresh once).
QUEUE_LIMIT = 100
#: Channel messages with something for this client that may arrive while one frame to it is still being
#: written; one more and the client is closed with :data:`CLOSE_TOO_SLOW`. Until then its queue only
#: merges and folds (bounded), and nobody else waits for it.
MAX_BEHIND = 200
#: Subscription limits (``{"kind": "subscribe", "topics": [[kind, id prefix], ...]}``).
MAX_TOPICS = 64
MAX_TOPIC_CHARS = 256


class ClientQueue:
    """What one client has not been sent yet: the latest state per object, bounded by folding into markers.

    ``add`` merges a change into the pending state of its object (field by field, newest value first); past
    :data:`QUEUE_LIMIT` objects the most numerous kind becomes one marker, after which that kind's changes
    only count. ``refresh_all`` (the channel layer lost a message) replaces everything with one
    ``{"kind": "*", "id": "*"}``. ``take`` returns the next frame, ``{"kind": "changes",
    "t0": oldest commit time, "items": [...]}``, or None. ``stats`` counts changes received, merged into a
    newer state, folded into a marker, and the frames and items sent.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = QUEUE_LIMIT if limit is None else limit
        self.items: dict[tuple[str, str], dict[str, Any]] = {}
        self.markers: dict[str, int] = {}
        self.everything = False
        self.t0: float | None = None
        self.stats = {"changes": 0, "merged": 0, "collapsed": 0, "refreshes": 0, "frames": 0, "items": 0}

    def __bool__(self) -> bool:
        return bool(self.items or self.markers or self.everything)

    def add(self, payload: dict[str, Any], committed: float) -> None:
        self.stats["changes"] += 1
        if self.t0 is None or committed < self.t0:
            self.t0 = committed
        kind = str(payload.get("kind"))
        if self.everything:
            self.stats["collapsed"] += 1
            return
        if kind in self.markers or payload.get("id") == "*":
            self.stats["collapsed"] += 1
            self.markers[kind] = self.markers.get(kind, 0) + int(payload.get("count") or 1)
            self._drop_kind(kind)
            return
        key = (kind, str(payload.get("id")))
        if key in self.items:
            self.stats["merged"] += 1
            self.items[key] = {**self.items[key], **payload}
            return
        self.items[key] = dict(payload)
        if len(self.items) > self.limit:
            counts: dict[str, int] = {}
            for k, _ in self.items:
                counts[k] = counts.get(k, 0) + 1
            biggest = max(counts, key=lambda k: (counts[k], k))
            self.markers[biggest] = self.markers.get(biggest, 0) + counts[biggest]
            self.stats["collapsed"] += counts[biggest]
            self._drop_kind(biggest)

    def _drop_kind(self, kind: str) -> None:
        for key in [key for key in self.items if key[0] == kind]:
            del self.items[key]

    def refresh_all(self) -> None:
        self.stats["collapsed"] += len(self.items) + sum(self.markers.values())
        self.items.clear()
        self.markers.clear()
        self.everything = True

    def take(self) -> dict[str, Any] | None:
        if not self:
            return None
        if self.everything:
            self.stats["refreshes"] += 1
            items: list[dict[str, Any]] = [{"kind": "*", "id": "*"}]
        else:
            items = [*self.items.values(), *({"kind": k, "id": "*", "count": n} for k, n in self.markers.items())]
        self.stats["frames"] += 1
        self.stats["items"] += len(items)
        frame = {"kind": "changes", "t0": self.t0, "items": items}
        self.items, self.markers, self.everything, self.t0 = {}, {}, False, None
        return frame


def _since(query: bytes) -> int | None:
    """The ``since`` revision of the socket's query string (the page's render revision), or None."""
    from urllib.parse import parse_qs

    try:
        values = parse_qs(query.decode("latin-1"), max_num_fields=8).get("since") or []
    except ValueError:  # more fields than a page sends
        return None
    text = values[0] if values else ""
    return int(text) if text.isdigit() and len(text) <= 18 else None


def parse_topics(content: dict[str, Any]) -> dict[str, tuple[str, ...]] | None:
    """Return {kind: id prefixes} from a subscribe frame's ``topics`` (``""`` is every id), or None if invalid."""
    topics = content.get("topics")
    if not isinstance(topics, list) or len(topics) > MAX_TOPICS:
        return None
    out: dict[str, set[str]] = {}
    for topic in topics:
        if not (isinstance(topic, list) and len(topic) == 2 and all(isinstance(x, str) for x in topic)):
            return None
        kind, prefix = topic[0].lower(), topic[1]
        if not kind or len(kind) > 64 or len(prefix) > MAX_TOPIC_CHARS:
            return None
        out.setdefault(kind, set()).add(prefix)
    return {kind: ("",) if "" in prefixes else tuple(sorted(prefixes)) for kind, prefixes in out.items()}


def wanted(topics: dict[str, tuple[str, ...]] | None, payload: dict[str, Any]) -> bool:
    """Whether a client subscribed to ``topics`` (None: everything) wants ``payload``."""
    if topics is None or "*" in topics:
        return True
    kind = str(payload.get("kind")).lower()
    if kind == "*":
        return True
    prefixes = topics.get(kind)
    if prefixes is None:
        return False
    ident = str(payload.get("id"))
    return ident == "*" or any(ident.startswith(prefix) for prefix in prefixes)


@database_sync_to_async
def _token_user(headers: list[tuple[bytes, bytes]]) -> tuple[Any, int] | None:
    """Return (user, token id) for an ``Authorization: Bearer`` header with a usable token, else None."""
    from volcanoweb.tenancy.models import ApiToken, hash_token

    for name, value in headers:
        if name.lower() != b"authorization":
            continue
        parts = value.split()
        if len(parts) != 2 or parts[0].lower() != b"bearer":
            return None
        try:
            raw = parts[1].decode()
        except UnicodeError:
            return None
        token = ApiToken.objects.select_related("user").filter(token_hash=hash_token(raw)).first()
        if token is None or not token.is_usable() or not token.user.is_active:
            return None
        return token.user, token.pk
    return None


#: (tailer generation, cursor, revision read up to, admin, tenants, topics) -> the messages for sockets of that
#: reader: the sockets of one process wake for the same changes, and those of one user (or one tenant set) with
#: the same subscription get the same messages, so each batch is filtered once per such reader, not per socket.
_SELECTED: dict[tuple[Any, ...], list[tuple[dict[str, Any], float]]] = {}
_SELECTED_MAX = 512


Selected = tuple[tuple[Any, ...], list[tuple[dict[str, Any], float]]]


def _selected(changes: list[Any], reader: tuple[Any, ...], topics: dict[str, tuple[str, ...]] | None) -> Selected:
    """The messages of ``changes`` for ``reader`` (tailer generation, cursor, upto, admin, tenants), and the key
    that names them (the same for every socket of that reader and subscription)."""
    admin, tenants = reader[3], reader[4]
    topics_key = None if topics is None else tuple(sorted(topics.items()))
    key = (*reader, len(changes), topics_key)
    hit = _SELECTED.get(key)
    if hit is not None:
        return key, hit
    out = []
    for change in changes:
        found = feedsource.message(change)
        if found is None:
            continue
        payload, audience = found
        if feedsource.visible(audience, admin, tenants) and wanted(topics, payload):
            out.append((payload, change.at or time.time()))
    if len(_SELECTED) >= _SELECTED_MAX:
        _SELECTED.clear()
    _SELECTED[key] = out
    return key, out


#: (the selections a frame holds, by key) -> (frame text, items): the sockets of one reader that keep up wake for
#: the same changes and send the same frame, which is built and serialised once.
_FRAMES: dict[tuple[Any, ...], tuple[str, int, float | None]] = {}
_FRAMES_MAX = 256
#: Selections a socket may hold before they are merged into its queue (a socket whose frames lag behind).
MAX_BATCHES = 64


def _frame(batches: list[Selected]) -> tuple[str, int, float | None]:
    """The text of the frame of ``batches`` (each object's latest state, folded past :data:`QUEUE_LIMIT` as a
    socket's :class:`ClientQueue` folds), its item count and its oldest change's time, built once per set of
    selections."""
    key = tuple(k for k, _ in batches)
    hit = _FRAMES.get(key)
    if hit is not None:
        return hit
    queue = ClientQueue()
    for _, messages in batches:
        for payload, at in messages:
            queue.add(payload, at)
    frame = queue.take()
    text = json.dumps(frame, separators=(",", ":")) if frame is not None else ""
    if len(_FRAMES) >= _FRAMES_MAX:
        _FRAMES.clear()
    _FRAMES[key] = found = (text, queue.stats["items"], frame["t0"] if frame is not None else None)
    return found


@database_sync_to_async
def _reader(user: Any) -> tuple[bool, frozenset[int]]:
    """(platform admin, tenant ids): what the socket may read of the change log."""
    from volcanoweb.tenancy.models import Membership

    if user.is_superuser:
        return True, frozenset()
    return False, frozenset(Membership.objects.filter(user=user).values_list("tenant_id", flat=True))


@database_sync_to_async
def _groups_for(user: Any) -> list[str]:
    names = [groups.cluster_group()]
    if user.is_superuser:
        names.append(groups.admin_group())
    else:
        from volcanoweb.tenancy.models import Membership

        tenant_ids = Membership.objects.filter(user=user).values_list("tenant_id", flat=True)
        names.extend(groups.tenant_group(tenant_id) for tenant_id in tenant_ids)
    return names


class LiveConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]  # Channels has no types: an Any base
    """Forward live change messages for the caller's tenants and the cluster through a bounded queue.

    The channel-layer handlers only filter (the client's subscription) and merge into the client's
    :class:`ClientQueue`; a sender task per socket writes one frame at a time. A client that reads slowly
    therefore only loses intermediate states (merged or folded into markers), never delays another socket
    or the handlers; one that is :data:`MAX_BEHIND` messages behind is closed with :data:`CLOSE_TOO_SLOW`.
    """

    revoked = False
    bad_frames = 0

    def init_state(self) -> None:
        """The socket's queue, subscription (None: everything), sender and sequence bookkeeping."""
        self.queue = ClientQueue()
        #: the log's selections not sent yet (shared with the other sockets of this reader)
        self.batches: list[Selected] = []
        self.topics: dict[str, tuple[str, ...]] | None = None
        self.sender: asyncio.Task[None] | None = None
        self.wake = asyncio.Event()
        self.sending = False
        self.behind = 0
        self.gaps = 0
        self.last_seq: dict[tuple[str, str], int] = {}
        self.joined: list[str] = []
        self.hub: Any = None
        self.closing: asyncio.Future[None] | None = None
        self.feed: Any = None
        self.subscriber: Any = None
        self.cursor: int | None = None
        self.feed_pending = False
        self.admin = False
        self.tenants: frozenset[int] = frozenset()

    async def connect(self) -> None:
        self.init_state()
        user = self.scope.get("user")
        control: list[str] = []
        by_token = await _token_user(list(self.scope.get("headers") or []))
        if by_token is not None:
            user, token_id = by_token
            control.append(groups.token_group(token_id))
        elif user is not None and user.is_authenticated:
            session = self.scope.get("session")
            if session is not None and session.session_key:
                control.append(groups.session_group(session.session_key))
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHORIZED)
            return
        control.append(groups.user_group(user.pk))
        # Control groups first, on the socket's own channel: a revocation that races with the connect
        # still reaches this socket. The live groups are read once per process by the hub.
        self.joined = control
        for name in control:
            await self.channel_layer.group_add(name, self.channel_name)
        self.hub = live_hub(self.channel_layer)
        await self.hub.join(self, await _groups_for(user))
        # Object changes come from the change log, read from this socket's own cursor (ADR 0024).
        self.admin, self.tenants = await _reader(user)
        self.feed = tailer()
        loop = asyncio.get_running_loop()
        self.subscriber = self.feed.subscribe(EVERYTHING, None, lambda: loop.call_soon_threadsafe(self._feed_woken))
        await database_sync_to_async(self.feed.ensure_position)()
        self.cursor = self.feed.position
        since = _since(self.scope.get("query_string") or b"")
        if since is not None and since < self.cursor:
            # the page's revision: what changed while it loaded comes first (or one resync, ring permitting)
            self.cursor = since
            self.feed_pending = True
            self.wake.set()
        await self.accept()
        self.sender = asyncio.ensure_future(self._send_frames())

    async def disconnect(self, code: int) -> None:
        await self._leave()

    def _feed_woken(self) -> None:
        self.feed_pending = True
        self.wake.set()

    async def _pull_feed(self) -> None:
        """Queue what the log has for this socket since its cursor: each object's latest state; a socket the
        ring no longer reaches back for gets one resync (``{"kind": "*"}``)."""
        found = self.feed.read_all(self.cursor)
        if found is None:
            self.batches = []
            self.queue.refresh_all()
            self.cursor = self.feed.position
            return
        changes, upto = found
        if upto < 0:
            return
        if any(feedsource.needs_database(c) for c in changes):
            await database_sync_to_async(feedsource.prepare)(changes)
        reader = (self.feed.generation, self.cursor, upto, self.admin, self.tenants)
        selection = _selected(changes, reader, self.topics)
        if selection[1]:
            self.batches.append(selection)
            if len(self.batches) > MAX_BATCHES:  # frames lag behind: merge (and fold) in this socket's queue
                self._merge_batches()
        self.cursor = upto if self.cursor is None else max(self.cursor, upto)

    def _merge_batches(self) -> None:
        for _, messages in self.batches:
            for payload, at in messages:
                self.queue.add(payload, at)
        self.batches = []

    def _next_frame(self) -> tuple[str | None, float | None]:
        """The text of the next frame and its oldest change's time: shared with the other sockets of this reader
        when only the log's selections are pending (the common case), else this socket's own."""
        if self.batches and not self.queue:
            text, items, t0 = _frame(self.batches)
            self.batches = []
            self.queue.stats["frames"] += 1
            self.queue.stats["items"] += items
            self.queue.stats["changes"] += items
            return text or None, t0
        if self.batches:
            self._merge_batches()
        frame = self.queue.take()
        return (None, None) if frame is None else (json.dumps(frame, separators=(",", ":")), frame["t0"])

    async def _leave(self) -> None:
        subscriber = getattr(self, "subscriber", None)
        if subscriber is not None:
            self.subscriber = None
            self.feed.unsubscribe(subscriber)
        sender = getattr(self, "sender", None)
        if sender is not None:
            sender.cancel()
        hub = getattr(self, "hub", None)
        if hub is not None:
            self.hub = None
            await hub.leave(self)
        for name in getattr(self, "joined", []):
            await self.channel_layer.group_discard(name, self.channel_name)
        self.joined = []

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        """Answer ``ping``, ``subscribe`` and ``stats``; anything else gets an error frame, repeated abuse a close."""
        if self.revoked:
            return
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > MAX_FRAME_BYTES:
            await self.close(code=CLOSE_TOO_BIG)
            return
        try:
            content = json.loads(text_data) if text_data is not None else None
        except (ValueError, RecursionError):
            content = None
        kind = content.get("kind") if isinstance(content, dict) else None
        if kind == "ping":
            await self.send_json({"kind": "pong"})
            return
        if kind == "stats":
            # the lags are this process's (every socket it serves), the counts this socket's
            lags = {"frame_lag": bucket_counts(LIVE_FRAME_LAG), "feed_read_lag": bucket_counts(FEED_READ_LAG)}
            await self.send_json({"kind": "stats", **self.queue.stats, "gaps": self.gaps, "process": lags})
            return
        if kind == "subscribe" and isinstance(content, dict):
            topics = parse_topics(content)
            if topics is not None:
                self.topics = topics
                await self.send_json({"kind": "subscribed", "topics": sum(len(p) for p in topics.values())})
                return
        self.bad_frames += 1
        if self.bad_frames >= MAX_BAD_FRAMES:
            log.info("closing a live socket after %d unexpected frames", self.bad_frames)
            await self.close(code=CLOSE_POLICY)
            return
        await self.send_json({"kind": "error", "message": UNEXPECTED})

    def enqueue(self, group: str, event: dict[str, Any]) -> None:
        """(From the hub) queue a message of the live group ``group``: filter, merge, wake the sender."""
        if self.revoked:
            return
        kind = event.get("type")
        if kind == "live.batch":
            self._check_sequence(group, event)
            t0 = event.get("t0")
            self._queue(event.get("payloads") or [], float(t0) if isinstance(t0, (int, float)) else time.time())
        elif kind == "live.message":
            self._queue([event["payload"]], time.time())

    async def live_message(self, event: dict[str, Any]) -> None:
        """Queue one broadcast sent to this socket's own channel (a single payload, committed now)."""
        self.enqueue("", event)

    async def live_batch(self, event: dict[str, Any]) -> None:
        """Queue a batch sent to this socket's own channel (``live.broadcast.Outbox``)."""
        self.enqueue(str(event.get("group") or ""), event)

    def _check_sequence(self, group: str, event: dict[str, Any]) -> None:
        """A gap in a publisher's numbering means the channel layer lost a message: refetch everything."""
        src, seq = event.get("src"), event.get("seq")
        if not isinstance(src, str) or not isinstance(seq, int):
            return
        key = (src, group)
        last = self.last_seq.get(key)
        if last is not None and seq > last + 1:
            self.gaps += seq - last - 1
            self.queue.refresh_all()
            self.wake.set()
        if len(self.last_seq) > 256:
            self.last_seq.clear()
        self.last_seq[key] = seq if last is None else max(last, seq)

    def _queue(self, payloads: list[dict[str, Any]], committed: float) -> None:
        added = False
        for payload in payloads:
            if wanted(self.topics, payload):
                self.queue.add(payload, committed)
                added = True
        if not added:
            return
        if self.sending:
            self.behind += 1
            if self.behind > MAX_BEHIND:
                log.info("closing a live socket %d messages behind", self.behind)
                self.revoked = True
                self.queue = ClientQueue()
                self.closing = asyncio.ensure_future(self._close_slow())
                return
        self.wake.set()

    async def _close_slow(self) -> None:
        await self._leave()
        await self.close(code=CLOSE_TOO_SLOW)

    async def _send_frames(self) -> None:
        """The socket's one writer: a frame of everything pending, at most one per :data:`FRAME_INTERVAL`."""
        loop = asyncio.get_running_loop()
        next_at = 0.0
        while True:
            await self.wake.wait()
            self.wake.clear()
            delay = next_at - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if self.feed_pending and not self.revoked:
                self.feed_pending = False
                await self._pull_feed()
            text, t0 = self._next_frame()
            if text is None or self.revoked:
                continue
            self.sending, self.behind = True, 0
            try:
                await self.send(text_data=text)
            except Exception:  # the socket is gone: disconnect() follows
                log.debug("live frame not sent", exc_info=True)
                return
            finally:
                self.sending = False
            if t0:
                LIVE_FRAME_LAG.observe(time.time() - t0)
            next_at = loop.time() + FRAME_INTERVAL

    async def live_revoke(self, event: dict[str, Any]) -> None:
        """The socket's credentials are gone (logout, revoked token, lost membership): drop and close at once."""
        self.revoked = True
        self.queue = ClientQueue()
        await self._leave()
        await self.close(code=int(event.get("code") or CLOSE_UNAUTHORIZED))
