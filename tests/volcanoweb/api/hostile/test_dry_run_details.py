"""Dry runs and DeleteOptions in detail: the issue's three cases, REST's ``dryRun=true``, a bad value, the
preconditions of a delete (uid, resourceVersion) on both APIs, and the Kubernetes backend's ``dryRun=All``."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.builders import job_manifest, queue_manifest, to_yaml
from tests.volcanoweb.conftest import Cast, post_yaml, put_yaml
from volcanoweb.clusters.backends.kubernetes import KubernetesBackend
from volcanoweb.core import dryrun
from volcanoweb.jobs.models import Job, Pod
from volcanoweb.queues.models import Queue

pytestmark = pytest.mark.both_databases
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def train(cast: Cast) -> Job:
    builders.make_queue("qa", tenant="team-a")
    return builders.make_job("team-a", "train", queue="qa")


def delete(client: APIClient, url: str, options: dict[str, Any]) -> Any:
    return client.delete(url, data=json.dumps({"kind": "DeleteOptions", **options}), content_type="application/json")


def test_kubectl_delete_dry_run_server_keeps_the_job(cast: Cast, train: Job) -> None:
    response = delete(api(cast.alice), f"{JOBS}/train", {"dryRun": ["All"]})
    assert response.status_code == 200, response.content
    assert Job.objects.filter(pk=train.pk, deletion_timestamp__isnull=True).exists()


def test_put_queue_dry_run_true_stores_nothing(cast: Cast) -> None:
    builders.make_queue("qa", weight=2)
    response = put_yaml(api(cast.root), "/api/v1/queues/qa?dryRun=true", to_yaml(queue_manifest("qa", weight=9)))
    assert response.status_code == 200, response.content
    assert response.json()["spec"]["weight"] == 9  # the answer is what the write would store
    assert Queue.objects.get(name="qa").weight == 2


def test_post_pod_dry_run_all_creates_no_pod(cast: Cast) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    response = api(cast.alice).post(
        "/api/v1/namespaces/team-a/pods?dryRun=All", data=json.dumps(pod), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    assert not Pod.objects.filter(name="p").exists()


def test_an_unknown_dry_run_value_is_a_400_and_writes_nothing(cast: Cast) -> None:
    response = post_yaml(api(cast.root), "/api/v1/queues?dryRun=Maybe", to_yaml(queue_manifest("qx")))
    assert response.status_code == 400
    assert response.json()["details"]["causes"][0]["field"] == "dryRun"
    assert not Queue.objects.filter(name="qx").exists()


@pytest.mark.parametrize("api_path", [f"{JOBS}/train", "/api/v1/namespaces/team-a/jobs/train"])
def test_delete_preconditions_are_checked(cast: Cast, train: Job, api_path: str) -> None:
    alice = api(cast.alice)
    stale_uid = delete(alice, api_path, {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})
    assert stale_uid.status_code == 409, stale_uid.content
    assert "Precondition failed: UID in precondition" in stale_uid.json()["message"]
    stale_version = delete(alice, api_path, {"preconditions": {"resourceVersion": "999999"}})
    assert stale_version.status_code == 409
    assert "ResourceVersion in precondition: 999999" in stale_version.json()["message"]
    assert Job.objects.filter(pk=train.pk, deletion_timestamp__isnull=True).exists()
    train.refresh_from_db()
    matching = {"uid": str(train.uid), "resourceVersion": str(train.resource_version)}
    assert delete(alice, api_path, {"preconditions": matching}).status_code == 200
    assert not Job.objects.filter(pk=train.pk, deletion_timestamp__isnull=True).exists()


def test_preconditions_on_queues_and_priority_classes(cast: Cast) -> None:
    root = api(cast.root)
    builders.make_queue("qa")
    post_yaml(
        root,
        "/api/v1/priorityclasses",
        to_yaml(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10}
        ),
    )
    for url in ("/api/v1/queues/qa", "/api/v1/priorityclasses/high"):
        assert delete(root, url, {"preconditions": {"uid": "nope"}}).status_code == 409
    assert Queue.objects.filter(name="qa").exists()


def test_the_kubernetes_backend_sends_writes_with_dry_run_all() -> None:
    backend = object.__new__(KubernetesBackend)
    backend.request_timeout = 1.0
    seen: list[dict[str, Any]] = []

    def patch_node(name: str, body: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return SimpleNamespace(data=b"{}")

    def list_node(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return SimpleNamespace(data=b"{}")

    backend._call("cordon", patch_node, "n1", {})
    with dryrun.marked():
        backend._call("cordon", patch_node, "n1", {})
        backend._call("list", list_node)
    assert ["dry_run" in kwargs for kwargs in seen] == [False, True, False]
    assert seen[1]["dry_run"] == "All"


def test_a_job_created_in_a_dry_run_is_reported_but_not_stored(cast: Cast) -> None:
    builders.make_queue("qa", tenant="team-a")
    body = json.dumps(job_manifest("dry", namespace="team-a", queue="qa"))
    response = api(cast.alice).post(f"{JOBS}?dryRun=All", data=body, content_type="application/json")
    assert response.status_code == 201
    assert response.json()["metadata"]["name"] == "dry"
    assert not Job.objects.filter(name="dry").exists()
