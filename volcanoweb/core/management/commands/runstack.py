"""Start the production topology as native processes: ASGI server, Celery worker and beat."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from volcanoweb.core.dbsetup import ensure_database


def web_command(bindir: Path, host: str, port: int, server: str, workers: int) -> list[str]:
    """Return the ASGI server's command line: uvicorn with ``workers`` processes, or daphne (one process).

    Both serve HTTP and the WebSockets; the channel layer (Redis) joins the uvicorn worker processes.
    Django runs every sync view under the GIL of its process, so one process serves at most about one
    core's worth of requests: with 20 clients applying jobs, two uvicorn workers answered ~35 requests/s
    where daphne answered ~24 (docs/performance.md).
    """
    if server == "uvicorn":
        return [
            str(bindir / "uvicorn"), "volcanoweb.asgi:application", "--host", host, "--port", str(port),
            "--workers", str(workers), "--loop", "uvloop", "--http", "httptools", "--ws", "websockets-sansio",
            "--lifespan", "off", "--no-access-log",
        ]  # fmt: skip
    return [str(bindir / "daphne"), "-b", host, "-p", str(port), "volcanoweb.asgi:application"]


def stack_commands(host: str, port: int, var_dir: Path) -> dict[str, list[str]]:
    """Return the command line of each stack process (docker-compose.yml runs the same ones)."""
    bindir = Path(sys.executable).parent
    return {
        "web": web_command(bindir, host, port, settings.WEB_SERVER, settings.WEB_WORKERS),
        # Controller work (job syncs, hooks) on the default queue.
        "worker": [
            str(bindir / "celery"), "-A", "volcanoweb", "worker", "--pool=threads", "--concurrency=4",
            "--loglevel=INFO", "--without-gossip", "--without-mingle", "-n", "worker@%h", "-Q", "celery",
        ],
        # Periodic work (scheduling cycle, backend sync, resync) on its own queue and process, so that
        # it never waits behind a burst of controller tasks (settings.CELERY_TASK_ROUTES).
        "scheduler": [
            str(bindir / "celery"), "-A", "volcanoweb", "worker", "--pool=threads", "--concurrency=3",
            "--loglevel=INFO", "--without-gossip", "--without-mingle", "-n", "scheduler@%h", "-Q", "periodic",
        ],
        "beat": [
            str(bindir / "celery"), "-A", "volcanoweb", "beat", "--loglevel=INFO",
            "--schedule", str(var_dir / "celerybeat-schedule"),
        ],
    }  # fmt: skip


class Command(BaseCommand):
    help = "Migrate, then run the ASGI server, a Celery worker and Celery beat until interrupted."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--seed", action="store_true", help="create the demo data if missing")

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.EMBEDDED:
            raise CommandError("REDIS_URL: must be set for the stack mode (e.g. redis://127.0.0.1:6379/0)")
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        if ensure_database():
            self.stdout.write(f"created database {settings.DATABASES['default']['NAME']}")
        call_command("migrate", interactive=False, verbosity=0)
        if options["seed"]:
            call_command("seed_demo", verbosity=0)
        procs: dict[str, subprocess.Popen[bytes]] = {}
        for name, cmd in stack_commands(options["host"], options["port"], settings.VAR_DIR).items():
            procs[name] = subprocess.Popen(cmd, env=os.environ.copy())
            self.stdout.write(f"started {name} (pid {procs[name].pid}): {' '.join(cmd)}")
        self.stdout.write(self.style.SUCCESS(f"volcanoweb stack is up at http://{options['host']}:{options['port']}/"))
        self.stdout.flush()
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            while not stopping:
                for name, proc in procs.items():
                    if proc.poll() is not None:
                        self.stderr.write(f"{name} exited with status {proc.returncode}; stopping the stack")
                        stopping = True
                time.sleep(0.3)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            for proc in procs.values():
                try:
                    proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
            self.stdout.write("stack stopped.")
