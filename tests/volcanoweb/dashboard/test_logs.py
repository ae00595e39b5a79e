"""Pod logs on the job page, from the (database-backed) simulated cluster: tail, previous, validation, scoping."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb.dashboard.test_events import _running
from tests.volcanoweb.dashboard.test_runtime import sim  # noqa: F401  (the fixture)
from volcanoweb.jobs.models import Pod

pytestmark = pytest.mark.django_db


def _url(job_name: str, pod: str) -> str:
    return f"/jobs/team-a/{job_name}/pods/{pod}/logs/"


def test_a_running_pods_log_streams_from_the_sim(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    job = _running("logs")
    pod = Pod.objects.filter(job=job).order_by("name").first()
    assert pod is not None
    assert pod.phase == "Running"
    client = login(cast.victor)  # viewers may read logs of their tenant's jobs
    page = client.get(f"/jobs/team-a/{job.name}/").content.decode()
    assert f'aria-label="Logs of {pod.name}"' in page
    html = client.get(_url(job.name, pod.name)).content.decode()
    assert f"scheduled to node {pod.node_name}" in html
    assert "container main started" in html
    assert 'data-log-state="streaming"' in html
    assert 'hx-trigger="every 2s"' in html  # re-read while the pod runs
    body = client.get(_url(job.name, pod.name), {"part": "body", "tail": "1"}).content.decode()
    assert 'id="pod-log-body"' in body
    assert "<section" not in body
    previous = client.get(_url(job.name, pod.name), {"previous": "1"}).content.decode()
    assert "has not restarted" in previous


def test_a_finished_pods_log_shows_the_exit_code_and_stops_refreshing(
    sim: Any,  # noqa: F811
    cast: Any,
    login: Any,
) -> None:
    job = _running("short")
    pod = Pod.objects.filter(job=job).order_by("name").first()
    assert pod is not None
    sim.fail_pod("team-a", pod.name, 3)
    Pod.objects.filter(pk=pod.pk).update(phase="Failed", exit_code=3)
    html = login(cast.alice).get(_url(job.name, pod.name)).content.decode()
    assert "exited with code 3" in html
    assert 'data-log-state="complete"' in html
    assert "every 2s" not in html


def test_bad_log_requests_name_the_field(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    job = _running("bad")
    pod = Pod.objects.filter(job=job).first()
    assert pod is not None
    client = login(cast.alice)
    tail = client.get(_url(job.name, pod.name), {"tail": "lots"})
    assert tail.status_code == 400
    assert "tail" in tail.content.decode()
    container = client.get(_url(job.name, pod.name), {"container": "sidecar"})
    assert container.status_code == 400
    assert "has no container" in container.content.decode()


def test_logs_are_tenant_scoped(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    job = _running("mine")
    pod = Pod.objects.filter(job=job).first()
    assert pod is not None
    assert login(cast.charlie).get(_url(job.name, pod.name)).status_code == 404
    anonymous = login(cast.alice)
    anonymous.logout()
    assert anonymous.get(_url(job.name, pod.name)).status_code == 302  # to the login page
