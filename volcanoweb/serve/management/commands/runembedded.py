"""Set up and start the whole product in one process (the embedded mode)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from volcanoweb.runtime.informer import Runner
from volcanoweb.serve.loops import LocalDrain, LoopRunner

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Migrate, seed the demo once, and serve HTTP + WebSockets with the loops running in-process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-seed", action="store_true", help="do not create the demo data")
        parser.add_argument(
            "--https-port",
            type=int,
            default=None,
            help="HTTPS port for kubectl (self-signed certificate under var/tls; default $HTTPS_PORT or PORT+443;"
            " 0 = none)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from volcanoweb.core import daphnecompat

        daphnecompat.apply()  # a 414 for overlong request lines; WebSocket close codes 1008/1009 as uvicorn sends

        from volcanoweb.asgi import application

        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", interactive=False, verbosity=0)
        logins = [] if options["no_seed"] else seed()
        runner = LoopRunner() if settings.RUN_LOOPS_IN_PROCESS else None
        drain = start_local_drain() if runner else None
        informer = Runner().start() if runner else None  # the controllers learn of changes from the log
        if runner:
            runner.start()
        host, port = options["host"], options["port"]
        endpoints, url = listeners(host, port, options["https_port"])

        def ready() -> None:
            self.stdout.write(self.style.SUCCESS(f"volcanoweb is up at {url}"))
            mode = "embedded (SQLite, in-memory channel layer)" if settings.EMBEDDED else "stack services"
            self.stdout.write(f"mode: {mode}; cluster backend: {settings.CLUSTER_BACKEND}")
            for line in logins:
                self.stdout.write(f"  {line}")
            self.stdout.write("Press Ctrl-C to stop.")
            self.stdout.flush()

        server = daphnecompat.listening_server(
            application=application,
            endpoints=endpoints,
            ready_callable=ready,
            verbosity=0,
            application_close_timeout=5,
        )
        try:
            server.run()
        except OSError as exc:
            raise CommandError(f"cannot listen on {host}:{port}: {exc}; set PORT to another port") from exc
        finally:
            if runner:
                runner.stop()
            if informer:
                informer.stop()
            if drain:
                stop_local_drain(drain)
            self.stdout.write("stopped.")
        if server.failures:  # daphne stops its reactor on a listen failure and returns as after Ctrl-C
            raise CommandError(f"cannot listen: {'; '.join(server.failures)}; set PORT or HTTPS_PORT to another port")


def seed() -> list[str]:
    """Create the demo data (once: the seed skips what exists); return the lines that list its logins."""
    from volcanoweb.demo.services import logins as demo_logins
    from volcanoweb.demo.services import seed_demo

    seed_demo()
    return ["demo logins:", *demo_logins()]


def listeners(host: str, port: int, https_port: int | None) -> tuple[list[str], str]:
    """Daphne's endpoints (HTTP, and HTTPS for kubectl unless its port is 0) and the URL to announce.

    ``https_port`` None: ``$HTTPS_PORT``, else ``port + 443``. The HTTPS listener uses a self-signed
    certificate under ``settings.TLS_DIR`` and is remembered in ``settings.HTTPS_PORT`` (kubeconfigs point at it).
    """
    from daphne.endpoints import build_endpoint_description_strings

    url = f"http://{host}:{port}/"
    if https_port is None:
        https_port = settings.HTTPS_PORT if settings.HTTPS_PORT is not None else port + 443
    endpoints = build_endpoint_description_strings(host=host, port=port)
    if https_port and https_port < 65536:
        from volcanoweb.core.tls import certificate_hosts, ensure_self_signed, https_endpoint

        cert, key = ensure_self_signed(settings.TLS_DIR, certificate_hosts(host, settings.ALLOWED_HOSTS))
        endpoints.append(https_endpoint(host, https_port, cert, key))
        settings.HTTPS_PORT = https_port  # generated kubeconfigs point at this listener
        url += f" (kubectl: https://{host}:{https_port}, see `vcctl kubeconfig`)"
    return endpoints, url


def start_local_drain() -> LocalDrain:
    """Run the job syncs and queue syncs that requests and loops ask for in a thread of their own
    (``serve.loops.LocalDrain``)."""
    from volcanoweb.runtime import dispatch, services

    drain = LocalDrain(
        lambda ids: services.sync_jobs(ids),
        batch=dispatch.BATCH,
        sync_queues=services.sync_queues,
        queue_sync_delay=float(settings.CONTROLLER_QUEUE_SYNC_DELAY),
    )
    dispatch.set_local_sink(drain.request)
    dispatch.set_local_queue_sync(drain.request_queue_sync)
    drain.start()
    return drain


def stop_local_drain(drain: LocalDrain) -> None:
    """Stop the drain (ids still queued are picked up by the resync after a restart)."""
    from volcanoweb.runtime import dispatch

    dispatch.set_local_sink(None)
    dispatch.set_local_queue_sync(None)
    drain.stop()
