"""An open page whose job a colleague deletes says so once (issue 29, item 3), with DEBUG on as under `make run`:
its live partials get a small fragment, never Django's technical 404 page."""

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
JOB = "/jobs/ml/pytorch-distributed/"


def test_a_job_deleted_by_a_colleague_says_so_once_on_its_open_page(browser: Any, tmp_path: Path) -> None:
    from volcanoweb.demo.services import seed_demo

    seed_demo()
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path),
        "RUN_LOOPS_IN_PROCESS": "true",
        "CLUSTER_BACKEND": "sim",
        "SCHEDULE_PERIOD": "0.5",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "DEBUG": "true",  # as `make run`: Django would show its technical pages
    }
    log_path = Path(__file__).resolve().parents[2] / "artifacts" / "deleted-object-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with running(manage("runembedded", "--no-seed", "--port", str(port)), env, log_path) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/healthz", proc=proc)
        alice_context, alice, guard = open_page(browser, base)
        bob_context, bob, _ = open_page(browser, base)
        try:
            login(alice, "alice", PASSWORD)
            alice.goto(JOB)
            alice.wait_for_selector("#live-status[data-state=live]", timeout=15000)
            login(bob, "bob", PASSWORD)
            bob.goto(JOB)
            bob.get_by_role("group", name="Job actions").get_by_role("button", name="Delete").click()
            dialog = bob.get_by_role("dialog")
            dialog.wait_for()
            dialog.get_by_role("button", name="Delete").click()
            bob.wait_for_url("**/jobs/")
            assert "Deleted ml/pytorch-distributed." in bob.locator("#flash").inner_text()

            notice = alice.locator("#gone-notice")
            notice.wait_for(timeout=20000)
            text = notice.inner_text()
            assert text.startswith("This job (ml/pytorch-distributed) was deleted by bob at "), text
            alice.wait_for_timeout(1500)  # every live region has had its answer
            assert alice.locator("#gone-notice").count() == 1  # said once
            body = alice.locator("body").inner_text()
            assert "Page not found (404)" not in body
            assert "URLconf" not in body
            assert "Traceback" not in body
            height = alice.evaluate("() => document.documentElement.scrollHeight")
            assert height < 3000, height
            assert alice.locator("[data-gone=job]").count() >= 1
            shot(alice, "job-deleted-while-open")
            alice.emulate_media(color_scheme="dark")
            shot(alice, "job-deleted-while-open-dark")
            guard.check()
        finally:
            alice_context.close()
            bob_context.close()
