"""`make stack` topology: ASGI server, Celery worker and beat on PostgreSQL and Redis."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import httpx
import pytest
import websocket
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from tests.e2e.procs import database_url, free_port, manage, running, wait_http
from volcanoweb.live import groups

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_stack_serves_runs_celery_and_pushes_channels_messages(tmp_path: Path) -> None:
    if settings.EMBEDDED:
        pytest.skip("needs REDIS_URL (make test provides it)")
    port, live = free_port(), free_port()
    env = {
        "LIVE_PORT": str(live),
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path),
        "DEBUG": "true",
        "SCHEDULE_PERIOD": "1",
    }
    with running(manage("runstack", "--port", str(port)), env, tmp_path / "stack.log") as proc:
        ready = wait_http(f"http://127.0.0.1:{port}/readyz", proc=proc)
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"]["database"]["vendor"] == settings.DATABASES["default"]["ENGINE"].split(".")[-1]

        # A Celery round trip through the Redis broker to the real worker.
        from volcanoweb.celery import app

        app.conf.task_always_eager = False
        assert app.send_task("volcanoweb.ping").get(timeout=60) == "pong"

        # A Channels message through Redis to a real WebSocket client of the ASGI server.
        user = get_user_model().objects.create_user("wsuser", password="pw-123456")
        client = Client()
        client.force_login(user)
        cookie = f"sessionid={client.cookies['sessionid'].value}"
        # Pages come from the web processes and open their socket on the live processes' port.
        page = httpx.get(f"http://127.0.0.1:{port}/", headers={"Cookie": cookie})
        assert f'data-live-port="{live}"' in page.text
        assert f"ws://127.0.0.1:{live}" in page.headers["Content-Security-Policy"]
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{live}/ws/live/",
            header=[f"Cookie: {cookie}"],
            origin=f"http://127.0.0.1:{port}",
            timeout=20,
        )
        try:
            async_to_sync(get_channel_layer().group_send)(
                groups.cluster_group(), {"type": "live.message", "payload": {"kind": "ping", "n": 1}}
            )
            # The stack's own work (node sync, cycles) also broadcasts to the cluster group: skip to ours.
            # Frames are {"kind": "changes", "items": [...]}.
            found: list[dict[str, object]] = []
            for _ in range(200):
                frame = json.loads(ws.recv())
                found = [m for m in frame.get("items", [frame]) if m.get("kind") == "ping"]
                if found:
                    break
            assert found == [{"kind": "ping", "n": 1}]
        finally:
            ws.close()

        # The stack's cycles are recorded (by default by the insights writer thread of the periodic worker, which sets
        # each recorded run's record_ms after the cycle saved it as 0).
        from volcanoweb.insights.models import CycleInput
        from volcanoweb.scheduling.models import SchedulingRun

        deadline = time.monotonic() + 60
        while not SchedulingRun.objects.filter(record_ms__gt=0).exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        recorded = SchedulingRun.objects.filter(record_ms__gt=0).order_by("-pk").first()
        assert recorded is not None, "no cycle of the stack was recorded"
        assert CycleInput.objects.filter(run_id=recorded.pk).exists()

        # kill -9 of the controller worker: the web keeps serving, the worker is restarted with back-off.
        log_text = (tmp_path / "stack.log").read_text()
        worker_pid = int(re.search(r"started worker \(pid (\d+)\)", log_text).group(1))  # type: ignore[union-attr]
        os.kill(worker_pid, signal.SIGKILL)
        for _ in range(100):
            if "worker exited with status -9; restarting it in" in (tmp_path / "stack.log").read_text():
                break
            time.sleep(0.1)
        assert wait_http(f"http://127.0.0.1:{port}/healthz", proc=proc).status_code == 200
        assert proc.poll() is None
        assert app.send_task("volcanoweb.ping").get(timeout=60) == "pong"  # served by the restarted worker
        assert len(re.findall(r"started worker \(pid \d+\)", (tmp_path / "stack.log").read_text())) == 2
    log = (tmp_path / "stack.log").read_text()
    for role in ("web", "live", "worker", "beat"):
        assert f"started {role}" in log
