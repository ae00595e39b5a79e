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


def test_a_jobs_events_are_its_own_not_a_rerun_s_nor_an_earlier_namesake_s(cast: Any, login: Any) -> None:
    """Events were matched by name only: Run again's ``train-2`` has pods named ``train-2-worker-N``, which start
    with ``train-``, so their exits showed on ``train``'s page; and a job made again under a deleted job's name
    showed the old job's JobCompleted while it waited to start."""
    from datetime import timedelta

    from django.utils import timezone

    from tests.volcanoweb import builders
    from volcanoweb.jobs.services.events import record_event

    builders.make_queue("q", tenant="team-a")
    old = builders.make_job("team-a", "train", queue="q", tasks=[builders.task("worker", 1, cpu="1")])
    record_event(old, "Job", "Normal", "JobCompleted", "job Running → Completed: 1 succeeded; retries 0 of 3")
    Event.objects.filter(involved_uid=old.uid).update(
        first_timestamp=timezone.now() - timedelta(minutes=5), last_timestamp=timezone.now() - timedelta(minutes=5)
    )
    job_services.delete_job(SYSTEM, "team-a", "train")
    new = builders.make_job("team-a", "train", queue="q", tasks=[builders.task("worker", 1, cpu="1")])
    Job.objects.filter(pk=new.pk).update(phase="Failed")
    rerun = job_services.run_again(SYSTEM, "team-a", "train")
    rerun_pod = Pod(namespace="team-a", name=f"{rerun.name}-worker-0")
    record_event(
        rerun_pod, "Pod", "Warning", "PodFailed", f"pod {rerun.name}-worker-0 of task worker exited with code 1"
    )
    own_pod = Pod(namespace="team-a", name="train-worker-0")
    record_event(own_pod, "Pod", "Warning", "PodFailed", "pod train-worker-0 of task worker exited with code 2")
    html = _events_html(login(cast.alice), new)
    assert "pod train-worker-0 of task worker exited with code 2" in html  # its own pod's
    assert "JobCompleted" not in html  # the deleted namesake's
    assert f"{rerun.name}-worker-0" not in html  # the re-run's pod's
    again = _events_html(login(cast.alice), Job.objects.get(namespace="team-a", name=rerun.name))
    assert f"pod {rerun.name}-worker-0 of task worker exited with code 1" in again
