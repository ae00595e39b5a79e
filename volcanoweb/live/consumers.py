"""WebSocket consumers: authenticate, join the caller's groups, forward; nothing else.

A socket also joins control groups (its user, its login session or API token): logging out, revoking the
token, losing a tenant membership or being deactivated closes it at once (:mod:`volcanoweb.live.revocation`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from volcanoweb.live import groups

log = logging.getLogger(__name__)

#: Close codes: the credentials are gone (the browser signs in again), and a client that keeps sending garbage.
CLOSE_UNAUTHORIZED = 4401
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
#: Largest accepted client frame (clients only send pings), and how many bad frames close the socket.
MAX_FRAME_BYTES = 4096
MAX_BAD_FRAMES = 5

#: Seconds over which messages about the same object are merged before sending.
COALESCE_WINDOW = 0.2
#: More objects of one kind than this in one window are sent as one ``{"kind": k, "id": "*", "count": n}``
#: message: a burst (a cycle binding thousands of pods, the controller catching up) must not bury a browser,
#: or the server, in frames; pages listing that kind refresh once.
COLLAPSE_OVER = 20
#: At most this many frames per window: beyond it the most numerous kinds are collapsed too.
MAX_FRAMES = 40


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
    """Forward live change messages for the caller's tenants and the cluster, coalesced per object."""

    revoked = False
    bad_frames = 0

    async def connect(self) -> None:
        self.buffer: dict[tuple[str, str], dict[str, Any]] = {}
        self.flusher: asyncio.Task[None] | None = None
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
        # Control groups first: a revocation that races with the connect still reaches this socket.
        self.joined: list[str] = control
        for name in control:
            await self.channel_layer.group_add(name, self.channel_name)
        live = await _groups_for(user)
        self.joined.extend(live)
        for name in live:
            await self.channel_layer.group_add(name, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for name in getattr(self, "joined", []):
            await self.channel_layer.group_discard(name, self.channel_name)
        flusher = getattr(self, "flusher", None)
        if flusher:
            flusher.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        """Answer ``{"kind": "ping"}``; anything else gets an error frame, and repeated abuse a policy close."""
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
        if isinstance(content, dict) and content.get("kind") == "ping":
            await self.send_json({"kind": "pong"})
            return
        self.bad_frames += 1
        if self.bad_frames >= MAX_BAD_FRAMES:
            log.info("closing a live socket after %d unexpected frames", self.bad_frames)
            await self.close(code=CLOSE_POLICY)
            return
        await self.send_json({"kind": "error", "message": 'unexpected frame: send {"kind": "ping"} or nothing'})

    async def live_message(self, event: dict[str, Any]) -> None:
        """Buffer one broadcast; send the buffer after the coalescing window."""
        if not self.revoked:
            self._buffer(event["payload"])

    async def live_batch(self, event: dict[str, Any]) -> None:
        """Buffer the broadcasts of one committed change set (``live.broadcast.send_many``)."""
        if self.revoked:
            return
        for payload in event["payloads"]:
            self._buffer(payload)

    async def live_revoke(self, event: dict[str, Any]) -> None:
        """The socket's credentials are gone (logout, revoked token, lost membership): drop and close at once."""
        self.revoked = True
        self.buffer.clear()
        if self.flusher is not None:
            self.flusher.cancel()
        for name in self.joined:
            await self.channel_layer.group_discard(name, self.channel_name)
        self.joined = []
        await self.close(code=int(event.get("code") or CLOSE_UNAUTHORIZED))

    def _buffer(self, payload: dict[str, Any]) -> None:
        # Merged field by field, newest value first: a later message about the same object (its pod deleted
        # after an eviction, a finished job removed by its TTL) must not drop what an earlier one said.
        key = (str(payload.get("kind")), str(payload.get("id")))
        self.buffer[key] = {**self.buffer.get(key, {}), **payload}
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.ensure_future(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(COALESCE_WINDOW)
        if self.revoked:
            return
        for payload in collapse(list(self.buffer.values())):
            await self.send_json(payload)
        self.buffer.clear()


def collapse(
    payloads: list[dict[str, Any]], limit: int | None = None, budget: int | None = None
) -> list[dict[str, Any]]:
    """Return ``payloads`` with every kind that has more than ``limit`` of them replaced by one summary, and
    more kinds (the most numerous first) while there are more than ``budget`` messages."""
    limit = COLLAPSE_OVER if limit is None else limit
    budget = MAX_FRAMES if budget is None else budget
    counts: dict[str, int] = {}
    for payload in payloads:
        kind = str(payload.get("kind"))
        counts[kind] = counts.get(kind, 0) + 1
    collapsed = {kind for kind, n in counts.items() if n > limit}
    frames = len(collapsed) + sum(n for kind, n in counts.items() if kind not in collapsed)
    for kind, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        if frames <= budget or n == 1:
            break
        if kind not in collapsed:
            collapsed.add(kind)
            frames -= n - 1
    out: list[dict[str, Any]] = []
    summarized: set[str] = set()
    for payload in payloads:
        kind = str(payload.get("kind"))
        if kind not in collapsed:
            out.append(payload)
        elif kind not in summarized:
            summarized.add(kind)
            out.append({"kind": kind, "id": "*", "count": counts[kind]})
    return out
