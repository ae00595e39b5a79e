"""The dashboard against the real runtime: scheduler reasons, cycle health, queue status."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import make_sim
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Job, PodGroup
from volcanoweb.runtime import services as runtime_services
from volcanoweb.scheduling.services import run_cycle
from volcanoweb.tenancy.access import SYSTEM

pytestmark = pytest.mark.django_db


@pytest.fixture
def sim(cast: Any) -> Iterator[Any]:
    backend, _clock = make_sim()
    previous = backend_module.set_backend(backend)
    cluster_services.sync_from_backend()
    yield backend
    backend_module.set_backend(previous)


def _job_doc(name: str, queue: str, replicas: int = 2, cpu: str = "2") -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": replicas,
            "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {"containers": [container]}}}],
        },
    }


def submit(name: str, queue: str, **kw: Any) -> Job:
    job_services.apply_job(SYSTEM, _job_doc(name, queue, **kw), "team-a")
    job = Job.objects.get(namespace="team-a", name=name)
    runtime_services.on_job_submitted(job.pk)
    cluster_services.sync_from_backend()
    return job


def _panel(html: str) -> str:
    start = html.index('id="why-h"')
    return html[start : html.index("</section>", start)]


def test_why_pending_panel_shows_the_schedulers_reason(sim: Any, cast: Any, login: Any) -> None:
    builders.make_queue("small", tenant="team-a", capability={"cpu": "2", "memory": "8Gi"})
    job = submit("big", "small", replicas=4)  # 4 x 2 CPUs against a 2-CPU capability
    run = run_cycle()
    assert run is not None
    assert run.status == "succeeded", run.error
    group = PodGroup.objects.get(job=job)
    stored = run.unschedulable[group.key]
    html = login(cast.alice).get(f"/jobs/team-a/{job.name}/").content.decode()
    panel = _panel(html)
    assert stored["message"] in panel  # the scheduler's own text
    assert panel.count(stored["message"]) == 1  # condition and event repeat it: shown once
    assert f'data-reason-kind="{stored["kind"]}"' in panel
    assert "Queue may use (its real capability)" in panel
    assert "Decided on CPU" in panel
    assert "2 CPU" in panel
    assert "Gang requests" in panel
    assert "8 CPU" in panel
    assert f"cycle #{run.pk}" in panel
    assert "Waiting for the next scheduling cycle" not in panel


def test_why_pending_falls_back_to_the_runs_reasons(sim: Any, cast: Any, login: Any) -> None:
    builders.make_queue("small", tenant="team-a", capability={"cpu": "2", "memory": "8Gi"})
    job = submit("big", "small", replicas=4)
    run = run_cycle()
    assert run is not None
    group = PodGroup.objects.get(job=job)
    message = run.unschedulable[group.key]["message"]
    PodGroup.objects.filter(pk=group.pk).update(status={})  # e.g. a controller rewrote the status
    panel = _panel(login(cast.alice).get(f"/jobs/team-a/{job.name}/").content.decode())
    assert message in panel
    assert f"cycle #{run.pk}" in panel


def test_overview_shows_cycle_health(sim: Any, cast: Any, login: Any) -> None:
    submit("fits", "default", replicas=2, cpu="1")
    runs = [run_cycle() for _ in range(3)]
    html = login(cast.root).get("/").content.decode()
    health = html[html.index('id="health"') :]
    last = runs[-1]
    assert last is not None
    assert f"#{last.pk}" in health
    assert "<polyline" in health  # the duration sparkline
    assert "allocate" in health
    assert "enqueue" in health
    assert health.count("data-cycle=") == 3
    fragment = login(cast.root).get("/?fragment=health", HTTP_HX_REQUEST="true").content.decode()
    assert f"#{last.pk}" in fragment
    assert "<main" not in fragment


def test_queue_page_allocation_matches_the_runtime_status(sim: Any, cast: Any, login: Any) -> None:
    from volcanoweb.dashboard.resources import parse_map
    from volcanoweb.queues.models import Queue

    job = submit("fits", "default", replicas=2, cpu="1")
    run_cycle()
    runtime_services.on_podgroups_changed([job.pk])
    cluster_services.sync_from_backend()
    run_cycle()
    queue = Queue.objects.get(name="default")
    assert parse_map(queue.allocated)["cpu"] == 2000  # the cycle's queue status
    html = login(cast.root).get("/queues/").content.decode()
    row = html[html.index('id="q-default"') :]
    row = row[: row.index("</tr>")]
    assert "2 / " in row  # allocated CPU cores from the bound pods agrees with the status
    assert f'<td class="num">{queue.running}</td>' in row


def test_queue_shares_are_the_schedulers_deserved(sim: Any, cast: Any, login: Any) -> None:
    """The pages' shares come from the scheduler's water-filling: they equal the cycle's deserved."""
    from volcanoweb.dashboard import queries
    from volcanoweb.dashboard.scope import Scope
    from volcanoweb.tenancy.access import access_for

    builders.make_queue("heavy", tenant="team-a", weight=3)
    builders.make_queue("light", tenant="team-a", weight=1, guarantee={"cpu": "10"})
    builders.make_queue("capped", tenant="team-a", weight=4, capability={"cpu": "4"})
    # 16 + 16 + 4 cores of gangs for the sim's 32: each is admitted, together they do not fit
    jobs = [submit("h", "heavy", replicas=8), submit("l", "light", replicas=8), submit("c", "capped", replicas=2)]
    run_cycle()  # admits the gangs that fit; then their pods are created
    runtime_services.on_podgroups_changed([job.pk for job in jobs])
    cluster_services.sync_from_backend()
    run = run_cycle()
    assert run is not None
    assert run.status == "succeeded", run.error
    scheduler = run.decisions["queueDeserved"]
    assert set(scheduler) == {"heavy", "light", "capped"}
    rows, _capacity = queries.queue_tree(Scope(access=access_for(cast.alice)))
    shown = {r.queue.name: r.deserved for r in rows}
    for name, deserved in scheduler.items():
        for resource in ("cpu", "memory"):
            assert round(shown[name].get(resource, 0)) == deserved.get(resource, 0), (name, resource)
    # weights 3 : 1 : 4, light's guarantee of 10 cores, capped's capability of 4, heavy's request of 16
    assert {name: scheduler[name]["cpu"] for name in scheduler} == {"heavy": 16000, "light": 12000, "capped": 4000}
    html = login(cast.alice).get("/queues/").content.decode()
    row = html[html.index('id="q-light"') :]
    assert 'data-deserved="cpu">12<' in row[: row.index("</tr>")]
