"""WebSocket clients of two web processes see the same changes in the same order: each process reads the
one change log (ADR 0024), so the order is the log's, not each process's own (issue 26)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

import pytest
import websocket
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from tests.e2e.procs import ROOT, database_url, free_port, running, wait_http
from volcanoweb.jobs.models import PriorityClass

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
CHANGES = 40


def _web(port: int) -> list[str]:
    return [str(ROOT / ".venv" / "bin" / "uvicorn"), "volcanoweb.asgi:application", "--port", str(port)]


def test_two_web_processes_deliver_the_same_order(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path),
        "DEBUG": "true",
    }
    ports = [free_port(), free_port()]
    user = get_user_model().objects.create_user("order", password="pw-123456")
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    with contextlib.ExitStack() as stack:
        for i, port in enumerate(ports):
            proc = stack.enter_context(running(_web(port), env, tmp_path / f"web{i}.log"))
            wait_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        sockets = [
            websocket.create_connection(
                f"ws://127.0.0.1:{port}/ws/live/", header=[f"Cookie: {cookie}"], origin=f"http://127.0.0.1:{port}"
            )
            for port in ports
        ]
        seen: list[list[str]] = [[], []]

        def read(k: int) -> None:
            ws = sockets[k]
            ws.settimeout(1.0)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(seen[k]) < CHANGES:
                try:
                    frame = json.loads(ws.recv())
                except websocket.WebSocketTimeoutException:
                    continue
                for item in frame.get("items", []):
                    if item.get("kind") == "priorityclass" and str(item.get("id", "")).startswith("order-"):
                        seen[k].append(item["id"])

        for ws in sockets:
            ws.send(json.dumps({"kind": "subscribe", "topics": [["priorityclass", "order-"]]}))
            assert json.loads(ws.recv())["kind"] == "subscribed"
        readers = [threading.Thread(target=read, args=(k,)) for k in range(2)]
        for reader in readers:
            reader.start()
        written = []
        for n in range(CHANGES):  # one commit each, from a third process's point of view (this one)
            PriorityClass.objects.create(name=f"order-{n:03d}", value=n)
            written.append(f"order-{n:03d}")
        for reader in readers:
            reader.join(70)
        for ws in sockets:
            ws.close()
    assert seen[0] == written, seen[0]
    assert seen[1] == written, seen[1]
