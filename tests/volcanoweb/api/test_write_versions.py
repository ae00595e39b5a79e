"""A write's answer carries the revision its commit got, on both APIs: the client can send that object back
as its next update without a 409 (ADR 0024; on PostgreSQL the revision is given at commit, after the
service rendered its answer)."""

from __future__ import annotations

import json

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.conftest import post_yaml, put_yaml
from volcanoweb.jobs.models import Job

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/namespaces/team-a/jobs"
KUBE_JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"


def _row_version(name: str) -> str:
    return str(Job.objects.get(namespace="team-a", name=name).resource_version)


def test_the_rest_apis_answer_is_the_stored_revision_and_can_be_sent_back(alice_api) -> None:
    created = post_yaml(alice_api, JOBS, builders.to_yaml(builders.job_manifest("train")))
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["metadata"]["resourceVersion"] == _row_version("train")
    body["metadata"]["labels"] = {"round": "two"}
    updated = put_yaml(alice_api, f"{JOBS}/train", builders.to_yaml(body))
    assert updated.status_code == 200, updated.content  # the answer's version is the current one: no 409
    assert updated.json()["metadata"]["resourceVersion"] == _row_version("train")
    applied = post_yaml(alice_api, "/api/v1/apply?namespace=team-a", builders.to_yaml(builders.job_manifest("other")))
    assert applied.status_code in (200, 201), applied.content
    (item,) = applied.json()["items"]
    assert item["object"]["metadata"]["resourceVersion"] == _row_version("other")


def test_the_kubernetes_apis_patch_answer_is_the_stored_revision(alice_api) -> None:
    builders.make_job("team-a", "train")
    patched = alice_api.patch(
        f"{KUBE_JOBS}/train",
        data=json.dumps({"metadata": {"labels": {"a": "1"}}}),
        content_type="application/merge-patch+json",
    )
    assert patched.status_code == 200, patched.content
    assert patched.json()["metadata"]["resourceVersion"] == _row_version("train")
