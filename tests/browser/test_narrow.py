"""Narrow screens (issue 29, item 10): at 800 px the queue tree's GPU, Running and Pending columns are not hidden
under the pinned actions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, open_page, shot
from tests.browser.test_dashboard import PASSWORD, demo  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: For each header of the queue tree named: "covered" when its middle, on screen, is under another element (the
#: pinned actions), "shown" when it is the top element there, "off" when it is beyond the visible area (reachable by
#: scrolling the table). ``end`` scrolls the table to its right end first.
PROBE = """
([names, end]) => {
  const box = document.querySelector("table.tree").closest(".table-scroll");
  box.scrollLeft = end ? box.scrollWidth : 0;
  const edge = box.getBoundingClientRect();
  const heads = Array.from(document.querySelectorAll("table.tree thead th"));
  const out = {};
  for (const name of names) {
    const th = heads.find(h => h.textContent.trim().toUpperCase().startsWith(name.toUpperCase()));
    if (!th) { out[name] = "missing"; continue; }
    const r = th.getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (x < edge.left || x > edge.right) { out[name] = "off"; continue; }
    const el = document.elementFromPoint(x, y);
    out[name] = el && (el === th || th.contains(el)) ? "shown" : "covered";
  }
  return out;
}
"""


def test_the_queue_tree_at_800px_shows_every_column(browser: Any, asgi_server: Any, demo: None) -> None:  # noqa: F811
    context, page, guard = open_page(browser, asgi_server.url, width=800, height=900)
    try:
        login(page, "alice", PASSWORD)
        page.goto("/queues/")
        shot(page, "queues-800px")
        names = ["GPU", "Running", "Pending"]
        start, end = page.evaluate(PROBE, [names, False]), page.evaluate(PROBE, [names, True])
        assert "covered" not in start.values(), start  # nothing hides under the pinned column
        assert "missing" not in start.values(), start
        assert set(end.values()) == {"shown"}, end  # scrolled to the end, every column reads
        guard.check()
    finally:
        context.close()


def test_a_cronjob_offers_suspend_or_resume_and_cycles_is_a_page_for_tenants(session: Any, demo: None) -> None:  # noqa: F811
    from pathlib import Path

    import yaml

    from volcanoweb.tenancy.access import SYSTEM
    from volcanoweb.workflows import services as workflows

    doc = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "volcanoweb/demo/cookbook/14-cronjob-daily-report.yaml").read_text()
    )
    workflows.apply_cronjob(SYSTEM, doc, "data")
    name = doc["metadata"]["name"]
    page, guard = session
    login(page, "carol", PASSWORD)
    page.goto(f"/cronjobs/data/{name}/")
    actions = page.get_by_role("group", name="CronJob actions")
    assert actions.get_by_role("button", name="Resume").count() == 0
    actions.get_by_role("button", name="Suspend").click()
    actions.get_by_role("button", name="Resume").wait_for()  # the buttons follow the state, live
    assert actions.get_by_role("button", name="Suspend").count() == 0
    shot(page, "cronjob-suspended")
    response = page.goto("/cycles/")
    assert response is not None
    assert response.status == 403
    assert page.get_by_role("navigation", name="Main").is_visible()  # the product's page, not a bare sentence
    assert "only platform admins download them" in page.locator("main").inner_text()
    shot(page, "cycles-tenant-admin")
    guard.errors = [e for e in guard.errors if "status of 403" not in e]  # the browser reports the page's own 403
    guard.check()
