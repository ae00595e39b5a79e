"""A job's events stay for its whole life: PodGroup events after the PodGroup is gone, and evictions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb.dashboard.test_runtime import sim, submit  # noqa: F401  (the fixture)
from tests.volcanoweb.reactions import react
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Event, Job, Pod, PodGroup
from volcanoweb.runtime import services as runtime_services
from volcanoweb.scheduling.services import run_cycle
from volcanoweb.tenancy.access import SYSTEM

pytestmark = pytest.mark.django_db


def _running(name: str) -> Job:
    job = submit(name, "default", replicas=2, cpu="1")
    run_cycle()  # admits the gang
    react()  # its pods
    cluster_services.sync_from_backend()
    run_cycle()  # binds its pods
    cluster_services.sync_from_backend()
    react()
    run_cycle()  # sees them running: the PodGroup is Running ("pod group is ready")
    react()
    return Job.objects.get(pk=job.pk)


def _events_html(client: Any, job: Job) -> str:
    return client.get(f"/jobs/{job.namespace}/{job.name}/?fragment=events").content.decode()


def test_node_failure_evictions_are_recorded_on_the_job_and_podgroup_events_stay(
    sim: Any,  # noqa: F811
    cast: Any,
    login: Any,
) -> None:
    job = _running("evictee")
    group_name = PodGroup.objects.get(job=job).name
    assert Event.objects.filter(involved_kind="PodGroup", involved_name=group_name).exists()
    node = Pod.objects.filter(job=job).exclude(node_name="").values_list("node_name", flat=True).first()
    assert node
    sim.fail_node(node)
    cluster_services.sync_from_backend()
    react()  # the job controller sees its pods gone
    evicted = Event.objects.filter(involved_kind="Job", involved_name=job.name, reason="PodEvicted")
    assert evicted.exists()
    message = evicted.first().message
    assert f"from node {node}" in message
    assert "NodeLost" in message
    # suspending the job deletes its PodGroup (KillJob); the group's events are still the job's
    job_services.issue_job_command(SYSTEM, job.namespace, job.name, "AbortJob")
    runtime_services.sync_job(job.pk)
    assert not PodGroup.objects.filter(name=group_name).exists()
    html = _events_html(login(cast.alice), job)
    assert "PodEvicted" in html
    assert f"from node {node}" in html
    assert f"PodGroup team-a/{group_name}" in html


def test_another_tenant_cannot_read_the_events(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    job = _running("private")
    assert login(cast.charlie).get(f"/jobs/team-a/{job.name}/?fragment=events").status_code == 404
