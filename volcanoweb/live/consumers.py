"""WebSocket consumers: authenticate, join the caller's groups, forward; nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from volcanoweb.live import groups

#: Seconds over which messages about the same object are merged before sending.
COALESCE_WINDOW = 0.2


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
        payload = event["payload"]
        self.buffer[(str(payload.get("kind")), str(payload.get("id")))] = payload
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.ensure_future(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(COALESCE_WINDOW)
        items = list(self.buffer.values())
        self.buffer.clear()
        for payload in items:
            await self.send_json(payload)
