"""The full flow against a real ASGI server (daphne) with the loops in-process and the simulated cluster:
submit 01-pytorch-distributed.yaml on the Submit page and watch Pending → Running → Completed, no reload."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.browser.conftest import login, open_page, shot
from tests.e2e.procs import database_url, free_port, manage, running, wait_http

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "volcano-demo"


def _prepare() -> None:

    from volcanoweb.demo.services import seed_demo
    from volcanoweb.jobs.models import Job

    seed_demo()
    Job.objects.filter(namespace="ml", name="pytorch-distributed").delete()  # the test submits it itself


def test_submit_and_watch_a_job_complete_without_reload(browser: Any, tmp_path: Path) -> None:
    _prepare()
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path),
        "RUN_LOOPS_IN_PROCESS": "true",
        "CLUSTER_BACKEND": "sim",
        "SIM_CLOCK_SPEED": "1",
        "SIM_DEFAULT_DURATION": "8",
        "SCHEDULE_PERIOD": "0.5",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "DEBUG": "true",
    }
    cmd = manage("runembedded", "--no-seed", "--port", str(port))  # daphne with the loops in-process
    log_path = Path(__file__).resolve().parents[2] / "artifacts" / "live-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with running(cmd, env, log_path) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/healthz", proc=proc)
        context, page, guard = open_page(browser, base)
        try:
            login(page, "alice", PASSWORD)
            page.goto("/submit/")
            page.wait_for_selector("#live-status[data-state=live]", timeout=15000)
            page.get_by_label("Start from").select_option("01-pytorch-distributed.yaml")
            page.wait_for_selector("[data-dry-run=ok]")
            page.get_by_role("button", name="Apply").click()
            page.wait_for_url("**/jobs/ml/pytorch-distributed/")
            marker = page.evaluate("() => (window.__noReload = Math.random())")
            seen = []
            shot(page, "live-pending")
            for phase in ("Running", "Completed"):
                page.wait_for_function(
                    "p => { const el = document.querySelector('[data-phase]');"
                    " return el && el.textContent.trim() === p; }",
                    arg=phase,
                    timeout=120000,
                )
                seen.append(phase)
                shot(page, f"live-{phase.lower()}")
            assert page.evaluate("() => window.__noReload") == marker  # the page was never reloaded
            assert seen == ["Running", "Completed"]
            guard.check()
        finally:
            context.close()
