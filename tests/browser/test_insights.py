"""Insights in headless Chromium: a queue's history chart with change markers, a job's wait timeline and
verified suggestions, recent cycles downloadable by a platform admin; another tenant sees none of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PASSWORD, demo, run_cycles  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _waiting_job() -> None:
    from tests.volcanoweb import builders
    from volcanoweb.clusters import services as cluster_services
    from volcanoweb.queues import services as queue_services
    from volcanoweb.queues.models import Queue
    from volcanoweb.runtime import services as runtime
    from volcanoweb.tenancy.access import SYSTEM

    run_cycles(1)
    job = builders.make_job("ml", "too-wide", queue="ml-training", tasks=[builders.task("w", 2, cpu="500")])
    runtime.on_job_submitted(job.pk)
    queue = Queue.objects.get(name="ml-training")
    queue_services.update_queue_spec(SYSTEM, queue.name, {"weight": queue.weight + 1}, source="test")
    for _ in range(3):
        run_cycles(1)
        cluster_services.sync_from_backend()


def test_queue_history_page_with_chart_and_change_marker(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    _waiting_job()
    login(page, "alice", PASSWORD)
    page.goto("/queues/")
    page.get_by_role("link", name="History of ml-training").click()
    page.wait_for_url("**/queues/ml-training/insights/")
    assert page.get_by_role("heading", name="Queue ml-training").is_visible()
    page.wait_for_selector("canvas[data-history-resource=cpu][data-chart-ready='1']")
    markers = page.locator("#change-markers > li")
    assert markers.count() >= 1
    assert "queue: update" in markers.last.inner_text()
    assert "simulated cycles from the input of cycle" in markers.last.inner_text()  # its effects, computed
    # on the cycle right after the change (not the first kept one), and the same on every visit
    from volcanoweb.audit.models import AuditEntry
    from volcanoweb.scheduling.models import SchedulingRun

    change = AuditEntry.objects.filter(kind="Queue", object_key="ml-training", action="update").latest("at")
    after = SchedulingRun.objects.filter(started_at__gte=change.at).order_by("pk").first()
    assert after is not None
    cited = f"from the input of cycle {after.pk} (the first after the change)"
    said = markers.last.inner_text()
    assert cited in said, said
    page.reload()
    assert page.locator("#change-markers > li").last.inner_text() == said
    # each marker is numbered on the chart and in the list; the guarantee is drawn over the deserved line
    chart = page.evaluate(
        "() => { const c = window.Chart.getChart(document.querySelector('canvas[data-history-resource=cpu]'));"
        " return {labels: c.options.plugins.changeMarkers.markers.map(m => m.label),"
        " order: Object.fromEntries(c.data.datasets.map(d => [d.label, d.order]))}; }"
    )
    listed = [markers.nth(i).get_attribute("data-marker-label") for i in range(markers.count())]
    assert chart["labels"] == listed
    assert all(chart["labels"])
    assert chart["order"]["Guarantee"] < chart["order"]["Deserved"]
    assert page.locator("#time-to-start").is_visible()
    shot(page, "queue-history")
    page.get_by_role("link", name="1d").click()
    page.wait_for_url("**/insights/?range=1d")
    page.wait_for_selector("canvas[data-history-resource=cpu][data-chart-ready='1']")
    guard.check()


def test_job_page_shows_wait_timeline_and_verified_suggestions(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    _waiting_job()
    login(page, "alice", PASSWORD)
    page.goto("/jobs/ml/too-wide/")
    page.wait_for_selector("#job-timeline li.tl-wait")
    first = page.locator("#job-timeline li.tl-wait").first.inner_text()
    assert "now" in first  # still waiting: an open interval
    page.get_by_role("button", name="Compute suggestions").click()
    page.wait_for_selector("#job-suggestions-result")
    text = page.locator("#job-suggestions-result").inner_text()
    assert "simulated cycle" in text
    shot(page, "job-timeline-suggestions")
    guard.check()


def test_overview_chart_of_queue_shares(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    run_cycles(2)
    login(page, "alice", PASSWORD)
    page.wait_for_selector("#queue-history-overview canvas[data-overview-chart][data-chart-ready='1']")
    assert page.get_by_role("heading", name="Queue shares over the last hour").is_visible()
    shot(page, "overview-queue-history")
    guard.check()


def test_platform_admin_downloads_a_cycle_input(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    run_cycles(2)
    login(page, "admin", PASSWORD)
    page.goto("/scheduler/")
    page.get_by_role("link", name="Recent cycles: download their input and replay it offline").click()
    page.wait_for_url("**/cycles/")
    rows = page.locator("#cycles-table tbody tr")
    assert rows.count() >= 2
    shot(page, "cycles")
    with page.expect_download() as info:
        rows.first.get_by_role("link", name=f"cycle-{rows.first.get_attribute('data-cycle')}.json").click()
    doc = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert doc["kind"] == "CycleInput"
    assert doc["snapshot"]["nodes"]
    guard.check()


def test_another_tenant_sees_no_insights(session: Any, demo: None) -> None:  # noqa: F811
    page, _guard = session
    _waiting_job()
    login(page, "carol", PASSWORD)
    assert page.goto("/queues/ml-training/insights/").status == 404
    assert page.goto("/jobs/ml/too-wide/insights/").status == 404
    assert page.goto("/cycles/").status == 403
    shot(page, "insights-forbidden")


def test_cycles_that_decided_are_kept_and_filtered(session: Any, demo: None, settings: Any) -> None:  # noqa: F811
    from volcanoweb.insights import services as insights
    from volcanoweb.insights.models import CycleDecision

    page, guard = session
    _waiting_job()  # the first cycle binds the demo's jobs; a later one first finds ml/too-wide unschedulable
    verdict = CycleDecision.objects.get(kind="unschedulable", job="ml/too-wide").run_id
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 1  # the prune in this process: only the last cycle and the deciding ones
    insights.prune()
    login(page, "admin", PASSWORD)
    page.goto("/cycles/")
    assert page.locator(f"#cycles-table tr[data-cycle='{verdict}']").is_visible()  # older than the last one, kept
    assert "for 1 day every cycle that decided something" in page.locator("[data-retention]").inner_text()
    page.get_by_label("Job").fill("ml/too-wide")
    page.get_by_label("Decision").select_option("unschedulable")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/cycles/?job=ml%2Ftoo-wide*")
    rows = page.locator("#cycles-table tbody tr")
    assert rows.count() == 1
    assert rows.first.get_attribute("data-cycle") == str(verdict)
    assert "first refused ml/too-wide" in rows.first.locator("[data-decisions]").inner_text()
    shot(page, "cycles-filtered")
    page.emulate_media(color_scheme="dark")
    shot(page, "cycles-filtered-dark")
    page.emulate_media(color_scheme="light")
    page.get_by_label("Decision").select_option("evict")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**decision=evict*")
    assert "No kept cycle decided about these filters." in page.locator("#cycles-table").inner_text()
    page.get_by_role("link", name="Clear").click()
    page.get_by_label("Queue").fill("ml-training")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**queue=ml-training*")
    assert page.locator(f"#cycles-table tr[data-cycle='{verdict}']").is_visible()
    guard.check()
