"""Queue and job numbers say what they are (issue 29, item 8): the queue tree's capacity line is the capacity, not
usage; a job's gang reads "running of N needed (minAvailable)", not minutes; the simulated cluster's fast clock
is said on every page, with what it means for durations."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PASSWORD, demo  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_queue_and_job_numbers_say_what_they_are(session: Any, demo: None) -> None:  # noqa: F811
    from django.conf import settings

    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/queues/")
    legend = page.locator(".legend").inner_text()
    assert "Cluster capacity used" not in legend
    assert "Shares are of the cluster's capacity (schedulable nodes, not what is in use)" in legend
    page.goto("/jobs/ml/pytorch-distributed/")
    gang = page.locator("#job-status .stat", has_text="Gang").inner_text()
    assert "0 running of 4 needed" in gang
    assert " min" not in gang.replace("minAvailable", "")
    badge = page.locator("[data-sim-clock]")
    speed = float(settings.SIM_CLOCK_SPEED)
    assert speed != 1  # the product's default (10x) in the tests' settings
    assert badge.inner_text().strip() == f"Sim clock {speed:g}\u00d7"
    assert f"a 1 h job ends in {60 / speed:g} minutes" in (badge.get_attribute("title") or "")
    # where durations show (pods' start times, job ages, the manifests' run times), the fast clock is said
    fast = f"clock {speed:g}\u00d7 real time"
    assert fast in page.locator("section:has(#pods-h) [data-sim-clock-note]").inner_text()
    shot(page, "job-gang-and-sim-clock")
    page.emulate_media(color_scheme="dark")
    shot(page, "job-gang-and-sim-clock-dark")
    page.emulate_media(color_scheme="light")
    page.goto("/jobs/")
    assert fast in page.locator("[data-sim-clock-note]").inner_text()
    page.goto("/submit/")
    note = page.locator("[data-sim-clock-note]").inner_text()
    assert fast in note
    assert "sim.volcanoweb.io/duration" in note
    page.goto("/queues/ml-training/insights/")  # its time to start, in seconds
    assert fast in page.locator("section:has(#tts-h) [data-sim-clock-note]").inner_text()
    guard.check()


def test_a_cronjobs_runs_say_the_fast_clock(session: Any, demo: None) -> None:  # noqa: F811
    """A CronJob's history lists its jobs' starts and finishes: with the simulated cluster's fast clock, a 1 h
    report finishes 6 minutes after it started; the history says so."""
    from pathlib import Path

    import yaml
    from django.conf import settings

    from volcanoweb.tenancy.access import SYSTEM
    from volcanoweb.workflows import services as workflows

    doc = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "volcanoweb/demo/cookbook/14-cronjob-daily-report.yaml").read_text()
    )
    workflows.apply_cronjob(SYSTEM, doc, "data")
    page, guard = session
    login(page, "carol", PASSWORD)
    page.goto("/cronjobs/data/daily-report/")
    page.get_by_role("group", name="CronJob actions").get_by_role("button", name="Run now").click()
    page.get_by_role("dialog").get_by_role("button", name="Run now").click()
    history = page.locator("#cron-history")
    history.locator("table").wait_for()
    fast = f"clock {float(settings.SIM_CLOCK_SPEED):g}\u00d7 real time"
    assert fast in history.locator("[data-sim-clock-note]").inner_text()
    shot(page, "cronjob-history-sim-clock")
    page.emulate_media(color_scheme="dark")
    shot(page, "cronjob-history-sim-clock-dark")
    guard.check()


def test_the_tree_and_the_what_if_agree_and_gpus_are_whole(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    login(page, "alice", PASSWORD)
    page.goto("/queues/")
    tree = {
        name: page.locator(f"tr#q-ml-training [data-deserved='{name}']").inner_text().strip()
        for name in ("cpu", "memory", "nvidia.com/gpu")
    }
    page.locator("tr#q-ml-training").get_by_role("button", name="Edit ml-training").click()
    page.wait_for_selector("#queue-preview table[data-preview=demand]")
    now = {
        name: page.locator(f"tr[data-demand-queue=ml-training] [data-now='{name}']").inner_text().strip()
        for name in tree
    }
    assert now == tree  # one computation: the what-if's "now" is the tree's deserved
    gpus = page.locator("table.tree [data-deserved='nvidia.com/gpu']").all_inner_texts()
    gpus += page.locator("#queue-preview td:nth-child(4)").all_inner_texts()
    numbers = [part.strip() for text in gpus for part in text.split("\u2192")]
    assert numbers
    assert all(n.replace(",", "").isdigit() or n == "\u2013" for n in numbers), numbers
    shot(page, "queues-what-if-agrees")
    page.emulate_media(color_scheme="dark")
    shot(page, "queues-what-if-agrees-dark")
    guard.check()
