"""Issue 29, item 10 (the points still open after the first pass): a Delete on a job's page ends with a message
saying what was deleted; the overview at phone width does not scroll sideways."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, open_page, shot
from tests.browser.test_dashboard import PASSWORD, demo, run_cycles  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JOB_URL = "/jobs/ml/pytorch-distributed/"

#: The elements reaching past the viewport's right edge that no scrolling box of their own clips (those make the
#: page scroll sideways), as "tag.class right".
WIDE = """
() => {
  const w = document.documentElement.clientWidth;
  const clipped = e => {
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o !== "visible") return true;
    }
    return false;
  };
  return Array.from(document.querySelectorAll("body *"))
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > w + 1 && !clipped(e); })
    .slice(0, 8)
    .map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right));
}
"""


def test_delete_on_a_job_page_says_what_it_deleted(session: Any, demo: None) -> None:  # noqa: F811
    from volcanoweb.jobs.models import Job

    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto(JOB_URL)
    page.get_by_role("group", name="Job actions").get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    dialog.get_by_role("button", name="Delete").click()
    page.wait_for_url("**/jobs/")
    flash = page.locator("#flash [role=status]")
    flash.first.wait_for()
    assert "Deleted ml/pytorch-distributed" in flash.first.inner_text()
    assert not Job.objects.filter(namespace="ml", name="pytorch-distributed").exists()
    shot(page, "job-deleted-message")
    page.emulate_media(color_scheme="dark")
    shot(page, "job-deleted-message-dark")
    guard.check()


@pytest.mark.parametrize("user", ["alice", "admin"])
def test_the_overview_at_phone_width_does_not_scroll_sideways(
    browser: Any,
    asgi_server: Any,
    demo: None,  # noqa: F811
    user: str,
) -> None:
    run_cycles(2)
    context, page, guard = open_page(browser, asgi_server.url, width=390, height=844)
    try:
        login(page, user, PASSWORD)
        page.goto("/")
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(500)
        wide = page.evaluate(WIDE)
        width = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        shot(page, f"overview-phone-{user}")
        assert width[0] <= width[1], f"the page scrolls sideways ({width}): {wide}"
        page.emulate_media(color_scheme="dark")
        shot(page, f"overview-phone-{user}-dark")
        guard.check()
    finally:
        context.close()
