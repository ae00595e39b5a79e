"""One channel-layer reader per process and live group; the sockets of the process are served from it.

Without it every socket joins the live groups itself, and each channel message for a group is handed by
the channel layer to every socket's own receive loop (a task wake-up and a dispatch per socket and message:
with 50 sockets per process that, not the sending, was the web processes' CPU). A :class:`Hub` joins each
live group (``tenant.N``, ``admins``, ``cluster``) once per process with a channel of its own for that
group, receives each message once, and hands it to the process's sockets that may read that group by a
plain call (``LiveConsumer.enqueue``), which only filters and merges into the socket's bounded queue.

The group of a message is the channel it arrived on, never a field of the message: a socket is only ever
given messages of the groups it was registered for (``live.consumers._groups_for``). Control groups
(logout, revocation) stay on each socket's own channel. docs/adr/0019-live-updates-that-keep-up.md.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any, Protocol

log = logging.getLogger(__name__)

#: Seconds between re-joins of a hub channel to its group (the Redis layer forgets members after a day).
REJOIN_EVERY = 3600.0


class Member(Protocol):
    def enqueue(self, group: str, event: dict[str, Any]) -> None: ...


class Hub:
    """The live groups' readers of one event loop (one per web process) and one channel layer."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.members: dict[str, set[Member]] = {}
        self.readers: dict[str, tuple[str, asyncio.Task[None]]] = {}
        self.lock = asyncio.Lock()

    async def join(self, member: Member, group_names: list[str]) -> None:
        """Give ``member`` every later message of ``group_names``."""
        async with self.lock:
            for group in group_names:
                self.members.setdefault(group, set()).add(member)
                if group not in self.readers:
                    # The default prefix: channels_redis pops a process's channels from one Redis key per
                    # prefix under one lock; a channel of another prefix would rarely get that lock.
                    channel = await self.layer.new_channel()
                    await self.layer.group_add(group, channel)
                    self.readers[group] = (channel, asyncio.ensure_future(self._read(group, channel)))

    async def leave(self, member: Member) -> None:
        """Stop giving ``member`` anything; a group without members left is left by the hub too."""
        async with self.lock:
            for group in [g for g, members in self.members.items() if member in members]:
                members = self.members[group]
                members.discard(member)
                if not members:
                    del self.members[group]
                    channel, task = self.readers.pop(group)
                    task.cancel()
                    try:
                        await self.layer.group_discard(group, channel)
                    except Exception:  # the reader is gone anyway; the layer expires the membership
                        log.debug("could not leave %s", group, exc_info=True)

    async def _read(self, group: str, channel: str) -> None:
        loop = asyncio.get_running_loop()
        rejoin_at = loop.time() + REJOIN_EVERY
        while True:
            try:
                event = await self.layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis away for a moment: the sequence numbers make the sockets refetch later
                log.exception("live hub: reading %s failed", group)
                await asyncio.sleep(1.0)
                continue
            for member in list(self.members.get(group, ())):
                try:
                    member.enqueue(group, event)
                except Exception:
                    log.exception("live hub: a socket refused a message")
            if loop.time() > rejoin_at:
                rejoin_at = loop.time() + REJOIN_EVERY
                await self.layer.group_add(group, channel)


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub(layer: Any) -> Hub:
    """Return the running loop's hub for ``layer`` (a new one if the layer was replaced, as tests do)."""
    loop = asyncio.get_running_loop()
    current = _hubs.get(loop)
    if current is None or current.layer is not layer:
        current = _hubs[loop] = Hub(layer)
    return current
