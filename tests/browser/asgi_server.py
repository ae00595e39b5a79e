"""A real ASGI server (daphne, in a forked process) serving the test database, for the browser tests.

pytest-django's ``live_server`` is a WSGI thread: pages load but their WebSocket cannot connect, so
every screenshot showed "Offline" and no page test saw a live update. This server runs the project's
ASGI application (HTTP, static files and the WebSocket) on the test database and the test Redis; tests
that use it need committed data (``transactional_db``), as with ``live_server``.
"""

from __future__ import annotations

from typing import Any

_INHERITED: list[Any] = []


def _child_setup() -> None:
    """In the forked child: drop the parent's database connections without closing them.

    Closing (or garbage-collecting) them would send the server a Terminate on sockets the parent still
    uses; the child opens its own connections instead. The child runs no controllers (no informer): a test
    whose jobs must run uses the embedded server (``tests/browser/embedded.py``), the product's own loops.

    The child also verifies the fast test hash (``FAST_HASHERS``) that the tests served by it give their users
    (``tests/browser/conftest.py``), beside the product's own hashers."""
    from django.conf import settings
    from django.db import connections
    from django.test import override_settings

    from tests.volcanoweb.conftest import FAST_HASHERS

    # override_settings (not an assignment) so that Django clears the hasher caches the fork inherited
    override_settings(PASSWORD_HASHERS=[*FAST_HASHERS, *settings.PASSWORD_HASHERS]).enable()

    for conn in connections.all(initialized_only=True):
        _INHERITED.append(conn.connection)
        conn.connection = None


def _application() -> Any:
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from volcanoweb.asgi import application

    return ASGIStaticFilesHandler(application)


class AsgiServer:
    """A daphne process on a free port; ``url`` is its base URL."""

    def __init__(self) -> None:
        from daphne.testing import DaphneProcess

        self.process = DaphneProcess("127.0.0.1", _application, setup=_child_setup)
        self.url = ""

    def start(self, timeout: float = 30.0) -> AsgiServer:
        self.process.start()
        if not self.process.ready.wait(timeout):
            detail = "" if self.process.errors.empty() else self.process.errors.get(False)[1]
            self.stop()
            raise RuntimeError(f"daphne did not start within {timeout} s {detail}")
        self.url = f"http://127.0.0.1:{self.process.port.value}"
        return self

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(10)
