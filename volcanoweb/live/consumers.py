"""WebSocket consumers: authenticate, join groups, forward; nothing else."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from volcanoweb.live import groups


class LiveConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """Forward live change messages for the caller's tenants and the cluster."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.joined: list[str] = [groups.cluster_group()]
        for name in self.joined:
            await self.channel_layer.group_add(name, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for name in getattr(self, "joined", []):
            await self.channel_layer.group_discard(name, self.channel_name)

    async def live_message(self, event: dict[str, Any]) -> None:
        """Forward one broadcast (type "live.message") to the browser."""
        await self.send_json(event["payload"])
