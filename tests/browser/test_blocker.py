"""A job that can never run does not block others (issue 29, item 1), end to end in headless Chromium.

On the demo cluster (GPU nodes of 4 GPU each, 16 in all) with the loops in-process: a job whose pod asks 8 GPU
is submitted first, then jobs of 12 and 16 GPU (pods of 4). The demo's scheduler configuration (with the
enqueuegate plugin) keeps the blocker out of the admission room (Pending, with a NeverFits condition and event in
numbers), so the 12-GPU job runs, then the 16-GPU job after it (the whole cluster), while the blocker waits; while
the 16-GPU job waits for the 12's GPUs its page does not count the blocker as ahead.

The demo's ml-team guarantees 4 GPU, which Volcano's flat proportion subtracts from every queue's real capability
(ml-training's would be 12 GPU: a 16-GPU job could never be admitted there, blocker or not). The scenario is the
issue's, on a cluster that can run a 16-GPU job: ml-team guarantees CPU and memory only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings

from tests.browser.conftest import login, open_page, shot
from tests.e2e.procs import database_url, free_port, manage, running, wait_http

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "volcano-demo"


def _gpu_job(name: str, pods: int, per_pod: int) -> str:
    container = {
        "name": "main",
        "image": "busybox",
        "resources": {
            "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": str(per_pod)},
            "limits": {"nvidia.com/gpu": str(per_pod)},
        },
    }
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "schedulerName": "volcano",
            "queue": "ml-training",
            "minAvailable": pods,
            "tasks": [
                {
                    "name": "trainer",
                    "replicas": pods,
                    "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
                }
            ],
        },
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _prepare() -> None:
    from volcanoweb.demo.services import seed_demo
    from volcanoweb.jobs.models import Job
    from volcanoweb.queues import services as queue_services
    from volcanoweb.tenancy.access import SYSTEM

    seed_demo()
    Job.objects.all().delete()  # an idle cluster: the jobs below are the only ones
    guarantee = {"resource": {"cpu": "50", "memory": "200Gi"}}  # no GPU: ml-training may use all 16
    queue_services.update_queue_spec(SYSTEM, "ml-team", {"guarantee": guarantee}, source="test")


def _submit(page: Any, name: str, pods: int, per_pod: int) -> str:
    page.goto("/submit/")
    page.get_by_label("Manifest YAML").fill(_gpu_job(name, pods, per_pod))
    page.wait_for_selector(f"#dry-run :text('{name}')")
    page.wait_for_selector("#dry-run .verdict")
    verdict = str(page.locator("#dry-run .verdict").first.inner_text())
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(f"**/jobs/ml/{name}/")
    return verdict


def _wait_phase(page: Any, name: str, phase: str, timeout: int = 90000) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"/jobs/ml/{name}/")
    try:
        page.wait_for_function(
            "p => { const el = document.querySelector('[data-phase]'); return el && el.textContent.trim() === p; }",
            arg=phase,
            timeout=timeout,
        )
    except PlaywrightTimeout:
        page.reload()
        reasons = page.locator("ul.reasons").all_inner_texts()
        raise AssertionError(f"{name} is not {phase}; why pending: {reasons}") from None


def _condition(name: str) -> dict[str, Any]:
    """The blocker's PodGroup's Unschedulable condition (as the job controller and the gate wrote it)."""
    from volcanoweb.jobs.models import PodGroup

    group = PodGroup.objects.get(namespace="ml", job__name=name)
    conditions = (group.status or {}).get("conditions") or []
    found = [c for c in conditions if c.get("type") == "Unschedulable"]
    assert found, group.status
    return dict(found[-1])


def test_a_job_that_can_never_run_waits_with_its_condition_and_the_others_run(browser: Any, tmp_path: Path) -> None:
    _prepare()
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path),
        "RUN_LOOPS_IN_PROCESS": "true",
        "CLUSTER_BACKEND": "sim",
        "SIM_CLOCK_SPEED": "1",
        "SIM_DEFAULT_DURATION": "6",
        "SCHEDULE_PERIOD": "0.5",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }
    log_path = Path(__file__).resolve().parents[2] / "artifacts" / "blocker-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with running(manage("runembedded", "--no-seed", "--port", str(port), "--https-port", "0"), env, log_path) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/healthz", proc=proc)
        context, page, guard = open_page(browser, base)
        try:
            login(page, "alice", PASSWORD)
            verdict = _submit(page, "blocker", 1, 8)
            assert verdict.startswith("Can never run: 0 of the 1 pods the gang needs fit any node"), verdict
            assert "each pod asks 8 GPU, the largest node it may use has 4 GPU" in verdict
            _submit(page, "twelve", 3, 4)
            _submit(page, "sixteen", 4, 4)
            _wait_phase(page, "twelve", "Running")
            page.goto("/jobs/ml/blocker/")
            panel = page.locator("ul.reasons")
            panel.wait_for()
            text = panel.inner_text()
            assert "Can never run: no node can hold its pods, even with the cluster empty" in text
            assert "each pod asks 8 GPU, the largest node it may use has 4 GPU" in text
            assert page.locator("[data-phase]").inner_text().strip() == "Pending"
            shot(page, "blocker-never-fits")
            page.emulate_media(color_scheme="dark")
            shot(page, "blocker-never-fits-dark")
            page.emulate_media(color_scheme="light")
            events = page.goto("/jobs/ml/blocker/?fragment=events")
            assert events is not None
            assert "pod group can never run" in events.text()
            page.goto("/jobs/ml/sixteen/")
            if page.locator("[data-phase]").inner_text().strip() == "Pending":  # waits for the 12's GPUs
                sixteen = page.locator("ul.reasons").inner_text()
                assert "Blocked by" not in sixteen
                assert "Ahead: ml/blocker" not in sixteen
                shot(page, "blocker-sixteen-waits")
            _wait_phase(page, "sixteen", "Running")  # after the 12-GPU job completes: all 16 GPUs
            page.locator("#job-suggest").wait_for(state="detached")  # no 'Compute suggestions' on a running job
            shot(page, "blocker-sixteen-runs")
            page.goto("/jobs/ml/blocker/")
            assert page.locator("[data-phase]").inner_text().strip() == "Pending"
            assert "Can never run" in page.locator("ul.reasons").inner_text()
            condition = _condition("blocker")
            assert condition["reason"] == "NeverFits", condition
            assert (
                "each pod asks 8 nvidia.com/gpu, the largest node it may use has 4 nvidia.com/gpu"
                in condition["message"]
            )
            guard.check()
        finally:
            context.close()
