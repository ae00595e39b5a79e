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
from tests.browser.test_dashboard import demo  # noqa: F401  (the fixture)

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


def _dry_run(page: Any, name: str, pods: int, per_pod: int) -> str:
    """The Submit page's dry run of a GPU job, as text (nothing is applied)."""
    page.goto("/submit/")
    page.get_by_label("Manifest YAML").fill(_gpu_job(name, pods, per_pod))
    page.wait_for_selector(f"#dry-run :text('{name}')")
    page.wait_for_selector("#dry-run .verdict")
    return str(page.locator("#dry-run .verdict").first.inner_text()) + "\n" + str(page.locator("#dry-run").inner_text())


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
            dry = _dry_run(page, "twelve", 3, 4)  # the Submit page says the same as the job's page will
            assert dry.startswith(
                "Would wait: blocked by ml/blocker: it holds 2 CPU, 4 GiB, 8 GPU of admission room and can never run"
            ), dry
            assert "8 admitted (inqueue) + 12 requested = 20 GPU > 19.2 GPU admissible" in dry
            assert "Fix its requests or delete it" in dry
            shot(page, "submit-blocked-by-a-job-that-can-never-run")
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
            page.emulate_media(color_scheme="light")
            # the suggestions fix or remove the blocker, not the blocked job's size
            page.get_by_role("button", name="Compute suggestions").click()
            result = page.locator("#job-suggestions-result")
            result.wait_for(timeout=60000)
            suggested = result.inner_text()
            assert "Fix or delete ml/blocker: it was admitted" in suggested, suggested
            assert "verified" in suggested
            assert suggested.index("Fix or delete ml/blocker") < suggested.index("Why")  # the first suggestion
            shot(page, "why-pending-blocker-suggestions")
            guard.check()
        finally:
            context.close()


def test_the_dry_run_of_a_gang_its_queue_can_never_admit_says_so_with_the_sum(session: Any, demo: None) -> None:  # noqa: F811
    """The demo as shipped: ml-team guarantees 4 of the 16 GPUs, so under proportion ml-training can get at most 12
    and a 16-GPU job there is never admitted. The dry run said "Would be stored but stay Pending: queue resource quota
    insufficient" on an idle cluster, with no figure; it says it can never run there, and the sum that decided."""
    from volcanoweb.jobs.models import Job

    Job.objects.all().delete()  # an idle cluster
    page, guard = session
    login(page, "alice", PASSWORD)
    dry = _dry_run(page, "sixteen", 4, 4)
    assert dry.startswith(
        "Can never run in queue ml-training: 16 GPU needed > 12 GPU the queue can ever get "
        "(16 in the cluster \u2212 4 that other queues' guarantees reserve: ml-team 4)"
    ), dry
    assert "16 requested + 0 allocated + 0 admitted \u2212 0 elastic = 16 GPU > 12 GPU the queue may use" in dry
    assert "stay Pending" not in dry
    shot(page, "submit-queue-can-never-admit")
    page.emulate_media(color_scheme="dark")
    shot(page, "submit-queue-can-never-admit-dark")
    page.emulate_media(color_scheme="light")
    fits = _dry_run(page, "twelve", 3, 4)  # within the 12: placed now
    assert fits.startswith("Would be admitted and placed now: 3 of 3 pods"), fits
    guard.check()
