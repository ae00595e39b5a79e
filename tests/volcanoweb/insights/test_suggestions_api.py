"""What would get a pending job running: each suggestion verified by a simulated cycle, and true when applied."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.insights.scenario import cycle, small_queue_scenario, submit
from volcanoweb.jobs.models import PodGroup
from volcanoweb.queues import services as queue_services
from volcanoweb.runtime import services as runtime
from volcanoweb.tenancy.access import SYSTEM

URL = "/api/v1/namespaces/team-a/jobs/{}/suggestions"


@pytest.mark.django_db(transaction=True)
def test_suggestions_for_a_job_blocked_by_its_queue_capability(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    builders.make_queue("team-b-only", tenant="team-b")
    small_queue_scenario(clock, finish=False)
    body = client_for(cast.bob).get(URL.format("waiter")).json()
    assert body["kind"] == "JobSuggestions"
    assert body["pending"] is True
    by_kind = {s["kind"]: s for s in body["suggestions"]}
    assert set(by_kind) == {"queue-capability", "other-queue", "running-jobs-finish"}
    assert all(s["verified"] for s in body["suggestions"])
    assert all("simulated scheduling cycle" in s["how"] for s in body["suggestions"])
    capability = by_kind["queue-capability"]
    assert capability["queue"] == "small"
    assert capability["change"] == {"cpu": {"from": "4", "to": "8"}}
    queues = sorted(s["queue"] for s in body["suggestions"] if s["kind"] == "other-queue")
    assert queues == ["default", "roomy"]  # not team-b's queue, not the root
    finishing = by_kind["running-jobs-finish"]
    assert finishing["jobs"] == ["team-a/holder"]
    assert finishing["estimatedSeconds"] >= 0
    assert "sim.volcanoweb.io/duration" in finishing["how"]
    assert "estimate" in finishing["how"]
    assert body["cycles"] >= 5
    # the suggestion is a fact: applying it starts the job in the next cycles
    queue_services.apply_queue(
        SYSTEM, builders.queue_manifest("small", capability={"cpu": "8", "memory": "64Gi"}, allowed=("team-a",))
    )
    cycle(clock)
    cycle(clock)
    group = PodGroup.objects.get(job__name="waiter")
    assert group.phase in ("Inqueue", "Running")
    assert group.pods.exclude(node_name="").count() == 2


@pytest.mark.django_db(transaction=True)
def test_lower_min_available_is_found_by_simulation(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    builders.make_queue("six", capability={"cpu": "6", "memory": "64Gi"}, allowed=("team-a",))
    submit("holder", "six", 1, "2")
    cycle(clock)
    cycle(clock)
    job = builders.make_job("team-a", "wide", queue="six", tasks=[builders.task("w", 4, cpu="2")], minAvailable=4)
    runtime.on_job_submitted(job.pk)
    cycle(clock)
    cycle(clock)
    body = client_for(cast.alice).get(URL.format("wide")).json()
    by_kind = {s["kind"]: s for s in body["suggestions"]}
    assert by_kind["min-available"]["change"] == {"minAvailable": {"from": 4, "to": 2}}
    assert by_kind["replicas"]["change"]["replicas"] == {"from": 4, "to": 2}


@pytest.mark.django_db(transaction=True)
def test_suggestions_are_tenant_scoped_and_empty_for_running_jobs(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    small_queue_scenario(clock, finish=False)
    assert client_for(cast.charlie).get(URL.format("waiter")).status_code == 404
    assert client_for(None).get(URL.format("waiter")).status_code == 401
    holder = client_for(cast.alice).get(URL.format("holder")).json()
    assert holder["pending"] is False
    assert holder["suggestions"] == []


@pytest.mark.django_db(transaction=True)
def test_an_admitted_job_that_can_never_run_is_the_suggestion_not_the_blocked_jobs_size(
    cluster: Any, cast: Any, client_for: Any
) -> None:
    """Under a configuration without the enqueuegate plugin (Volcano's default) a 10-CPU pod on 8-CPU nodes is
    admitted and holds 10 of the 38.4 admissible CPUs: the 4 x 7.5-CPU gang is refused. The suggestion is to fix
    or delete the blocker (verified), not to shrink the gang; deleting it starts the gang."""
    from scheduler.config import DEFAULT_CONFIG_YAML
    from volcanoweb.jobs import services as job_services
    from volcanoweb.scheduling import services as scheduling_services

    _, clock = cluster
    scheduling_services.save_config(SYSTEM, DEFAULT_CONFIG_YAML, comment="Volcano's default")
    submit("blocker", "default", 1, "10")
    cycle(clock)
    cycle(clock)
    assert PodGroup.objects.get(job__name="blocker").phase == "Inqueue"
    submit("wide", "default", 4, "7500m")
    cycle(clock)
    cycle(clock)
    assert PodGroup.objects.get(job__name="wide").phase == "Pending"
    body = client_for(cast.alice).get(URL.format("wide")).json()
    kinds = [s["kind"] for s in body["suggestions"]]
    assert kinds[0] == "remove-blocker"
    assert "min-available" not in kinds
    assert "replicas" not in kinds
    blocker = body["suggestions"][0]
    assert blocker["jobs"] == ["team-a/blocker"]
    assert blocker["title"].startswith("Fix or delete team-a/blocker: it was admitted, holds 10 cpu")
    assert "can never run" in blocker["why"]
    assert blocker["verified"] is True
    job_services.delete_job(SYSTEM, "team-a", "blocker")
    for _ in range(3):
        cycle(clock)
    assert PodGroup.objects.get(job__name="wide").pods.exclude(node_name="").count() == 4
