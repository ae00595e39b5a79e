"""The why-pending panel's numbers agree with the Nodes page and name what stands in the way."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PASSWORD, demo  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _largest_gpu_node(page: Any) -> int:
    """The most GPUs any node has, read off the Nodes page ("used / total GPU")."""
    page.goto("/nodes/")
    totals = [
        int(float(text.split("/")[1].split()[0].replace(",", "")))
        for text in page.locator("[data-node-resource='nvidia.com/gpu']").all_inner_texts()
    ]
    assert totals, "the demo cluster has GPU nodes"
    return max(totals)


def test_a_pod_no_node_can_hold_is_named_with_the_nodes_pages_numbers(session: Any, demo: None) -> None:  # noqa: F811
    from tests.volcanoweb import builders
    from volcanoweb.jobs import services as job_services

    page, guard = session
    login(page, "alice", PASSWORD)
    largest = _largest_gpu_node(page)
    want = largest * 2  # more than any one node, less than the cluster's total
    trainer = builders.task(name="trainer", replicas=1, cpu="2")
    trainer["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = str(want)
    trainer["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": str(want)}
    job_services.apply_job(
        builders.SYSTEM, builders.job_manifest("too-wide", namespace="ml", queue="ml-training", tasks=[trainer])
    )
    page.goto("/jobs/ml/too-wide/")
    panel = page.locator("ul.reasons")
    panel.wait_for()
    text = panel.inner_text()
    assert "No single node can ever run a pod of task trainer" in text
    assert f"{want} GPU (the largest node has {largest})" in text
    shot(page, "job-why-pending-no-node-fits")
    guard.check()
