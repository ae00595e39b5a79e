"""Garbage collection by ownerReferences: deleting a CronJob or a JobFlow deletes the Jobs it created
(Background, Foreground) or keeps them without the reference (Orphan); a client's own ownerReferences too."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.builders import task
from volcanoweb.jobs.models import Job, Pod, PodGroup
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.controllers.cronjob import sync_cronjob
from volcanoweb.workflows.models import CronJob, JobFlow

from .conftest import NAMESPACE, cookbook_14, make_cronjob, owned_jobs, utc
from .test_jobflow_controller import DIAMOND, make_flow, sync

pytestmark = pytest.mark.django_db


def _cronjob_with_jobs() -> tuple[CronJob, list[Job]]:
    cronjob = make_cronjob(cookbook_14(), utc(2026, 1, 1, 0, 0), schedule="0 * * * *", concurrencyPolicy="Allow")
    for hour in (1, 2):
        assert sync_cronjob(cronjob.pk, utc(2026, 1, 1, hour, 0) + timedelta(seconds=5)) is not None
    jobs = owned_jobs(cronjob)
    assert len(jobs) == 2
    assert all(j.owner_references[0]["uid"] == str(cronjob.uid) for j in jobs)
    return cronjob, jobs


def test_deleting_a_cronjob_deletes_its_jobs_in_the_background(namespace: object) -> None:
    cronjob, jobs = _cronjob_with_jobs()
    workflows.delete_workflow_object(SYSTEM, "CronJob", NAMESPACE, cronjob.name)
    assert not CronJob.objects.filter(pk=cronjob.pk).exists()
    assert not Job.objects.filter(pk__in=[j.pk for j in jobs]).exists()


def test_orphan_keeps_the_jobs_without_the_reference(namespace: object) -> None:
    cronjob, jobs = _cronjob_with_jobs()
    workflows.delete_workflow_object(SYSTEM, "CronJob", NAMESPACE, cronjob.name, "Orphan")
    kept = list(Job.objects.filter(pk__in=[j.pk for j in jobs]))
    assert len(kept) == 2
    assert all(j.owner_references == [] for j in kept)
    assert all(j.resource_version > before.resource_version for j, before in zip(kept, jobs, strict=True))


def test_foreground_deletes_the_dependents_first_and_answers_the_finalizer(namespace: object) -> None:
    flow = sync(make_flow(DIAMOND))
    assert [j.name for j in owned_jobs(flow)] == ["diamond-a"]
    outcome = workflows.delete_workflow_object(SYSTEM, "JobFlow", NAMESPACE, flow.name, "Foreground")
    assert outcome.object["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert outcome.object["metadata"]["deletionTimestamp"]
    assert not JobFlow.objects.filter(pk=flow.pk).exists()
    assert not Job.objects.filter(name="diamond-a").exists()


def test_a_jobflows_jobs_go_with_it(namespace: object) -> None:
    flow = sync(make_flow(DIAMOND, name="flow2"))
    workflows.delete_workflow_object(SYSTEM, "JobFlow", NAMESPACE, flow.name)
    assert not Job.objects.filter(name="flow2-a").exists()


@pytest.fixture
def api(client_for, cast):
    builders.make_queue("qa", tenant="team-a")
    return client_for(cast.alice, "token")


JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"
CRONJOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/cronjobs"


def _cronjob(api, name: str) -> dict:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"queue": "qa", "tasks": [task()]}}},
    }
    created = api.post(CRONJOBS, data=json.dumps(doc), content_type="application/json")
    assert created.status_code == 201, created.json()
    return created.json()


def _owned_job(api, name: str, owner: dict, **ref: object) -> dict:
    doc = builders.job_manifest(name)
    doc["spec"]["queue"] = "qa"
    doc["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            **ref,
        }
    ]
    created = api.post(JOBS, data=json.dumps(doc), content_type="application/json")
    assert created.status_code == 201, created.json()
    return created.json()


def test_the_kubernetes_api_takes_the_propagation_policy(api) -> None:
    owner = _cronjob(api, "nightly")
    _owned_job(api, "child", owner)  # an ownerReference the client set itself
    orphan = api.delete(
        f"{CRONJOBS}/nightly",
        data=json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"}),
        content_type="application/json",
    )
    assert orphan.status_code == 200, orphan.json()
    assert api.get(f"{JOBS}/child").json()["metadata"].get("ownerReferences") is None

    owner = _cronjob(api, "nightly")
    _owned_job(api, "child2", owner, controller=True, blockOwnerDeletion=True)
    assert api.delete(f"{CRONJOBS}/nightly").status_code == 200  # Background by default
    assert api.get(f"{JOBS}/child2").status_code == 404

    owner = _cronjob(api, "nightly")
    _owned_job(api, "child3", owner, blockOwnerDeletion=True)
    foreground = api.delete(f"{CRONJOBS}/nightly?propagationPolicy=Foreground")
    assert foreground.status_code == 200
    assert api.get(f"{JOBS}/child3").status_code == 404


def test_a_job_owned_by_a_job_and_a_standalone_podgroup(api) -> None:
    parent = api.post(JOBS, data=json.dumps(builders.job_manifest("parent")), content_type="application/json").json()
    _owned_job(api, "kid", parent)
    group = PodGroup.objects.create(
        namespace="team-a",
        tenant=Job.objects.get(name="parent").tenant,
        name="side-group",
        spec={"minMember": 1, "queue": "default"},
        owner_references=[
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "name": "parent",
                "uid": parent["metadata"]["uid"],
            }
        ],
    )
    assert api.delete(f"{JOBS}/parent").status_code == 200
    assert not Job.objects.filter(name__in=["parent", "kid"]).exists()
    assert not PodGroup.objects.filter(pk=group.pk).exists()
    assert not Pod.objects.filter(namespace="team-a").exists()
    # Orphan stays refused for a Job: its own pods and PodGroup go with it.
    api.post(JOBS, data=json.dumps(builders.job_manifest("single")), content_type="application/json")
    refused = api.delete(f"{JOBS}/single?propagationPolicy=Orphan")
    assert refused.status_code == 400
