"""Where a page's live socket connects: its own origin, or the stack's live processes (LIVE_PORT), which the
page's Content-Security-Policy then allows, and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def _connect_src(response: Any) -> list[str]:
    policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";") if part.strip())
    return policy["connect-src"].split()


def test_a_page_opens_its_socket_on_its_own_origin_by_default(client_for: Any, cast: Any, settings: Any) -> None:
    settings.LIVE_PORT = 0
    response = client_for(cast.alice).get("/")
    assert response.status_code == 200
    assert b"data-live-port" not in response.content
    assert _connect_src(response) == ["'self'"]


def test_a_page_opens_its_socket_on_the_live_processes_port(client_for: Any, cast: Any, settings: Any) -> None:
    settings.LIVE_PORT = 8123
    settings.ALLOWED_HOSTS = ["volcano.example", "[::1]", "testserver"]
    response = client_for(cast.alice).get("/", HTTP_HOST="volcano.example:8000")
    assert b'data-live-port="8123"' in response.content
    assert _connect_src(response) == ["'self'", "ws://volcano.example:8123"]
    secure = client_for(cast.alice).get("/", HTTP_HOST="[::1]:8000", secure=True)
    assert _connect_src(secure) == ["'self'", "wss://[::1]:8123"]
    api = client_for(cast.alice).get("/api/v1/queues")  # not a page: no socket, no origin added
    assert "ws://" not in api.get("Content-Security-Policy", "")
