"""Destructive actions ask first (Cancel changes nothing, Confirm acts) and buttons follow the job's phase."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PASSWORD, demo  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JOB_URL = "/jobs/ml/pytorch-distributed/"


def _commands() -> list[str]:
    from volcanoweb.jobs.models import Command

    return list(Command.objects.filter(target_name="pytorch-distributed").values_list("action", flat=True))


def _job_exists() -> bool:
    from volcanoweb.jobs.models import Job

    job = Job.objects.filter(namespace="ml", name="pytorch-distributed").first()
    return job is not None and job.deletion_timestamp is None


def _dialog(page: Any) -> Any:
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    return dialog


def test_job_delete_and_suspend_ask_first(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto(JOB_URL)
    actions = page.get_by_role("group", name="Job actions")
    assert actions.get_by_role("button", name="Resume").is_disabled()  # a Pending job is not suspended
    assert "nothing to resume" in page.locator("#why-resume").inner_text()

    actions.get_by_role("button", name="Delete").click()
    dialog = _dialog(page)
    assert "cannot be undone" in dialog.inner_text()
    assert "ml/pytorch-distributed" in dialog.inner_text()
    shot(page, "job-confirm-delete")
    dialog.get_by_role("button", name="Cancel").click()
    dialog.wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert _job_exists()
    assert page.url.endswith(JOB_URL)

    actions.get_by_role("button", name="Suspend").click()
    dialog = _dialog(page)
    assert "pods" in dialog.inner_text()
    assert "retry" in dialog.inner_text()
    page.keyboard.press("Escape")  # Escape is Cancel too
    dialog.wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert _commands() == []

    actions.get_by_role("button", name="Suspend").click()
    _dialog(page).get_by_role("button", name="Suspend").click()
    page.wait_for_selector("#flash .alert.ok")
    assert "Suspend requested" in page.locator("#flash").inner_text()
    assert "To undo, Resume" in page.locator("#flash").inner_text()
    assert _commands() == ["AbortJob"]
    # The waiting command blocks a duplicate: the buttons refresh and say why.
    page.locator("#why-suspend", has_text="waiting for the job controller").wait_for()
    guard.check()


def test_resume_of_an_aborted_job_shows_the_retry_it_uses(session: Any, demo: None) -> None:  # noqa: F811
    from volcanoweb.jobs.models import Job

    job = Job.objects.get(namespace="ml", name="pytorch-distributed")
    Job.objects.filter(pk=job.pk).update(phase="Aborted", status={**(job.status or {}), "retryCount": 0})
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto(JOB_URL)
    actions = page.get_by_role("group", name="Job actions")
    assert actions.get_by_role("button", name="Suspend").is_disabled()
    assert "already Aborted" in page.locator("#why-suspend").inner_text()
    actions.get_by_role("button", name="Resume").click()
    dialog = _dialog(page)
    assert "uses 1 retry: 2 of 3 left" in dialog.inner_text()
    shot(page, "job-confirm-resume")
    dialog.get_by_role("button", name="Cancel").click()
    dialog.wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert _commands() == []
    actions.get_by_role("button", name="Resume").click()
    _dialog(page).get_by_role("button", name="Resume").click()
    page.wait_for_selector("#flash .alert.ok")
    assert _commands() == ["ResumeJob"]
    guard.check()


def test_a_failed_job_offers_only_delete(session: Any, demo: None) -> None:  # noqa: F811
    from volcanoweb.jobs.models import Job

    Job.objects.filter(namespace="ml", name="pytorch-distributed").update(phase="Failed")
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto(JOB_URL)
    actions = page.get_by_role("group", name="Job actions")
    for name in ("Suspend", "Resume", "Restart"):
        assert actions.get_by_role("button", name=name).is_disabled(), name
    assert "cannot be resumed" in page.locator("#why-resume").inner_text()
    assert actions.get_by_role("button", name="Delete").is_enabled()
    shot(page, "job-actions-failed")
    guard.check()


def test_bulk_delete_asks_with_the_count_and_names(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/jobs/")
    page.get_by_label("Select ml/pytorch-distributed").check()
    page.get_by_label("With selected").select_option("delete")
    page.get_by_role("button", name="Apply").click()
    dialog = _dialog(page)
    assert "Delete 1 job(s) (ml/pytorch-distributed)" in dialog.inner_text()
    shot(page, "jobs-confirm-bulk")
    dialog.get_by_role("button", name="Cancel").click()
    dialog.wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert _job_exists()
    page.get_by_role("button", name="Apply").click()
    _dialog(page).get_by_role("button", name="Delete").click()
    page.locator("#bulk-result", has_text="1 job done").wait_for()
    assert not _job_exists()
    guard.check()


def test_a_deleted_jobs_url_shows_the_products_404_page(session: Any, demo: None) -> None:  # noqa: F811
    from volcanoweb.jobs.models import Job

    page, _guard = session
    login(page, "alice", PASSWORD)
    Job.objects.filter(namespace="ml", name="pytorch-distributed").delete()
    response = page.goto(JOB_URL)  # the browser logs this expected 404 in the console
    assert response is not None
    assert response.status == 404
    assert page.get_by_role("heading", name="Page not found").is_visible()
    assert page.get_by_role("navigation", name="Main").is_visible()  # the product's shell, not Django's page
    assert "URLconf" not in page.content()
    shot(page, "not-found")


def _start_demo_job() -> str:
    """Admit and bind ml/pytorch-distributed on the simulated cluster; return its first running pod's name."""
    from volcanoweb.clusters import services as cluster_services
    from volcanoweb.clusters.backends.base import SIM_DURATION_ANNOTATION
    from volcanoweb.jobs.models import Job, Pod
    from volcanoweb.runtime import services as runtime_services
    from volcanoweb.scheduling.services import run_cycle

    job = Job.objects.get(namespace="ml", name="pytorch-distributed")
    # a long run (one simulated hour), so the pods are still running while the test reads their logs
    Job.objects.filter(pk=job.pk).update(annotations={**job.annotations, SIM_DURATION_ANNOTATION: "1h"})
    for _ in range(3):
        run_cycle()
        runtime_services.on_podgroups_changed([job.pk])
        cluster_services.sync_from_backend()
    pod = Pod.objects.filter(job=job, phase="Running").order_by("name").first()
    assert pod is not None, list(Pod.objects.filter(job=job).values_list("name", "phase"))
    return pod.name


def test_pod_logs_stream_on_the_simulated_cluster(session: Any, demo: None) -> None:  # noqa: F811
    pod = _start_demo_job()
    page, guard = session
    login(page, "bob", PASSWORD)
    page.goto(JOB_URL)
    page.get_by_role("button", name=f"Logs of {pod}").click()
    log = page.get_by_label(f"Log of {pod}, container")
    log.wait_for()
    assert "started" in log.inner_text()
    assert page.locator("#pod-log-body").get_attribute("data-log-state") == "streaming"
    first = log.inner_text()
    # the simulated container writes a progress line every 5 simulated seconds: the panel shows them
    page.wait_for_function(
        "old => { const p = document.querySelector('#pod-log-body pre'); return p && p.innerText !== old; }",
        arg=first,
        timeout=20000,
    )
    assert "running:" in log.inner_text()
    shot(page, "job-pod-logs")
    page.get_by_label("Last lines").fill("0")
    page.get_by_label("Last lines").dispatch_event("change")
    page.locator("#flash .alert.bad", has_text="tail").wait_for()  # the field and the reason
    assert log.is_visible()  # the panel stays
    # an expected 400 is no htmx error in the console (Chromium's own network line for a 400 remains)
    assert [e for e in guard.errors if "Failed to load resource" not in e] == []
    assert not guard.outside


def test_a_template_for_another_tenants_queue_says_who_owns_it(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/submit/")
    page.get_by_label("Start from").select_option("14-cronjob-daily-report.yaml")
    page.locator("[data-dry-run=error]", has_text="data-processing").wait_for()
    text = page.locator("#dry-run").inner_text()
    assert "you cannot use queue data-processing (owned by tenant data)" in text
    assert "not found" not in text
    shot(page, "submit-queue-not-yours")
    guard.check()


def test_scheduler_rollback_asks_then_shows_the_diff(session: Any, demo: None) -> None:  # noqa: F811
    """The configuration history shows each version's changes; Roll back asks first (Cancel keeps the active
    version) and then names both versions and the lines that changed."""
    from volcanoweb.scheduling.models import SchedulerProfile

    page, guard = session
    login(page, "admin", PASSWORD)
    page.goto("/scheduler/")
    start = SchedulerProfile.objects.filter(active=True).values_list("version", flat=True).first() or 0
    text = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    page.locator("#cfg-yaml").fill(text)
    page.get_by_role("button", name="Save new version").click()
    page.wait_for_selector("[data-config-saved]")
    saved = page.locator("[data-config-saved]").inner_text()
    assert f"Saved version {start + 1}, now active" in saved
    assert '+actions: "enqueue, allocate, backfill"' in saved
    new = start + 1
    if start == 0:  # no stored version before: save a second so there is one to roll back to
        page.locator("#cfg-yaml").fill(text.replace(", backfill", ""))
        page.get_by_role("button", name="Save new version").click()
        page.locator("[data-config-saved]", has_text=f"Saved version {start + 2}").wait_for()
        new = start + 2
    back_to = new - 1
    button = page.get_by_role("button", name=f"Roll back to v{back_to}")
    button.click()
    dialog = _dialog(page)
    assert f"Make version {back_to} the active configuration again" in dialog.inner_text()
    assert f"replacing v{new}" in dialog.inner_text()
    dialog.get_by_role("button", name="Cancel").click()
    dialog.wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert SchedulerProfile.objects.get(active=True).version == new
    page.get_by_role("button", name=f"Roll back to v{back_to}").click()
    _dialog(page).get_by_role("button", name="Roll back").click()
    page.locator("[data-config-saved]", has_text=f"Version {back_to} is active again").wait_for()  # after the post
    assert SchedulerProfile.objects.get(active=True).version == back_to
    page.locator(f"li[data-version='{new}'] summary").click()
    shot(page, "scheduler-history-diff")
    guard.check()
