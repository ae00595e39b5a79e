"""Make daphne (``make run``, and the stack with ``WEB_SERVER=daphne``) answer as the stack's uvicorn does.

* A request line or header line longer than Twisted's limit (16 KiB) was dropped without an answer; it is
  answered 414 before the connection closes (Twisted's hook: ``HTTPChannel.lineLengthExceeded``).
* A consumer that closes a WebSocket with a protocol code (1008 policy violation, 1009 message too big) made
  autobahn raise "invalid close code" (it lets applications send only 1000 and 3000-4999), so daphne logged a
  traceback and closed with 1011 instead. Such codes are sent as they are, through autobahn's own
  ``sendCloseFrame`` (what daphne itself uses for its 1011).

* A listener that cannot bind (the port taken) made daphne log and stop its reactor, so the command returned as
  after Ctrl-C, with exit code 0. :func:`listening_server` makes a server that remembers why, for the command
  to fail with it.

:func:`apply` is called by ``runembedded`` and by ``volcanoweb.asgi`` when daphne serves it; idempotent.
"""

from __future__ import annotations

from typing import Any

URI_TOO_LONG = (
    b"HTTP/1.1 414 URI Too Long\r\nContent-Type: text/plain\r\nContent-Length: 30\r\nConnection: close\r\n\r\n"
    b"the request line is too long\r\n"
)
#: Close codes RFC 6455 defines for endpoints to send, which autobahn refuses from an application.
PROTOCOL_CLOSE_CODES = frozenset({1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011})


def _line_length_exceeded(self: Any, line: bytes) -> None:
    self.transport.write(URI_TOO_LONG)
    self.transport.loseConnection()


def apply() -> None:
    """Install both answers on the daphne and Twisted classes (once)."""
    from daphne.ws_protocol import WebSocketProtocol
    from twisted.web.http import HTTPChannel

    HTTPChannel.lineLengthExceeded = _line_length_exceeded  # type: ignore[method-assign]
    if getattr(WebSocketProtocol.serverClose, "_volcanoweb", False):
        return
    original = WebSocketProtocol.serverClose

    def server_close(self: Any, code: int | None = None) -> None:
        if code in PROTOCOL_CLOSE_CODES:
            self.sendCloseFrame(code=code, isReply=False)
            return
        original(self, code)

    server_close._volcanoweb = True  # type: ignore[attr-defined]
    WebSocketProtocol.serverClose = server_close


def listening_server(**kwargs: Any) -> Any:
    """A daphne ``Server`` (made with ``kwargs``) whose ``failures`` list the listeners that could not bind.

    daphne is imported here, not at the top: importing ``daphne.server`` installs Twisted's asyncio reactor.
    """
    from daphne.server import Server

    class ListeningServer(Server):  # type: ignore[misc]
        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            self.failures: list[str] = []

        def listen_error(self, failure: Any) -> None:
            self.failures.append(str(failure.getErrorMessage()))
            super().listen_error(failure)

    return ListeningServer(**kwargs)
