"""``make run``'s embedded server (daphne with the loops in-process, the simulated cluster) on the test database,
for browser tests that need the controllers and the scheduler running."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from tests.e2e.procs import database_url, free_port, manage, running, wait_http


@contextlib.contextmanager
def embedded_server(tmp_path: Path, log_name: str, **env: str) -> Iterator[str]:
    """Yield the base URL of a running embedded server; ``env`` adds or overrides its environment."""
    port = free_port()
    full = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path),
        "RUN_LOOPS_IN_PROCESS": "true",
        "CLUSTER_BACKEND": "sim",
        "SIM_CLOCK_SPEED": "1",
        "SIM_DEFAULT_DURATION": "6",
        "SCHEDULE_PERIOD": "0.5",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        **env,
    }
    log_path = Path(__file__).resolve().parents[2] / "artifacts" / f"{log_name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with running(manage("runembedded", "--no-seed", "--port", str(port), "--https-port", "0"), full, log_path) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/healthz", proc=proc)
        yield base
