"""A job's wait as a timeline: intervals with the core's reason, milestones, time-to-start per queue."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb.insights.scenario import cycle, small_queue_scenario
from volcanoweb.insights.models import EntryKind, TimelineEntry

URL = "/api/v1/namespaces/team-a/jobs/{}/timeline"


@pytest.mark.django_db(transaction=True)
def test_waiting_job_timeline_names_reason_queue_holder_then_start(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    small_queue_scenario(clock)
    body = client_for(cast.bob).get(URL.format("waiter")).json()
    assert body["kind"] == "JobTimeline"
    kinds = [(e["kind"], e["reason"]) for e in body["entries"]]
    assert kinds == [
        ("wait", "enqueue-rejected"),
        ("milestone", "Inqueue"),
        ("milestone", "Bound"),
        ("milestone", "Running"),
    ]
    wait = body["entries"][0]
    assert wait["plugin"] == "proportion"
    assert wait["open"] is False
    assert wait["to"] is not None
    assert wait["seconds"] >= 0
    assert [h["job"] for h in wait["numbers"]["holders"]] == ["holder"]
    assert "insufficient cpu in queue small" in wait["summary"]
    assert "(queue small: cpu 4/4 used, memory 1Gi/64Gi used; by holder)" in wait["summary"]
    assert body["entries"][2]["summary"].endswith("2 pod(s) bound")
    assert body["started"] is not None
    # the holder never waited: admitted, bound, running
    holder = client_for(cast.alice).get(URL.format("holder")).json()
    assert [e["reason"] for e in holder["entries"]] == ["Inqueue", "Bound", "Running"]


@pytest.mark.django_db(transaction=True)
def test_open_interval_while_waiting_and_one_interval_per_reason(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    small_queue_scenario(clock, finish=False)
    cycle(clock)
    waits = TimelineEntry.objects.filter(job__name="waiter", kind=EntryKind.WAIT)
    assert waits.count() == 1  # four cycles with the same reason: one interval
    body = client_for(cast.alice).get(URL.format("waiter")).json()
    assert body["entries"][-1]["open"] is True
    assert body["entries"][-1]["to"] is None
    assert body["started"] is None


@pytest.mark.django_db(transaction=True)
def test_timeline_is_tenant_scoped(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    small_queue_scenario(clock, finish=False)
    other = client_for(cast.charlie).get(URL.format("waiter"))
    assert other.status_code == 404
    assert other.json()["kind"] == "Status"
    assert client_for(None).get(URL.format("waiter")).status_code == 401
    assert client_for(cast.alice).get(URL.format("nope")).status_code == 404
    assert client_for(cast.root, "token").get(URL.format("waiter")).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_time_to_start_percentiles_per_queue(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    small_queue_scenario(clock)
    api = client_for(cast.alice)
    body = api.get("/api/v1/queues/small/time-to-start?days=1").json()
    assert body["jobs"] == 2
    assert 0 <= body["p50"] <= body["p90"] <= body["p99"]
    assert "first pods" in body["how"]
    bad = api.get("/api/v1/queues/small/time-to-start?days=abc")
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "days"
    assert client_for(cast.charlie).get("/api/v1/queues/small/time-to-start").status_code == 404


def test_percentile_interpolates_between_ranks() -> None:
    from volcanoweb.insights.services import percentile

    assert percentile([], 50) == 0.0
    assert percentile([10.0], 99) == 10.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([4.0, 1.0, 3.0, 2.0], 100) == 4.0


def test_a_wait_for_gpus_does_not_blame_a_job_that_holds_no_gpu() -> None:
    """The timeline names the jobs holding what the gang lacks: a CPU-only job is not blamed for a GPU wait."""
    from django.utils import timezone

    from volcanoweb.insights.models import EntryKind, TimelineEntry
    from volcanoweb.insights.services import _summary

    entry = TimelineEntry(
        kind=EntryKind.WAIT,
        started_at=timezone.now(),
        queue="ml",
        message="queue resource quota insufficient: insufficient nvidia.com/gpu in queue ml",
    )
    numbers = {
        "holders": [
            {"podgroup": "ml/cpu-job", "job": "ml/cpu-job", "requests": {"cpu": 64000, "memory": 1}},
            {"podgroup": "ml/gpu-job", "job": "ml/gpu-job", "requests": {"cpu": 2000, "nvidia.com/gpu": 4}},
        ]
    }
    text = _summary(entry, numbers)
    assert "by ml/gpu-job" in text
    assert "cpu-job" not in text
    cpu_entry = TimelineEntry(
        kind=EntryKind.WAIT, started_at=timezone.now(), queue="ml", message="insufficient cpu in queue ml"
    )
    assert "by ml/cpu-job, ml/gpu-job" in _summary(cpu_entry, numbers)
