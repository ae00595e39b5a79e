"""Start and stop real server processes for end-to-end tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url(db_settings: Mapping[str, object]) -> str:
    """Return a DATABASE_URL for Django's DATABASES entry (the test database, under pytest)."""
    if str(db_settings["ENGINE"]).endswith("sqlite3"):  # Django's, or volcanoweb.core.backends.sqlite3
        return f"sqlite:///{db_settings['NAME']}"
    user = db_settings.get("USER") or "postgres"
    password = f":{db_settings['PASSWORD']}" if db_settings.get("PASSWORD") else ""
    host = db_settings.get("HOST") or "127.0.0.1"
    port = db_settings.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db_settings['NAME']}"


def wait_http(url: str, timeout: float = 60.0, proc: subprocess.Popen[str] | None = None) -> httpx.Response:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            response = httpx.get(url, timeout=2)
            if response.status_code < 500:
                return response
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout}s: {last}")


@contextlib.contextmanager
def running(cmd: list[str], env: Mapping[str, str], log_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Run a command in its own process group; stop the whole group afterwards."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=dict(env), stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            yield proc
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
            left = _group_left(proc.pid, patience=15.0)
            if left:  # a child (an ASGI worker, a Celery process) did not stop when told: a bug of the stack
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                raise AssertionError(f"processes of {cmd[:3]} still running after SIGTERM: {left}")


def _group_left(pgid: int, patience: float) -> list[str]:
    """Return the command lines of the process group's members still alive after ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) != pgid:
                    continue
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    left.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
            except (OSError, ProcessLookupError):
                continue
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def manage(*args: str) -> list[str]:
    return [sys.executable, "manage.py", *args]
