"""Why-pending numbers reconcile with the Nodes page and show the comparison that decided (issue 29, items 1 and
5), under Volcano's own configuration (no enqueue gate), where the 8-GPU-per-pod blocker is admitted."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import login, open_page, shot
from tests.browser.embedded import embedded_server
from tests.browser.test_blocker import _gpu_job, _submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "volcano-demo"


def _free_gpus_on_the_nodes_page(page: Any) -> float:
    page.goto("/nodes/")
    free = 0.0
    for text in page.locator("[data-node-resource='nvidia.com/gpu']").all_inner_texts():
        used, total = (float(part.split()[0].replace(",", "")) for part in text.split("/"))
        free += total - used
    return free


def _wait_until_inqueue(name: str, timeout: float = 60.0) -> None:
    """Wait for the embedded server's scheduler to admit the job (a fixed pause raced the cycle on a loaded CI)."""
    from volcanoweb.jobs.models import PodGroup, PodGroupPhase

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        phase = PodGroup.objects.filter(job__namespace="ml", job__name=name).values_list("phase", flat=True)
        if PodGroupPhase.INQUEUE in phase:
            return
        time.sleep(0.2)
    raise AssertionError(f"ml/{name} was not admitted (Inqueue) within {timeout:.0f} s: {list(phase)}")


def test_the_blocked_jobs_page_names_the_blocker_and_the_deciding_sum(browser: Any, tmp_path: Path) -> None:
    from scheduler.config import DEFAULT_CONFIG_YAML
    from volcanoweb.demo.services import seed_demo
    from volcanoweb.jobs.models import Job
    from volcanoweb.scheduling import services as scheduling_services
    from volcanoweb.tenancy.access import SYSTEM

    seed_demo()
    Job.objects.all().delete()
    scheduling_services.save_config(SYSTEM, DEFAULT_CONFIG_YAML, comment="Volcano's default: no enqueue gate")
    assert _gpu_job("x", 1, 1)  # the helper is shared with test_blocker
    with embedded_server(tmp_path, "why-pending-numbers-server") as base:
        context, page, guard = open_page(browser, base)
        try:
            login(page, "alice", PASSWORD)
            verdict = _submit(page, "blocker", 1, 8)
            assert verdict.startswith("Can never run: each pod of task trainer asks 8 GPU (the largest node has 4)")
            _wait_until_inqueue("blocker")  # admitted by Volcano's enqueue: it holds 8 GPU of admission room
            _submit(page, "twelve", 3, 4)
            free = _free_gpus_on_the_nodes_page(page)
            assert free == 16
            page.goto("/jobs/ml/twelve/")
            panel = page.locator("ul.reasons")
            panel.get_by_text("Blocked by ml/blocker").wait_for(timeout=30000)
            page.reload()
            text = page.locator("ul.reasons").inner_text()
            assert text.index("Blocked by ml/blocker") < text.index("Not admitted")  # the blocker first
            assert "it holds 2 CPU, 4 GiB, 8 GPU of admission room and can never run" in text
            assert (
                "8 admitted (inqueue) + 12 requested = 20 GPU > 19.2 GPU admissible "
                "(16 in the cluster \u00d7 overcommit factor 1.2 \u2212 0 in use)"
            ) in text
            assert "16 GPU" in text.split("Free in cluster (as on the Nodes page)")[1].split("\n")[1]
            assert "15.8" not in text
            shot(page, "why-pending-blocker-and-sum")
            page.emulate_media(color_scheme="dark")
            shot(page, "why-pending-blocker-and-sum-dark")
            guard.check()
        finally:
            context.close()
