"""A Failed job's page explains itself in events (issue 29, item 4): the pod's exit (code, reason, restarts) and
the final phase change, live, on the embedded server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.browser.conftest import login, open_page, shot
from tests.browser.embedded import embedded_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "volcano-demo"


def test_a_job_whose_pod_exits_1_shows_why_it_failed(browser: Any, tmp_path: Path) -> None:
    from volcanoweb.demo.services import seed_demo
    from volcanoweb.jobs.models import Job

    seed_demo()
    Job.objects.all().delete()
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "exits-1", "namespace": "ml", "annotations": {"sim.volcanoweb.io/exit-code": "1"}},
        "spec": {
            "queue": "ml-training",
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
                }
            ],
        },
    }
    with embedded_server(tmp_path, "failed-job-server", SIM_DEFAULT_DURATION="2", DEBUG="true") as base:
        context, page, guard = open_page(browser, base)
        try:
            login(page, "alice", PASSWORD)
            page.goto("/submit/")
            page.get_by_label("Manifest YAML").fill(yaml.safe_dump(manifest, sort_keys=False))
            page.wait_for_selector("#dry-run .verdict")
            page.get_by_role("button", name="Apply").click()
            page.wait_for_url("**/jobs/ml/exits-1/")
            page.wait_for_function(
                "() => { const el = document.querySelector('[data-phase]');"
                " return el && el.textContent.trim() === 'Failed'; }",
                timeout=90000,
            )
            events = page.locator("#job-events")
            events.get_by_text("JobFailed").wait_for(timeout=15000)
            text = events.inner_text()
            assert "No events yet" not in text
            assert "pod exits-1-w-0 of task w exited with code 1 (Error), 0 restarts" in text
            assert "job Running → Failed: 1 failed; retries 0 of 3" in text
            # the actions follow the phase live: a finished job offers Run again, no Suspend
            page.get_by_role("group", name="Job actions").get_by_role("button", name="Run again").wait_for(
                timeout=15000
            )
            page.reload()
            assert page.get_by_role("button", name="Compute suggestions").count() == 0  # nothing to get running
            shot(page, "job-failed-events")
            page.emulate_media(color_scheme="dark")
            shot(page, "job-failed-events-dark")
            page.emulate_media(color_scheme="light")
            # deleted, then submitted again under the same name without the failing exit code: a new job, whose
            # events are its own (the old job's exit and JobFailed showed on its page, matched by name)
            page.get_by_role("group", name="Job actions").get_by_role("button", name="Delete").click()
            page.get_by_role("dialog").get_by_role("button", name="Delete").click()
            page.wait_for_url("**/jobs/")
            del manifest["metadata"]["annotations"]
            page.goto("/submit/")
            page.get_by_label("Manifest YAML").fill(yaml.safe_dump(manifest, sort_keys=False))
            page.wait_for_selector("#dry-run .verdict")
            page.get_by_role("button", name="Apply").click()
            page.wait_for_url("**/jobs/ml/exits-1/")
            page.wait_for_function(
                "() => { const el = document.querySelector('[data-phase]');"
                " return el && el.textContent.trim() === 'Completed'; }",
                timeout=90000,
            )
            events = page.locator("#job-events")
            events.get_by_text("JobCompleted").wait_for(timeout=15000)
            again = events.inner_text()
            assert "exited with code 1" not in again, again
            assert "JobFailed" not in again, again
            guard.check()
        finally:
            context.close()
