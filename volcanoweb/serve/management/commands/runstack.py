"""Start the production topology as native processes: ASGI server, Celery worker and beat."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from volcanoweb.core.dbsetup import ensure_database

#: Seconds uvicorn waits, once told to stop, for open connections (WebSockets) to finish before it
#: cancels them. Unbounded, a worker whose socket handler did not finish never exited: with its
#: supervisor killed after runstack's grace it stayed behind, holding its database connections.
GRACEFUL_SHUTDOWN = 5


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
            "--lifespan", "off", "--no-access-log", "--timeout-graceful-shutdown", str(GRACEFUL_SHUTDOWN),
        ]  # fmt: skip
    return [str(bindir / "daphne"), "-b", host, "-p", str(port), "volcanoweb.asgi:application"]


def live_port(port: int) -> int:
    """The port of the live processes (``LIVE_PORT``, else the web port + 1); 0 without live processes."""
    if settings.LIVE_WORKERS <= 0:
        return 0
    return int(settings.LIVE_PORT or port + 1)


def stack_commands(host: str, port: int, var_dir: Path) -> dict[str, list[str]]:
    """Return the command line of each stack process (docker-compose.yml runs the same ones)."""
    bindir = Path(sys.executable).parent
    live = live_port(port)
    commands = {
        "web": web_command(bindir, host, port, settings.WEB_SERVER, settings.WEB_WORKERS),
        # The dashboard's WebSockets in processes of their own (the same application; pages connect to LIVE_PORT).
        **({"live": web_command(bindir, host, live, "uvicorn", settings.LIVE_WORKERS)} if live else {}),
        # Controller work (job syncs, hooks) on the default queue; CONTROLLER_WORKERS processes of it.
        **{
            f"worker{n if n > 1 else ''}": [
                str(bindir / "celery"), "-A", "volcanoweb", "worker", "--pool=threads", "--concurrency=4",
                "--loglevel=INFO", "--without-gossip", "--without-mingle", "-n", f"worker{n if n > 1 else ''}@%h",
                "-Q", "celery",
            ]
            for n in range(1, settings.CONTROLLER_WORKERS + 1)
        },
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
    return commands


class Process(Protocol):
    """What the supervisor needs of a child process (``subprocess.Popen``)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def send_signal(self, sig: int) -> None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


class GroupProcess(subprocess.Popen[bytes]):
    """A child started as the leader of a process group of its own (``start_new_session``): what it starts
    (uvicorn's worker processes) is in that group, and :meth:`signal_group` reaches all of them, also once
    the leader is gone. So a master killed with SIGKILL leaves no orphaned worker holding the port."""

    def __init__(self, cmd: list[str], **kwargs: Any) -> None:
        super().__init__(cmd, start_new_session=True, **kwargs)

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to every process of the group (nothing when none is left)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def group_alive(self) -> bool:
        """Return True while a process of the group is alive (zombies count until reaped)."""
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _signal_group(proc: Process, sig: int) -> None:
    """Signal the process's group when it leads one (:class:`GroupProcess`), else the process alone."""
    signal_group = getattr(proc, "signal_group", None)
    if signal_group is not None:
        signal_group(sig)
    elif proc.poll() is None:
        proc.send_signal(sig)


def _group_alive(proc: Process) -> bool:
    group_alive = getattr(proc, "group_alive", None)
    return bool(group_alive()) if group_alive is not None else proc.poll() is None


@dataclass
class Child:
    """One supervised process: its command, the running process (None while waiting to restart)."""

    name: str
    cmd: list[str]
    proc: Process | None = None
    started_at: float = 0.0
    restarts: int = 0  # crashes in a row (reset after a run of ``Supervisor.reset_after`` seconds)
    restart_at: float | None = None
    exited: Process | None = None  # the last process that exited: its group must be gone before a restart


class Supervisor:
    """Keep every stack process running, as a supervisor would: a process that dies is restarted after a
    back-off (``base`` seconds, doubling per crash in a row up to ``cap``; a run of ``reset_after`` seconds
    forgets the crashes), logged each time, while the other processes keep serving."""

    def __init__(
        self,
        commands: dict[str, list[str]],
        *,
        spawn: Callable[[list[str]], Process],
        log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        base: float = 1.0,
        cap: float = 30.0,
        reset_after: float = 60.0,
    ) -> None:
        self.children = {name: Child(name, cmd) for name, cmd in commands.items()}
        self.spawn, self.log, self.clock = spawn, log, clock
        self.base, self.cap, self.reset_after = base, cap, reset_after

    def start(self, child: Child) -> None:
        """Start one child now."""
        child.proc = self.spawn(child.cmd)
        child.started_at, child.restart_at = self.clock(), None
        self.log(f"started {child.name} (pid {child.proc.pid}): {' '.join(child.cmd)}")

    def start_all(self) -> None:
        """Start every child."""
        for child in self.children.values():
            self.start(child)

    def delay(self, crashes: int) -> float:
        """Seconds before the restart after ``crashes`` crashes in a row (1, 2, 4, ... up to ``cap``)."""
        return float(min(self.cap, self.base * 2 ** max(0, crashes - 1)))

    def tick(self) -> None:
        """Notice exited children, kill what is left of their process group (a uvicorn master's workers)
        and schedule their restart; start those whose back-off is over and whose group is gone."""
        now = self.clock()
        for child in self.children.values():
            if child.proc is not None:
                code = child.proc.poll()
                if code is None:
                    continue
                _signal_group(child.proc, signal.SIGKILL)  # orphans would hold the port: the restart would fail
                if now - child.started_at >= self.reset_after:
                    child.restarts = 0
                child.restarts += 1
                wait = self.delay(child.restarts)
                child.exited, child.proc, child.restart_at = child.proc, None, now + wait
                self.log(
                    f"{child.name} exited with status {code}; restarting it in {wait:g}s (crash {child.restarts} "
                    "in a row; the rest of its process group was killed); the other processes keep running"
                )
            elif child.restart_at is not None and now >= child.restart_at:
                if child.exited is not None and _group_alive(child.exited):
                    _signal_group(child.exited, signal.SIGKILL)
                    continue  # the next tick looks again
                child.exited = None
                self.start(child)

    def stop_all(self, grace: float = 10.0) -> None:
        """SIGTERM every running child's process group, then SIGKILL what is left of them after ``grace``
        seconds (the groups of children that exited earlier too)."""
        running = [c.proc for c in self.children.values() if c.proc is not None and c.proc.poll() is None]
        for proc in running:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in running:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
        for child in self.children.values():
            for leftover in (child.proc, child.exited):
                if leftover is not None:
                    _signal_group(leftover, signal.SIGKILL)


class Command(BaseCommand):
    help = "Migrate, then run the ASGI server, the Celery workers and beat until interrupted, restarting any that dies."

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

        def log(message: str) -> None:
            self.stdout.write(message)
            self.stdout.flush()

        live = live_port(options["port"])
        if live:  # every process renders pages whose socket connects to the live processes
            os.environ["LIVE_PORT"] = str(live)
        supervisor = Supervisor(
            stack_commands(options["host"], options["port"], settings.VAR_DIR),
            spawn=lambda cmd: GroupProcess(cmd, env=os.environ.copy()),
            log=log,
        )
        supervisor.start_all()
        self.stdout.write(self.style.SUCCESS(f"volcanoweb stack is up at http://{options['host']}:{options['port']}/"))
        if live:
            workers = settings.LIVE_WORKERS
            self.stdout.write(f"live sockets: ws://{options['host']}:{live}/ws/live/ ({workers} process(es))")
        self.stdout.flush()
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            while not stopping:
                supervisor.tick()
                time.sleep(0.3)
        finally:
            supervisor.stop_all()
            self.stdout.write("stack stopped.")
