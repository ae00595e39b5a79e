"""`make run`: the embedded mode starts from the Makefile, seeds the demo and serves it."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.procs import free_port, running, wait_http

pytestmark = pytest.mark.e2e

EMBEDDED_ONLY = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CHANNELS_REDIS_URL")


def _login(client: httpx.Client, base: str, username: str, password: str) -> None:
    page = client.get(f"{base}/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    response = client.post(
        f"{base}/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": f"{base}/login/"},
    )
    assert response.status_code in (200, 302), response.text[:500]


def test_make_run_serves_the_seeded_demo(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in EMBEDDED_ONLY}
    env.update({"PORT": str(port), "HTTPS_PORT": str(free_port()), "VAR_DIR": str(tmp_path), "SIM_CLOCK_SPEED": "20"})
    log_path = tmp_path / "run.log"
    base = f"http://127.0.0.1:{port}"
    with running(["make", "--no-print-directory", "run"], env, log_path) as proc:
        wait_http(f"{base}/healthz", timeout=180, proc=proc)
        banner = log_path.read_text()
        assert f"volcanoweb is up at {base}/" in banner
        assert "alice / volcano-demo" in banner
        assert " INFO " not in banner, banner  # the URL, the logins and real problems only (issue 29, item 10)
        ready = httpx.get(f"{base}/readyz", timeout=10).json()
        assert ready["checks"]["database"]["vendor"] == "sqlite"
        assert ready["checks"]["redis"]["mode"] == "embedded"
        with httpx.Client(follow_redirects=True, timeout=20) as client:
            _login(client, base, "alice", "volcano-demo")
            queues = client.get(f"{base}/api/v1/queues").json()
            names = {item["metadata"]["name"] for item in queues["items"]}
            assert {"ml-team", "ml-training", "default", "root"} <= names
            jobs = client.get(f"{base}/api/v1/namespaces/ml/jobs").json()
            assert "pytorch-distributed" in {item["metadata"]["name"] for item in jobs["items"]}
            page = client.get(f"{base}/jobs/")
            assert page.status_code == 200
            assert "pytorch-distributed" in page.text
            # a page that is not there, one alice may not see: the browser shows the product's pages saying so,
            # the terminal nothing (they printed "Not Found: /path" twice each, "Forbidden: /path" twice)
            assert client.get(f"{base}/jobs/ml/no-such-job/").status_code == 404
            assert client.get(f"{base}/cycles/").status_code == 403
            # The insights recorder's writer thread records the in-process loop's cycles on SQLite too.
            timeline = f"{base}/api/v1/namespaces/ml/jobs/pytorch-distributed/timeline"
            deadline = time.monotonic() + 90
            entries: list[Any] = []
            while not entries and time.monotonic() < deadline:
                entries = client.get(timeline).json()["entries"]
                time.sleep(0.5)
            assert entries, "no cycle of the embedded loop was recorded"
        assert "recording insights of cycle" not in log_path.read_text()
        terminal = log_path.read_text()
        assert " INFO " not in terminal  # no per-task, per-login or per-loop lines
        assert "Not Found" not in terminal, terminal
        assert "Forbidden" not in terminal, terminal
        # The seed runs once: a second start must not duplicate anything.
    with running(["make", "--no-print-directory", "run"], env, tmp_path / "run2.log") as proc:
        wait_http(f"{base}/healthz", timeout=120, proc=proc)
        time.sleep(0.5)
        assert "demo logins" in (tmp_path / "run2.log").read_text()
    assert (tmp_path / "db.sqlite3").exists()


@pytest.mark.parametrize("taken", ["http", "https"])
def test_a_port_in_use_stops_the_command_with_its_reason_and_a_failing_code(tmp_path: Path, taken: str) -> None:
    """daphne logged a listener it could not bind and stopped as after Ctrl-C: the command exited 0, silently."""
    import socket
    import subprocess

    from tests.e2e.procs import manage

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        port, https_port = (busy, free_port()) if taken == "http" else (free_port(), busy)
        env = {k: v for k, v in os.environ.items() if k not in EMBEDDED_ONLY}
        env.update({"VAR_DIR": str(tmp_path), "RUN_LOOPS_IN_PROCESS": "false"})
        args = ["runembedded", "--no-seed", "--port", str(port), "--https-port", str(https_port)]
        done = subprocess.run(
            manage(*args), cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True, timeout=180
        )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert f"cannot listen: Couldn't listen on 127.0.0.1:{busy}" in done.stderr, done.stderr
    assert "set PORT or HTTPS_PORT to another port" in done.stderr
    assert "volcanoweb is up" not in done.stdout
