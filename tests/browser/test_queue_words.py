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
    shot(page, "job-gang-and-sim-clock")
    page.emulate_media(color_scheme="dark")
    shot(page, "job-gang-and-sim-clock-dark")
    guard.check()
