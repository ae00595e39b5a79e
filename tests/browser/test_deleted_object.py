"""An open page whose job a colleague deletes says so once (issue 29, item 3), with DEBUG on as under `make run`:
its live partials get a small fragment, never Django's technical 404 page."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.browser.conftest import login, open_page, shot
from tests.browser.embedded import embedded_server
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
    with running(manage("runembedded", "--no-seed", "--port", str(port), "--https-port", "0"), env, log_path) as proc:
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


def _cronjob_and_jobflow() -> None:
    """The cookbook's CronJob and the product's JobFlow template, in namespace data (carol's tenant)."""
    import yaml

    from volcanoweb.apply import apply_documents
    from volcanoweb.tenancy.access import SYSTEM

    root = Path(__file__).resolve().parents[2] / "volcanoweb" / "demo"
    docs = [yaml.safe_load((root / "cookbook" / "14-cronjob-daily-report.yaml").read_text())]
    docs += list(yaml.safe_load_all((root / "templates" / "15-jobflow-etl.yaml").read_text()))
    apply_documents(SYSTEM, [d for d in docs if d], default_namespace="data")


@pytest.mark.parametrize(
    ("kind", "url", "key"),
    [("CronJob", "/cronjobs/data/daily-report/", "data/daily-report"), ("JobFlow", "/jobflows/data/etl/", "data/etl")],
)
def test_a_cronjob_or_jobflow_deleted_by_a_colleague_says_so_once_on_its_open_page(
    browser: Any, tmp_path: Path, kind: str, url: str, key: str
) -> None:
    """The same for the other pages with live regions of one object: every region got "Not found" (three copies on
    a CronJob's page) and kept asking; now the page says once who deleted it and when."""
    from django.contrib.auth import get_user_model

    from volcanoweb.demo.services import seed_demo
    from volcanoweb.tenancy.access import access_for
    from volcanoweb.workflows import services as workflows

    seed_demo()
    _cronjob_and_jobflow()
    with embedded_server(tmp_path, f"deleted-{kind.lower()}-server", DEBUG="true") as base:
        context, page, guard = open_page(browser, base)
        try:
            login(page, "carol", PASSWORD)
            page.goto(url)
            page.wait_for_selector("#live-status[data-state=live]", timeout=15000)
            namespace, name = key.split("/")
            carol = access_for(get_user_model().objects.get(username="carol"))
            workflows.delete_workflow_object(carol, kind, namespace, name)  # as by kubectl delete, say
            notice = page.locator("#gone-notice")
            notice.wait_for(timeout=20000)
            text = notice.inner_text()
            assert text.startswith(f"This {kind} ({key}) was deleted by carol at "), text
            page.wait_for_timeout(1500)  # every live region has had its answer
            assert page.locator("#gone-notice").count() == 1  # said once
            body = page.locator("main").inner_text()
            assert "Not found" not in body, body
            assert "Page not found (404)" not in body
            assert page.locator(f"[data-gone={kind.lower()}]").count() >= 1
            shot(page, f"{kind.lower()}-deleted-while-open")
            page.emulate_media(color_scheme="dark")
            shot(page, f"{kind.lower()}-deleted-while-open-dark")
            response = page.goto(url)  # the page itself, loaded again: the product's 404 saying the same
            assert response is not None
            assert response.status == 404
            assert f"This {kind} ({key}) was deleted by carol" in page.locator("main").inner_text()
            guard.errors = [e for e in guard.errors if "status of 404" not in e]  # the page's own 404
            guard.check()
        finally:
            context.close()


def test_a_page_older_than_the_sign_in_says_what_to_do_not_djangos_csrf_page(session: Any) -> None:
    """Signed in again in another tab (a new CSRF secret), the first tab's Delete got Django's "CSRF verification
    failed" page swapped into its flash region; now a line saying to reload, and nothing is deleted."""
    from volcanoweb.demo.services import seed_demo
    from volcanoweb.jobs.models import Job

    seed_demo()
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto(JOB)
    other = page.context.new_page()
    other.goto("/")
    other.get_by_role("button", name="Log out").click()
    other.wait_for_url("**/login/")  # signed out before signing in again (and no close mid-navigation, above)
    login(other, "alice", PASSWORD)
    other.wait_for_load_state()
    other.close()
    page.get_by_role("group", name="Job actions").get_by_role("button", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    alert = page.locator("#flash [role=alert]")
    alert.wait_for()
    text = alert.inner_text()
    assert "Reload the page and try again; nothing was changed." in text, text
    assert "CSRF verification failed" not in page.locator("body").inner_text()
    assert Job.objects.filter(namespace="ml", name="pytorch-distributed").exists()
    shot(page, "job-stale-page-delete")
    guard.errors = [e for e in guard.errors if "403" not in e]  # the answer's own 403, as the browser and htmx log it
    guard.check()


def test_a_page_whose_session_ended_goes_to_the_sign_in_whole_and_comes_back(session: Any) -> None:
    """Signed out in another tab, a click that loads a region (Compute suggestions) got the sign-in page inside the
    region; now the whole page goes to the sign-in, and back to the job after it."""
    from volcanoweb.demo.services import seed_demo

    seed_demo()
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto(JOB)
    other = page.context.new_page()
    other.goto("/")
    other.get_by_role("button", name="Log out").click()
    # the sign-in page, loaded, before the tab closes: Chromium can leave a tab closed mid-navigation open, and
    # Playwright's close() then waits for ever (microsoft/playwright#41900, #42366; it hung a CI run for 300 s)
    other.wait_for_url("**/login/")
    other.wait_for_load_state()
    other.close()
    page.get_by_role("button", name="Compute suggestions").click()
    page.wait_for_url("**/login/?next=/jobs/ml/pytorch-distributed/")
    assert page.locator("#job-suggestions-result").count() == 0  # no page inside the page
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**{JOB}")
    guard.check()
