"""WebSocket consumers: authenticate, join the caller's groups, forward; nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from volcanoweb.live import groups

#: Seconds over which messages about the same object are merged before sending.
COALESCE_WINDOW = 0.2
#: More objects of one kind than this in one window are sent as one ``{"kind": k, "id": "*", "count": n}``
#: message: a burst (a cycle binding thousands of pods, the controller catching up) must not bury a browser,
#: or the server, in frames; pages listing that kind refresh once.
COLLAPSE_OVER = 20
#: At most this many frames per window: beyond it the most numerous kinds are collapsed too.
MAX_FRAMES = 40


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


class LiveConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """Forward live change messages for the caller's tenants and the cluster, coalesced per object."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.joined: list[str] = await _groups_for(user)
        self.buffer: dict[tuple[str, str], dict[str, Any]] = {}
        self.flusher: asyncio.Task[None] | None = None
        for name in self.joined:
            await self.channel_layer.group_add(name, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for name in getattr(self, "joined", []):
            await self.channel_layer.group_discard(name, self.channel_name)
        if getattr(self, "flusher", None):
            self.flusher.cancel()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("kind") == "ping":
            await self.send_json({"kind": "pong"})

    async def live_message(self, event: dict[str, Any]) -> None:
        """Buffer one broadcast; send the buffer after the coalescing window."""
        self._buffer(event["payload"])

    async def live_batch(self, event: dict[str, Any]) -> None:
        """Buffer the broadcasts of one committed change set (``live.broadcast.send_many``)."""
        for payload in event["payloads"]:
            self._buffer(payload)

    def _buffer(self, payload: dict[str, Any]) -> None:
        # Merged field by field, newest value first: a later message about the same object (its pod deleted
        # after an eviction, a finished job removed by its TTL) must not drop what an earlier one said.
        key = (str(payload.get("kind")), str(payload.get("id")))
        self.buffer[key] = {**self.buffer.get(key, {}), **payload}
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.ensure_future(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(COALESCE_WINDOW)
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
