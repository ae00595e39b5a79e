"""Queue history: per-cycle samples rolled up per minute and hour, JSON and CSV, markers, pruning, scoping."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.volcanoweb import builders
from tests.volcanoweb.insights.scenario import small_queue_scenario
from volcanoweb.insights import services
from volcanoweb.insights.models import QueueSample, Resolution
from volcanoweb.queues import services as queue_services
from volcanoweb.tenancy.access import SYSTEM


@pytest.mark.django_db(transaction=True)
def test_history_json_csv_markers_and_rollups(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    small_queue_scenario(clock, finish=False)
    queue_services.apply_queue(
        SYSTEM, builders.queue_manifest("small", capability={"cpu": "8", "memory": "64Gi"}, allowed=("team-a",))
    )
    small_queue_scenario_cycles = QueueSample.objects.filter(queue="small", resolution=Resolution.CYCLE).count()
    assert small_queue_scenario_cycles == 6
    api = client_for(cast.alice)
    # before any roll-up, coarse queries read the per-cycle samples
    early = api.get("/api/v1/queues/small/history?from=2h&step=1h").json()
    assert early["resolution"] == "hour"
    assert sum(p["samples"] for p in early["points"]) == 6
    later = timezone.now() + timedelta(hours=2)
    rolled = services.rollup(later)
    assert rolled["minute"] >= 1
    assert rolled["hour"] >= 1
    assert services.rollup(later) == {"minute": 0, "hour": 0}  # idempotent
    minute = QueueSample.objects.filter(queue="small", resolution=Resolution.MINUTE)
    hour = QueueSample.objects.filter(queue="small", resolution=Resolution.HOUR)
    assert sum(m.samples for m in minute) == sum(h.samples for h in hour) == 6
    assert hour.last().capability == {"cpu": 4000, "memory": 64 * 1024**3}
    body = api.get("/api/v1/queues/small/history?from=1h").json()
    assert body["kind"] == "QueueHistory"
    assert body["resolution"] == "cycle"
    assert len(body["points"]) == 6
    last = body["points"][-1]
    assert last["allocated"]["cpu"] == 4000
    assert last["capability"]["cpu"] == 4000
    assert last["jobs"] == {"Pending": 1, "Running": 1}
    assert "cpu" in body["resources"]
    assert [(m["kind"], m["action"]) for m in body["markers"]] == [("queue", "create"), ("queue", "update")]
    # averaged per step from the minute roll-up
    stepped = api.get("/api/v1/queues/small/history?from=1h&step=10m").json()
    assert stepped["resolution"] == "minute"
    assert 1 <= len(stepped["points"]) <= 2
    assert sum(p["samples"] for p in stepped["points"]) == 6
    assert 0 < stepped["points"][0]["allocated"]["cpu"] <= 4000
    hourly = api.get("/api/v1/queues/small/history?from=2h&step=1h").json()
    assert hourly["resolution"] == "hour"
    assert sum(p["samples"] for p in hourly["points"]) == 6
    # CSV
    response = api.get("/api/v1/queues/small/history?from=1h&format=csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    cpu = [r for r in rows if r["resource"] == "cpu"]
    assert len(cpu) == 6
    assert cpu[-1]["allocated"] == "4000.0"
    assert cpu[-1]["capability"] == "4000"
    assert cpu[-1]["jobs_running"] == "1.0"


@pytest.mark.django_db(transaction=True)
def test_history_rejects_bad_parameters_and_other_tenants(cluster: Any, cast: Any, client_for: Any) -> None:
    builders.make_queue("private", tenant="team-a")
    api = client_for(cast.alice)
    for query, field in (
        ("from=yesterday", "from"),
        ("step=-5", "step"),
        ("from=1h&to=2h", "from"),
        ("from=90d&step=1s", "step"),
    ):
        response = api.get(f"/api/v1/queues/private/history?{query}")
        assert response.status_code == 400, query
        assert response.json()["kind"] == "Status"
        assert response.json()["details"]["causes"][0]["field"] == field, query
    assert api.get("/api/v1/queues/private/history").status_code == 200
    assert client_for(cast.charlie).get("/api/v1/queues/private/history").status_code == 404
    assert client_for(None).get("/api/v1/queues/private/history").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_prune_keeps_each_rollup_for_its_retention(cluster: Any, cast: Any, settings: Any) -> None:
    now = timezone.now()
    for resolution, age in ((Resolution.CYCLE, 7200), (Resolution.MINUTE, 2 * 86400), (Resolution.HOUR, 100 * 86400)):
        QueueSample.objects.create(resolution=resolution, queue="default", bucket=now - timedelta(seconds=age))
        QueueSample.objects.create(resolution=resolution, queue="default", bucket=now - timedelta(seconds=60))
    counts = services.prune(now)
    assert counts["cycle"] == counts["minute"] == counts["hour"] == 1
    assert QueueSample.objects.count() == 3
    settings.INSIGHTS_CYCLE_RETENTION = 30
    assert services.prune(now)["cycle"] == 1


def test_prune_is_a_registered_periodic_task(settings: Any) -> None:
    assert (
        "insights-prune",
        "volcanoweb.insights.tasks.prune",
        settings.INSIGHTS_PRUNE_PERIOD,
    ) in settings.PERIODIC_TASKS
    assert settings.CELERY_BEAT_SCHEDULE["insights-prune"]["task"] == "volcanoweb.insights.tasks.prune"
