"""Discovery, /version and OpenAPI as kubectl reads them; authentication required everywhere."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def _resources(client, url: str) -> dict[str, dict]:
    body = client.get(url).json()
    assert body["kind"] == "APIResourceList"
    return {r["name"]: r for r in body["resources"]}


def test_api_groups_and_versions(alice_api) -> None:
    assert alice_api.get("/api").json()["versions"] == ["v1"]
    groups = {g["name"]: g for g in alice_api.get("/apis").json()["groups"]}
    assert set(groups) == {
        "batch.volcano.sh",
        "bus.volcano.sh",
        "flow.volcano.sh",
        "scheduling.volcano.sh",
        "scheduling.k8s.io",
        "topology.volcano.sh",
    }
    assert groups["topology.volcano.sh"]["preferredVersion"]["groupVersion"] == "topology.volcano.sh/v1alpha1"
    assert groups["scheduling.volcano.sh"]["preferredVersion"]["groupVersion"] == "scheduling.volcano.sh/v1beta1"
    assert alice_api.get("/apis/batch.volcano.sh").json()["versions"][0]["version"] == "v1alpha1"
    missing = alice_api.get("/apis/apps")
    assert missing.status_code == 404
    assert missing.json()["kind"] == "Status"


def test_resource_lists_carry_verbs_short_names_and_categories(alice_api) -> None:
    batch = _resources(alice_api, "/apis/batch.volcano.sh/v1alpha1")
    assert batch["jobs"]["shortNames"] == ["vcjob", "vj"]
    assert batch["jobs"]["namespaced"] is True
    assert "volcano" in batch["jobs"]["categories"]
    assert {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} <= set(
        batch["jobs"]["verbs"]
    )
    assert batch["jobs/status"]["verbs"] == ["get"]
    assert batch["cronjobs"]["shortNames"] == ["cronvcjob", "cronvj"]
    scheduling = _resources(alice_api, "/apis/scheduling.volcano.sh/v1beta1")
    assert scheduling["queues"]["shortNames"] == ["q", "queue-v1beta1"]
    assert scheduling["queues"]["namespaced"] is False
    assert scheduling["podgroups"]["shortNames"] == ["pg", "podgroup-v1beta1"]
    flow = _resources(alice_api, "/apis/flow.volcano.sh/v1alpha1")
    assert set(flow) >= {"jobflows", "jobtemplates"}
    assert _resources(alice_api, "/apis/bus.volcano.sh/v1alpha1")["commands"]["verbs"] == [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "watch",
    ]
    core = _resources(alice_api, "/api/v1")
    assert core["events"]["verbs"] == ["get", "list", "watch"]
    assert core["namespaces"]["verbs"] == ["get", "list", "watch"]
    assert "create" in core["pods"]["verbs"]
    assert "priorityclasses" in _resources(alice_api, "/apis/scheduling.k8s.io/v1")


def test_version_and_openapi(alice_api) -> None:
    assert alice_api.get("/version").json()["gitVersion"].startswith("v1.32")
    root = alice_api.get("/openapi/v3").json()["paths"]
    url = root["apis/batch.volcano.sh/v1alpha1"]["serverRelativeURL"]
    doc = alice_api.get(url).json()
    item = doc["paths"]["/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/{name}"]
    # kubectl leaves validation to the server when PATCH names fieldValidation for the kind.
    assert item["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "batch.volcano.sh",
        "version": "v1alpha1",
        "kind": "Job",
    }
    assert "fieldValidation" in {p["name"] for p in item["patch"]["parameters"]}
    v2 = alice_api.get("/openapi/v2").json()
    assert v2["swagger"] == "2.0"
    assert "/apis/scheduling.volcano.sh/v1beta1/queues/{name}" in v2["paths"]


@pytest.mark.parametrize("url", ["/api", "/apis", "/openapi/v3", "/apis/batch.volcano.sh/v1alpha1/jobs"])
def test_anonymous_callers_get_401(client_for, url) -> None:
    response = client_for(None).get(url)
    assert response.status_code == 401
    assert response.json()["reason"] == "Unauthorized"
