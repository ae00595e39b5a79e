"""The Nodes page: a node's pods, listed on demand, and the list stays open through live refreshes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PASSWORD, demo  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _bind_pod(node: str) -> None:
    from volcanoweb.jobs.models import Job, Pod

    job = Job.objects.get(namespace="ml", name="pytorch-distributed")
    Pod.objects.create(
        name="pytorch-distributed-worker-9",
        namespace="ml",
        tenant=job.tenant,
        job=job,
        phase="Running",
        node_name=node,
        requests={"cpu": 4000, "memory": 8 * 1024**3, "pods": 1},
    )


def test_a_nodes_pods_open_on_demand_and_survive_a_live_refresh(session: Any, demo: None) -> None:  # noqa: F811
    from volcanoweb.clusters.models import Node

    node = Node.objects.order_by("name").values_list("name", flat=True).first()
    assert node is not None
    _bind_pod(node)
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/nodes/")
    summary = page.locator(f"summary[aria-label='Pods on {node}']")
    summary.click()
    row = page.locator("[data-node-pod='ml/pytorch-distributed-worker-9']")
    row.wait_for()
    assert "4 cores, 8 GiB" in row.inner_text()  # the units of the node card above
    assert "pytorch-distributed" in row.get_by_role("link").inner_text()
    page.evaluate(
        "() => new Promise(done => {"
        "  const grid = document.getElementById('node-grid');"
        "  grid.addEventListener('htmx:afterSwap', () => done(), { once: true });"
        "  window.htmx.trigger(grid, 'live');"
        "})"
    )
    page.locator(f"details[open] > summary[aria-label='Pods on {node}']").wait_for()
    page.locator("[data-node-pod='ml/pytorch-distributed-worker-9']").wait_for()  # reloaded in the new card
    shot(page, "nodes-pods")
    guard.check()


def test_platform_admin_cordons_after_a_confirmation_and_uncordons(session: Any, demo: None) -> None:  # noqa: F811
    from volcanoweb.clusters.models import Node

    page, guard = session
    login(page, "admin", PASSWORD)
    page.goto("/nodes/")
    card = page.locator("li.node", has=page.get_by_role("heading", name="cpu-1", exact=True))
    card.get_by_role("button", name="Cordon cpu-1").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    assert "places no new pods on it" in dialog.inner_text()
    dialog.get_by_role("button", name="Cancel").click()
    dialog.wait_for(state="hidden")
    page.wait_for_timeout(300)
    assert not Node.objects.get(name="cpu-1").unschedulable  # cancelling changes nothing
    card.get_by_role("button", name="Cordon cpu-1").click()
    dialog.get_by_role("button", name="Cordon").click()
    page.wait_for_selector("#flash .alert.ok")
    assert "Uncordon to undo" in page.locator("#flash").inner_text()
    card.locator(".badge", has_text="Cordoned").wait_for()  # the grid refreshed without a reload
    assert Node.objects.get(name="cpu-1").unschedulable
    shot(page, "nodes-cordoned")
    card.get_by_role("button", name="Uncordon cpu-1").click()
    card.locator(".badge", has_text="Ready").wait_for()
    assert not Node.objects.get(name="cpu-1").unschedulable
    guard.check()
