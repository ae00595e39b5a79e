"""Deleting a job's pod (kubectl delete pod) as on Volcano: the pod goes, the controller sees PodEvicted and the
job's policies decide (by default the pod is created again; a RestartJob policy restarts the job)."""

from __future__ import annotations

import pytest

from tests.volcanoweb.dashboard.test_events import _running
from tests.volcanoweb.reactions import react
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Event, Job, Pod
from volcanoweb.scheduling.services import run_cycle

pytestmark = pytest.mark.django_db


def _settle() -> None:
    for _ in range(3):
        cluster_services.sync_from_backend()
        react()
        run_cycle()
        react()


def test_a_deleted_job_pod_is_created_again(sim_backend, client_for, cast) -> None:
    job = _running("recreate")
    pod = Pod.objects.filter(job=job).order_by("name").first()
    assert pod is not None
    old_uid = pod.uid
    api = client_for(cast.alice, "token")
    deleted = api.delete(f"/api/v1/namespaces/team-a/pods/{pod.name}")
    assert deleted.status_code == 200, deleted.json()
    _settle()
    again = Pod.objects.get(namespace="team-a", name=pod.name)
    assert again.uid != old_uid  # a new pod of the same task and index
    assert again.deletion_timestamp is None
    assert Event.objects.filter(involved_name=job.name, reason="PodEvicted").exists()
    assert Job.objects.get(pk=job.pk).phase in ("Running", "Pending", "Restarting")
    # Another tenant still cannot.
    other = Pod.objects.filter(job=job).exclude(pk=again.pk).first()
    assert other is not None
    assert client_for(cast.charlie, "token").delete(f"/api/v1/namespaces/team-a/pods/{other.name}").status_code == 403


def test_the_jobs_pod_evicted_policy_decides(sim_backend, client_for, cast) -> None:
    from tests.volcanoweb.dashboard.test_runtime import _job_doc
    from volcanoweb.jobs import services as job_services
    from volcanoweb.runtime import services as runtime_services
    from volcanoweb.tenancy.access import SYSTEM

    doc = _job_doc("aborted", "default", replicas=2, cpu="1")
    doc["spec"]["policies"] = [{"event": "PodEvicted", "action": "AbortJob"}]
    job_services.apply_job(SYSTEM, doc, "team-a")
    job = Job.objects.get(namespace="team-a", name="aborted")
    runtime_services.on_job_submitted(job.pk)
    for _ in range(3):
        cluster_services.sync_from_backend()
        run_cycle()
        runtime_services.on_podgroups_changed([job.pk])
    pod = Pod.objects.filter(job=job, phase="Running").order_by("name").first()
    assert pod is not None
    assert client_for(cast.alice, "token").delete(f"/api/v1/namespaces/team-a/pods/{pod.name}").status_code == 200
    _settle()
    assert Job.objects.get(pk=job.pk).phase in ("Aborting", "Aborted")
