"""The queue editor in Chromium: parsed units as you type, the preview refuses what Save refuses, the result
lists every changed field."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PASSWORD, demo  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _edit(page: Any, queue: str) -> None:
    page.goto("/queues/")
    page.locator(f"tr#q-{queue}").get_by_role("button", name=f"Edit {queue}").click()
    page.get_by_label("Weight").wait_for()
    page.wait_for_selector("#queue-preview table")


def test_units_are_shown_as_you_type_and_the_result_lists_the_changes(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    login(page, "alice", PASSWORD)
    _edit(page, "ml-training")
    memory = page.get_by_label("Memory guarantee")
    memory.fill("64")
    hint = page.locator("#hint-guarantee_memory")
    hint.filter(has_text="did you mean 64Gi?").wait_for()
    assert "64 bytes" in hint.inner_text()
    shot(page, "queues-unit-hint")
    memory.fill("64Gi")
    hint.filter(has_text="64 GiB").wait_for()
    page.get_by_label("Weight").fill("5")
    page.get_by_role("button", name="Save changes").click()
    page.wait_for_selector("[data-saved-weight]")
    changed = page.locator("[data-changed-field]").all_inner_texts()
    assert any(c.startswith("weight ") and c.endswith("\u2192 5") for c in changed), changed
    assert "Memory guarantee none \u2192 64Gi" in changed
    shot(page, "queues-saved-changes")
    guard.check()


def test_the_preview_refuses_a_child_guarantee_above_its_parents(session: Any, demo: None) -> None:  # noqa: F811
    from volcanoweb.queues import services as queue_services
    from volcanoweb.tenancy.access import SYSTEM

    queue_services.update_queue_spec(SYSTEM, "engineering", {"guarantee": {"resource": {"cpu": "8"}}})
    page, guard = session
    login(page, "admin", PASSWORD)
    _edit(page, "eng-ml")
    page.get_by_label("CPU guarantee").fill("12")
    error = page.locator("[data-preview-error]")
    error.wait_for()
    assert "Save would refuse this change" in error.inner_text()
    assert page.locator("#queue-preview table").count() == 0  # no what-if for a change Save refuses
    assert "bad-text" in (page.locator("#hint-guarantee_cpu").get_attribute("class") or "")  # the field is marked
    shot(page, "queues-preview-refused")
    guard.check()


GPU_JOB = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: big-gpu
spec:
  schedulerName: volcano
  queue: ml-training
  minAvailable: 1
  tasks:
    - name: trainer
      replicas: 1
      template:
        spec:
          containers:
            - name: main
              image: busybox
              resources:
                requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "8"}
"""


def test_the_dry_run_gives_the_schedulers_verdict(session: Any, demo: None) -> None:  # noqa: F811
    """8 GPUs in one pod fit the cluster's 16 in total, but the scheduler's cycle does not start it now."""
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/submit/")
    page.get_by_label("Default namespace").fill("ml")
    page.get_by_label("Manifest YAML").fill(GPU_JOB)
    verdict = page.locator("[data-dry-run=ok] .verdict")
    verdict.wait_for()
    text = verdict.inner_text()
    assert "fits the cluster now" not in text
    assert "placed now" not in text
    # no node has 8 GPUs (they have 4): the pod can never run, and the enqueue gate's simulated verdict says so
    assert text.startswith("Can never run: 0 of the 1 pods the gang needs fit any node"), text
    assert "simulated cycle" in page.locator("#dry-run").inner_text()
    shot(page, "submit-dry-run-verdict")
    guard.check()


def test_queue_tree_collapses_and_edit_stays_reachable_at_800px(browser: Any, asgi_server: Any, demo: None) -> None:  # noqa: F811
    from tests.browser.conftest import open_page

    context, page, guard = open_page(browser, asgi_server.url, width=800, height=900)
    try:
        login(page, "alice", PASSWORD)
        page.goto("/queues/")
        edit = page.get_by_role("button", name="Edit ml-training")
        edit.scroll_into_view_if_needed()  # the table scrolls sideways (the actions are pinned only on wide screens)
        box = edit.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= 800  # reachable on screen
        toggle = page.get_by_role("button", name="Collapse ml-team")
        toggle.click()
        assert page.locator("tr#q-ml-training").is_hidden()
        assert page.get_by_role("button", name="Expand ml-team").get_attribute("aria-expanded") == "false"
        shot(page, "queues-800px-collapsed")
        page.get_by_role("button", name="Expand ml-team").click()
        assert page.locator("tr#q-ml-training").is_visible()
        guard.check()
    finally:
        context.close()


def test_dark_mode_follows_the_system(browser: Any, asgi_server: Any, demo: None) -> None:  # noqa: F811
    context = browser.new_context(
        base_url=asgi_server.url, color_scheme="dark", viewport={"width": 1400, "height": 900}
    )
    try:
        page = context.new_page()
        login(page, "alice", PASSWORD)
        page.goto("/nodes/")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(15, 20, 29)", background
        unit = page.locator("[data-node-resource=memory]").first.inner_text()
        assert unit.endswith("GiB")  # memory on the Nodes page has its unit
        shot(page, "nodes-dark")
    finally:
        context.close()
