"""Numbers in the why-pending panel and the events are in the units people use and say what they are."""

from __future__ import annotations

from typing import Any

import pytest

from volcanoweb.dashboard.diagnosis import human_message, reason_facts

pytestmark = pytest.mark.django_db


def test_resource_vectors_in_messages_are_rewritten() -> None:
    text = "task ml/a-0 requests {'cpu': 8000, 'memory': 34359738368}, queue has allocated {'cpu': 0} of {'cpu': 4000}"
    assert human_message(text) == "task ml/a-0 requests 8 CPU, 32 GiB, queue has allocated 0 CPU of 4 CPU"
    assert human_message("no vectors here {x}") == "no vectors here {x}"


def test_overcommitted_idle_is_labelled_and_the_real_idle_shown(cast: Any) -> None:
    idle = {"cpu": 307_200, "memory": int(1843.2 * 1024**3), "nvidia.com/gpu": 19.2}
    facts = dict(reason_facts({"idle": idle, "requested": {"cpu": 8000}}, "overcommit"))
    assert facts["Idle \u00d7 overcommit factor 1.2"] == "307.2 CPU, 1,843.2 GiB, 19.2 GPU"
    assert facts["Idle in cluster (as on the Nodes page)"] == "256 CPU, 1,536 GiB, 16 GPU"
    assert "Idle in cluster" not in facts  # the unlabelled, inflated line is gone


def test_event_messages_use_human_units(world: Any, login: Any) -> None:
    from volcanoweb.jobs.models import Event

    Event.objects.create(
        namespace="team-a",
        tenant=world.job_a.tenant,
        involved_kind="Job",
        involved_namespace="team-a",
        involved_name="train-a",
        type="Warning",
        reason="Unschedulable",
        message="task team-a/train-a-0 requests {'cpu': 8000, 'memory': 34359738368}",
    )
    html = login(world.cast.alice).get("/jobs/team-a/train-a/?fragment=events").content.decode()
    assert "requests 8 CPU, 32 GiB" in html
    assert "34359738368" not in html
