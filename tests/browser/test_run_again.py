"""Re-running a finished job runs it (issue 29, item 2): the Submit dry run says plainly that applying the same
manifest would run nothing, and the job page's Run again makes a new job from the same spec."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PASSWORD, demo  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _fail_the_demo_job() -> None:
    from volcanoweb.jobs.models import Job

    Job.objects.filter(namespace="ml", name="pytorch-distributed").update(phase="Failed")


def test_the_dry_run_of_a_finished_jobs_manifest_says_nothing_would_run(session: Any, demo: None) -> None:  # noqa: F811
    _fail_the_demo_job()
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/submit/")
    page.get_by_label("Start from").select_option("01-pytorch-distributed.yaml")  # the demo applied it already
    page.wait_for_selector("[data-dry-run=ok] .verdict")
    text = page.locator("#dry-run").inner_text()
    assert "Nothing would run: ml/pytorch-distributed has finished (Failed)" in text
    assert "use Run again on its page" in text
    assert "Would be admitted" not in text
    shot(page, "submit-finished-job-nothing-runs")
    page.emulate_media(color_scheme="dark")
    shot(page, "submit-finished-job-nothing-runs-dark")
    page.emulate_media(color_scheme="light")
    page.get_by_role("link", name="Open ml/pytorch-distributed").click()
    page.wait_for_url("**/jobs/ml/pytorch-distributed/")
    guard.check()


def test_run_again_makes_a_new_job_from_the_same_spec(session: Any, demo: None) -> None:  # noqa: F811
    from volcanoweb.jobs.models import Job

    _fail_the_demo_job()
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/jobs/ml/pytorch-distributed/")
    actions = page.get_by_role("group", name="Job actions")
    actions.get_by_role("button", name="Run again").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    assert "A new job is created from the same spec" in dialog.inner_text()
    shot(page, "job-confirm-run-again")
    dialog.get_by_role("button", name="Run again").click()
    page.wait_for_url("**/jobs/ml/pytorch-distributed-2/")
    flash = page.locator("#flash .alert.ok")
    flash.wait_for()
    assert "a new run of ml/pytorch-distributed" in flash.inner_text()
    assert page.locator("[data-phase]").inner_text().strip() == "Pending"
    shot(page, "job-run-again")
    page.emulate_media(color_scheme="dark")
    shot(page, "job-run-again-dark")
    page.emulate_media(color_scheme="light")
    page.goto("/audit/")
    row = page.locator("tr", has_text="ml/pytorch-distributed-2").first
    assert "dashboard" in row.inner_text()  # the audit log says where the action came from (item 10)
    old, new = (Job.objects.get(namespace="ml", name=n) for n in ("pytorch-distributed", "pytorch-distributed-2"))
    assert old.phase == "Failed"
    assert new.spec["tasks"] == old.spec["tasks"]
    guard.check()
