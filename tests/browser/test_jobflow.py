"""JobFlows (issue 29, item 7): the Submit page offers a JobFlow with its JobTemplates, and the flow's page follows
its phase live (Pending → Running → Succeed) as its steps complete, without a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import login, open_page, shot
from tests.browser.embedded import embedded_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "volcano-demo"


def test_the_jobflow_template_runs_and_its_page_follows_the_phase_live(browser: Any, tmp_path: Path) -> None:
    from volcanoweb.demo.services import seed_demo
    from volcanoweb.jobs.models import Job

    seed_demo()
    Job.objects.all().delete()
    with embedded_server(tmp_path, "jobflow-server", SIM_DEFAULT_DURATION="2", CONTROLLER_RESYNC_PERIOD="1") as base:
        context, page, guard = open_page(browser, base)
        try:
            login(page, "carol", PASSWORD)  # tenant admin of data: the flow's queue is data-processing
            page.goto("/submit/")
            page.get_by_label("Start from").select_option("15-jobflow-etl.yaml")
            page.wait_for_function("() => document.getElementById('ns-input').value === 'data'")
            page.wait_for_selector("[data-dry-run=ok]")
            dry = page.locator("#dry-run").inner_text()
            assert "JobFlow" in dry
            assert dry.count("JobTemplate") == 3
            page.get_by_role("button", name="Apply").click()
            page.locator("#dry-run").get_by_text("Applied.").wait_for(timeout=15000)
            applied = page.locator("#dry-run").inner_text()
            assert "JobFlow data/etl created" in applied, applied
            response = page.goto("/jobflows/data/etl/")
            assert response is not None
            assert response.status == 200, page.locator("body").inner_text()[:500]
            page.wait_for_selector("#live-status[data-state=live]", timeout=15000)
            marker = page.evaluate("() => (window.__noReload = Math.random())")
            seen = []
            for phase in ("Running", "Succeed"):
                page.wait_for_function(
                    "p => { const el = document.querySelector('[data-flow-phase]');"
                    " return el && el.textContent.trim() === p; }",
                    arg=phase,
                    timeout=90000,
                )
                seen.append(phase)
            assert seen == ["Running", "Succeed"]
            # the graph is a region of its own, refreshed by the same changes as the phase but by its own request
            # (queued behind one in flight): it follows shortly after, not necessarily before the phase
            page.wait_for_function(
                "() => (document.getElementById('flow-dag').innerText.match(/Completed/g) || []).length === 3",
                timeout=30000,
            )
            assert page.evaluate("() => window.__noReload") == marker  # no reload
            dag = page.locator("#flow-dag").inner_text()
            assert dag.count("Completed") == 3
            shot(page, "jobflow-succeeded")
            page.emulate_media(color_scheme="dark")
            shot(page, "jobflow-succeeded-dark")
            guard.check()
        finally:
            context.close()
