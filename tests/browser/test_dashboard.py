"""The dashboard in headless Chromium: every page, the queue what-if, the submit dry run, isolation."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "volcano-demo"
PAGES = {
    "overview": "/",
    "queues": "/queues/",
    "jobs": "/jobs/",
    "job-detail": "/jobs/ml/pytorch-distributed/",
    "submit": "/submit/?template=01-pytorch-distributed.yaml",
    "nodes": "/nodes/",
    "cronjobs": "/cronjobs/",
    "jobflows": "/jobflows/",
    "scheduler": "/scheduler/",
    "audit": "/audit/",
}


@pytest.fixture
def demo(transactional_db: Any) -> None:
    """The demo tenants, users, queues and jobs, plus the simulated nodes."""

    from volcanoweb.demo.services import seed_demo

    seed_demo()  # also re-creates the built-in queues that a transactional test's flush removed
    try:
        from volcanoweb.clusters import services as cluster_services

        cluster_services.resync_nodes()
    except Exception:  # no runtime node sync available: fall back to plain rows
        from tests.volcanoweb.dashboard.conftest import make_nodes

        make_nodes(6)


def test_login_page(session: Any, demo: None) -> None:
    page, guard = session
    page.goto("/")
    assert "/login/" in page.url
    shot(page, "login")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    assert page.get_by_role("alert").is_visible()
    login(page, "alice", PASSWORD)
    assert page.get_by_role("heading", name="Overview").is_visible()
    guard.check()


def run_cycles(count: int = 2) -> None:
    """Run scheduling cycles with the configured (simulated) backend, so pages show real cycle data."""
    from volcanoweb.scheduling.services import run_cycle

    for _ in range(count):
        run_cycle()


def test_pages_are_usable_on_a_phone(browser: Any, asgi_server: Any, demo: None) -> None:
    from tests.browser.conftest import open_page

    context, page, guard = open_page(browser, asgi_server.url, width=390, height=844)
    try:
        login(page, "alice", PASSWORD)
        page.goto("/jobs/")
        assert page.get_by_role("navigation", name="Main").is_visible()
        shot(page, "jobs-mobile")
        guard.check()
    finally:
        context.close()


def test_keyboard_skip_link_reaches_main(session: Any, demo: None) -> None:
    page, guard = session
    login(page, "alice", PASSWORD)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    guard.check()


def test_queue_weight_edit_previews_then_changes_the_share(session: Any, demo: None) -> None:
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/queues/")
    row = page.locator("tr#q-ml-training")
    before = row.locator("[data-weight]").inner_text()
    row.get_by_role("button", name="Edit ml-training").click()
    weight = page.get_by_label("Weight")
    weight.wait_for()
    page.wait_for_selector("#queue-preview table")
    old_new = page.locator("tr[data-preview-queue=ml-training] [data-new=cpu]").inner_text()
    weight.fill("4")  # a tenant admin splits its top-level queue: at most ml-team's 5 (issue 28)
    page.wait_for_function(
        "old => { const b = document.querySelector('tr[data-preview-queue=ml-training] [data-new=cpu]');"
        " return b && b.textContent !== old; }",
        arg=old_new,
    )
    assert page.locator("tr.changed[data-preview-queue=ml-training]").is_visible()
    notes = page.locator("[data-weight-notes]")
    assert "What the weight of ml-training does under the active configuration" in notes.inner_text()
    assert notes.locator("li").count() >= 1
    shot(page, "queues-preview")
    page.get_by_role("button", name="Save changes").click()
    page.wait_for_selector("[data-saved-weight]")
    page.wait_for_function("() => document.querySelector('tr#q-ml-training [data-weight]').textContent.trim() === '4'")
    assert before != "4"
    shot(page, "queues-saved")
    guard.check()


def test_submit_page_gives_dry_run_feedback(session: Any, demo: None) -> None:
    page, guard = session
    login(page, "bob", PASSWORD)
    page.goto("/submit/")
    page.get_by_label("Start from").select_option("01-pytorch-distributed.yaml")
    page.wait_for_selector("[data-dry-run=ok]")
    # the demo applied this template already: applying it again would change nothing, and the dry run says so
    dry = page.locator("#dry-run").inner_text()
    assert "Nothing would change: ml/pytorch-distributed already exists" in dry
    assert "To run another job from this manifest, change metadata.name here" in dry  # and what to do (issue 29)
    assert "Would be admitted" not in dry
    editor = page.get_by_label("Manifest YAML")
    editor.fill("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: broken\nspec:\n  tasks: [\n")
    page.wait_for_selector("[data-dry-run=error]")
    assert "line" in page.locator("#dry-run").inner_text()
    assert page.locator(".gutter b").count() == 1  # the failing line is marked
    shot(page, "submit-error")
    guard.check()


def test_submit_namespace_follows_the_template(session: Any, demo: None) -> None:
    """A platform admin on "All tenants" picks a template: the namespace becomes one its queue accepts."""
    page, guard = session
    login(page, "admin", PASSWORD)
    page.goto("/submit/")
    page.get_by_label("Start from").select_option("09-genome-analysis.yaml")  # queue hpc, owned by dev
    page.wait_for_function("() => document.getElementById('ns-input').value === 'dev'")
    page.wait_for_selector("[data-dry-run=ok]")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"/jobs/dev/genome-analysis/"))
    guard.check()


def test_another_tenants_jobs_are_invisible(session: Any, demo: None) -> None:
    page, guard = session
    login(page, "carol", PASSWORD)  # tenant admin of data
    page.goto("/jobs/")
    text = page.locator("#jobs-table").inner_text()
    assert "flink" in text.lower()
    assert "pytorch-distributed" not in text
    guard.check()
    response = page.goto("/jobs/ml/pytorch-distributed/")  # the browser logs this expected 404
    assert response is not None
    assert response.status == 404


def test_platform_admin_fails_and_recovers_a_node(session: Any, demo: None) -> None:
    page, guard = session
    login(page, "admin", PASSWORD)
    page.goto("/nodes/")
    card = page.locator("li.node", has=page.get_by_role("heading", name="cpu-0", exact=True))
    assert card.locator(".badge").inner_text() == "Ready"
    card.get_by_role("button", name="Fail node cpu-0").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    assert "evicted" in dialog.inner_text() or "nothing is evicted" in dialog.inner_text()
    shot(page, "nodes-confirm-fail")
    dialog.get_by_role("button", name="Cancel").click()  # cancelling changes nothing
    dialog.wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert card.locator(".badge").inner_text() == "Ready"
    card.get_by_role("button", name="Fail node cpu-0").click()
    dialog.get_by_role("button", name="Fail node").click()
    page.wait_for_selector("#flash .alert.ok")
    assert "cpu-0 failed" in page.locator("#flash").inner_text()
    card = page.locator("li.node", has=page.get_by_role("heading", name="cpu-0", exact=True))
    card.locator(".badge", has_text="NotReady").wait_for()  # the grid refreshed without a reload
    assert "down" in (card.get_attribute("class") or "")
    shot(page, "nodes-failed")
    card.get_by_role("button", name="Recover node cpu-0").click()
    card = page.locator("li.node", has=page.get_by_role("heading", name="cpu-0", exact=True))
    card.locator(".badge", has_text=re.compile(r"^Ready$")).wait_for()
    assert "down" not in (card.get_attribute("class") or "")
    guard.check()


def test_nodes_page_has_no_injection_controls_for_tenants(session: Any, demo: None) -> None:
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/nodes/")
    assert page.locator("li.node").count() > 0
    assert page.get_by_role("button", name=re.compile("Fail node")).count() == 0
    guard.check()


def _focused(page: Any) -> dict[str, str]:
    return page.evaluate(
        "() => { const e = document.activeElement; return {tag: e.tagName, id: e.id || '',"
        " label: e.getAttribute('aria-label') || e.textContent.trim().slice(0, 40),"
        " outline: getComputedStyle(e).outlineStyle}; }"
    )


def _tab_to(page: Any, label: str, limit: int = 80, *, back: bool = False) -> dict[str, str]:
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        focused = _focused(page)
        if focused["label"] == label:
            return focused
    raise AssertionError(f"{label!r} not reached with Tab")


def test_queue_edit_flow_by_keyboard_only(session: Any, demo: None) -> None:
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/queues/")
    focused = _tab_to(page, "Edit ml-training")
    assert focused["outline"] != "none"  # a visible focus ring (:focus-visible)
    page.keyboard.press("Enter")
    page.wait_for_selector("#queue-preview table")
    assert _focused(page)["id"] == "id_weight"  # the panel took the focus
    page.keyboard.press("Control+a")
    page.keyboard.type("3")  # within ml-team's weight of 5 (issue 28)
    page.wait_for_selector("tr.changed[data-preview-queue=ml-training]")
    for field in ("id_guarantee_cpu", "id_capability_cpu"):
        page.keyboard.press("Tab")
        assert _focused(page)["id"].startswith(field[:6]), _focused(page)
    focused = _tab_to(page, "Save changes", limit=12)
    assert focused["tag"] == "BUTTON"
    shot(page, "queues-keyboard")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-saved-weight]")
    page.wait_for_function("() => document.querySelector('tr#q-ml-training [data-weight]').textContent.trim() === '3'")
    assert page.evaluate("document.activeElement.hasAttribute('data-panel-heading')")
    # Esc leaves the edit panel without saving
    _tab_to(page, "Edit ml-training", limit=120, back=True)  # the tree is above the panel
    page.keyboard.press("Enter")
    page.wait_for_selector("#queue-edit-form")
    page.keyboard.press("Control+a")
    page.keyboard.type("2")
    page.keyboard.press("Escape")
    page.wait_for_selector("#queue-edit-form", state="detached")
    assert page.locator("tr#q-ml-training [data-weight]").inner_text().strip() == "3"
    guard.check()


def test_a_live_refresh_keeps_the_keyboard_focus(session: Any, demo: None) -> None:
    """The queue tree is refreshed by live messages while a keyboard user stands on one of its buttons:
    the focus moves to the same button in the new table, never back to the top of the page."""
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/queues/")
    _tab_to(page, "Edit ml-training")
    page.evaluate(
        "() => new Promise(done => {"
        "  const tree = document.getElementById('queue-tree');"
        "  tree.addEventListener('htmx:afterSettle', () => done(), { once: true });"  # new buttons are wired
        "  window.htmx.trigger(tree, 'live');"
        "})"
    )
    assert _focused(page)["label"] == "Edit ml-training"
    page.keyboard.press("Enter")
    page.wait_for_selector("#queue-edit-form")
    # Esc cancels the edit even when the focus is outside the form
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("Escape")
    page.wait_for_selector("#queue-edit-form", state="detached")
    guard.check()


def test_queue_tree_keeps_names_readable_with_the_panel_open(session: Any, demo: None) -> None:
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/queues/")
    page.get_by_role("button", name="Edit ml-training").click()
    page.wait_for_selector("#queue-preview table")
    name = page.get_by_role("button", name="Who uses ml-training")
    box = name.bounding_box()
    tree = page.locator("#queue-tree").bounding_box()
    assert box is not None
    assert tree is not None
    assert box["x"] >= tree["x"]
    assert box["x"] + box["width"] <= tree["x"] + tree["width"]
    scroll = page.evaluate(
        "() => { const s = document.querySelector('#queue-tree .table-scroll'); return s.scrollWidth - s.clientWidth; }"
    )
    assert scroll <= 1, "the queue table overflows at 1400px"
    guard.check()


def test_queues_on_a_phone(browser: Any, asgi_server: Any, demo: None) -> None:
    from tests.browser.conftest import open_page

    context, page, guard = open_page(browser, asgi_server.url, width=390, height=844)
    try:
        login(page, "alice", PASSWORD)
        page.goto("/queues/")
        page.evaluate("() => { document.querySelector('#queue-tree .table-scroll').scrollLeft = 400; }")
        name = page.get_by_role("button", name="Who uses ml-training").bounding_box()
        assert name is not None
        assert name["x"] >= 0  # the sticky name column stays in view
        assert page.evaluate("document.documentElement.scrollWidth") <= 391  # no page-level sideways scroll
        shot(page, "queues-mobile")
        guard.check()
    finally:
        context.close()


def test_job_page_refreshes_on_a_collapsed_burst(session: Any, demo: None) -> None:
    """The server collapses a burst into {"kind", "id": "*", "count"}: the job page refreshes on it, and
    not on a message about another job."""
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/jobs/ml/pytorch-distributed/")
    page.wait_for_selector("#live-status[data-state=live]")
    fragments: list[str] = []
    page.on("request", lambda r: fragments.append(r.url) if "fragment=" in r.url else None)
    page.evaluate("window.volcanoLive.onMessage({kind: 'pod', id: 'ml/someone-else-0', phase: 'Running'})")
    page.wait_for_timeout(800)
    assert fragments == []
    with page.expect_request(lambda r: "fragment=status" in r.url):
        page.evaluate("window.volcanoLive.onMessage({kind: 'pod', id: '*', count: 30})")
    guard.check()
