"""Serve a :class:`KubeEmulatorPlus` over real HTTP from a background thread.

The official ``kubernetes`` client is synchronous; kmock is an aiohttp
server. Calling the async server from the client's thread would deadlock,
so the emulator runs in its own thread with its own event loop, and tests
talk to it over 127.0.0.1 like to any API server. :meth:`KmockCluster.stop_server`
and :meth:`KmockCluster.start_server` take the HTTP server away and bring it
back on the same port (the emulator, the "etcd", keeps its objects).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import kmock
from kubernetes import client

from .kmock_plus import KubeEmulatorPlus

T = TypeVar("T")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class KmockCluster:
    """A running emulator: ``url``, ``configuration()``, ``emu`` and server control."""

    def __init__(self) -> None:
        self.emu = KubeEmulatorPlus()
        self.port = _free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: kmock.Server | None = None
        self._thread.start()
        self.run(self.emu.__aenter__())
        self.start_server()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def configuration(self) -> client.Configuration:
        config = client.Configuration(host=self.url)
        config.retries = 0
        return config

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        """Run a coroutine in the emulator's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def call(self, fn: Callable[[], T]) -> T:
        """Run a plain function in the emulator's loop (to touch its state safely)."""

        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    def start_server(self) -> None:
        if self._server is not None:
            return
        self.emu.closing = False
        server = kmock.Server(self.emu, port=self.port)
        self.run(server.__aenter__())
        self._server = server

    def stop_server(self) -> None:
        """End the watch streams, then close the HTTP server (the port refuses)."""
        if self._server is None:
            return

        def closing() -> None:
            self.emu.closing = True
            self.emu.drop_watches()

        self.call(closing)
        server, self._server = self._server, None
        self.run(server.__aexit__(None, None, None), timeout=30)

    def close(self) -> None:
        self.stop_server()
        self.run(self.emu.__aexit__(None, None, None))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
