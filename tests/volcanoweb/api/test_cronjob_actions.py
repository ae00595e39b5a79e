"""POST /api/v1/namespaces/{ns}/cronjobs/{name}/suspend|resume|run."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.builders import task
from tests.volcanoweb.conftest import Cast, ClientFactory
from volcanoweb.jobs.models import Job
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.models import CronJob

pytestmark = pytest.mark.django_db
URL = "/api/v1/namespaces/team-a/cronjobs"


@pytest.fixture
def nightly(cast: Cast) -> CronJob:
    builders.make_queue("qa", tenant="team-a")
    doc: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"queue": "qa", "tasks": [task()]}}},
    }
    workflows.apply_cronjob(SYSTEM, doc, "team-a", mode="create")
    return CronJob.objects.get(name="nightly")


def test_suspend_resume_and_run(nightly: CronJob, client_for: ClientFactory, cast: Cast) -> None:
    bob = client_for(cast.bob, "token")
    suspended = bob.post(f"{URL}/nightly/suspend")
    assert suspended.status_code == 200, suspended.json()
    body = suspended.json()
    assert (body["kind"], body["spec"]["suspend"]) == ("CronJob", True)
    assert bob.get(f"{URL}/nightly").json()["spec"]["suspend"] is True
    assert bob.post(f"{URL}/nightly/suspend").status_code == 200  # idempotent
    resumed = bob.post(f"{URL}/nightly/resume")
    assert resumed.status_code == 200
    assert resumed.json()["spec"]["suspend"] is False

    ran = bob.post(f"{URL}/nightly/run")
    assert ran.status_code == 200, ran.json()
    job = ran.json()
    assert job["kind"] == "Job"
    assert job["metadata"]["name"].startswith("nightly-manual-")
    assert job["metadata"]["ownerReferences"][0]["uid"] == str(nightly.uid)
    assert Job.objects.filter(controller_uid=nightly.uid).count() == 1
    status = bob.get(f"{URL}/nightly").json()["status"]
    assert [ref["name"] for ref in status["active"]] == [job["metadata"]["name"]]


def test_errors(nightly: CronJob, client_for: ClientFactory, cast: Cast) -> None:
    alice, victor, charlie = client_for(cast.alice), client_for(cast.victor), client_for(cast.charlie)
    missing = alice.post(f"{URL}/nope/run")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"
    for verb in ("suspend", "resume", "run"):
        assert victor.post(f"{URL}/nightly/{verb}").status_code == 403
        assert charlie.post(f"{URL}/nightly/{verb}").status_code == 403
        assert client_for(None).post(f"{URL}/nightly/{verb}").status_code == 401
        assert alice.get(f"{URL}/nightly/{verb}").status_code == 405
    assert Job.objects.count() == 0


def test_run_with_an_invalid_template_is_a_400_naming_the_field(
    nightly: CronJob, client_for: ClientFactory, cast: Cast
) -> None:
    CronJob.objects.filter(pk=nightly.pk).update(
        spec={**nightly.spec, "jobTemplate": {"spec": {"queue": "qa", "tasks": [{"name": "bad", "replicas": -1}]}}}
    )
    response = client_for(cast.alice).post(f"{URL}/nightly/run")
    assert response.status_code == 400, response.json()
    assert response.json()["kind"] == "Status"
    assert "spec.tasks" in str(response.json())
    assert Job.objects.count() == 0
