"""Headless Chromium through Playwright's sync API, against a real ASGI server (daphne) on the test database.

Installs nothing: uses CHROMIUM_PATH or /usr/bin/chromium (scripts/ensure-chromium.sh installs it).
Every page fixture records console errors and any request leaving the app's origin; the test fails
on either. Screenshots go to artifacts/screenshots/<page>.png.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.browser.asgi_server import AsgiServer

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    path = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    if not Path(path).exists():
        pytest.fail(f"Chromium not found at {path}: run scripts/ensure-chromium.sh or set CHROMIUM_PATH")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=path, args=ARGS)
        yield chromium
        chromium.close()


class Guard:
    """Console errors and off-origin requests seen by one page."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.errors: list[str] = []
        self.outside: list[str] = []

    def check(self) -> None:
        assert not self.outside, f"requests outside the app: {self.outside}"
        assert not self.errors, f"console errors: {self.errors}"


def _expected(text: str) -> bool:
    """Console errors that are not failures: a WebSocket reconnect, and htmx reporting a request it
    aborted because a newer one replaced it (hx-sync; server errors still show as responseError)."""
    return "WebSocket" in text or text.startswith(("htmx:sendAbort", "htmx:afterRequest"))


def open_page(browser: Any, base_url: str, *, width: int = 1400, height: int = 900) -> tuple[Any, Any, Guard]:
    """Return (context, page, guard) with the origin guard installed."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base_url))
    guard = Guard(origin)
    context = browser.new_context(viewport={"width": width, "height": height}, base_url=base_url)

    def route(r: Any) -> None:
        url = r.request.url
        parts = urlsplit(url)
        if (
            parts.scheme in ("data", "blob", "about")
            or f"{parts.scheme}://{parts.netloc}" == origin
            or (parts.scheme in ("ws", "wss") and parts.netloc == urlsplit(origin).netloc)
        ):
            r.continue_()
        else:
            guard.outside.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on(
        "console",
        lambda msg: guard.errors.append(msg.text) if msg.type == "error" and not _expected(msg.text) else None,
    )
    page.on("pageerror", lambda exc: guard.errors.append(str(exc)))
    page.on(
        "websocket",
        lambda ws: None if urlsplit(ws.url).netloc == urlsplit(origin).netloc else guard.outside.append(ws.url),
    )
    return context, page, guard


@pytest.fixture(scope="session")
def asgi_server(django_db_setup: Any, django_db_blocker: Any) -> Iterator[AsgiServer]:
    """The project's ASGI application (pages, static files, WebSocket) in a daphne process."""
    with django_db_blocker.unblock():
        server = AsgiServer().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _fast_passwords(request: pytest.FixtureRequest) -> None:
    """Users of a test served by the forked server get the fast test hash, which that server verifies: PBKDF2 at
    production strength costs ~0.5 s per user created and per login. A test against the embedded server (the
    product's own settings) keeps the product's hashers."""
    if "asgi_server" in request.fixturenames:
        from tests.volcanoweb.conftest import FAST_HASHERS

        request.getfixturevalue("settings").PASSWORD_HASHERS = FAST_HASHERS


@pytest.fixture
def session(browser: Any, asgi_server: AsgiServer, transactional_db: Any) -> Iterator[tuple[Any, Guard]]:
    context, page, guard = open_page(browser, asgi_server.url)
    yield page, guard
    context.close()


def login(page: Any, username: str, password: str) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/login/" not in url)


def shot(page: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
