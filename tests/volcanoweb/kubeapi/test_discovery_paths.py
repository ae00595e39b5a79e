"""Discovery on every path kube-apiserver answers: with and without a trailing slash, the aggregated
``apidiscovery.k8s.io`` documents kubectl 1.30+ asks for, and the official client's own discovery calls."""

from __future__ import annotations

import pytest
from kubernetes import client

from volcanoweb.kubeapi import discovery

AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("/api", "APIVersions"),
        ("/api/", "APIVersions"),
        ("/api/v1", "APIResourceList"),
        ("/api/v1/", "APIResourceList"),
        ("/apis", "APIGroupList"),
        ("/apis/", "APIGroupList"),
        ("/apis/batch.volcano.sh", "APIGroup"),
        ("/apis/batch.volcano.sh/", "APIGroup"),
        ("/apis/batch.volcano.sh/v1alpha1", "APIResourceList"),
        ("/apis/batch.volcano.sh/v1alpha1/", "APIResourceList"),
    ],
)
def test_every_discovery_path_with_and_without_the_slash(alice_api, url: str, kind: str) -> None:
    response = alice_api.get(url)
    assert response.status_code == 200, (url, response.content[:200])
    assert response.json()["kind"] == kind
    assert alice_api.get("/version/").json()["major"] == "1"


@pytest.mark.django_db
def test_the_aggregated_documents(alice_api) -> None:
    response = alice_api.get("/apis", HTTP_ACCEPT=AGGREGATED)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert "Accept" in response["Vary"]
    body = response.json()
    assert body["kind"] == "APIGroupDiscoveryList"
    assert body["apiVersion"] == "apidiscovery.k8s.io/v2"
    groups = {item["metadata"]["name"]: item for item in body["items"]}
    assert "" not in groups
    batch = groups["batch.volcano.sh"]["versions"][0]
    assert batch["version"] == "v1alpha1"
    assert batch["freshness"] == "Current"
    jobs = {r["resource"]: r for r in batch["resources"]}["jobs"]
    assert jobs["responseKind"] == {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"}
    assert jobs["scope"] == "Namespaced"
    assert jobs["singularResource"] == "job"
    assert jobs["shortNames"] == ["vcjob", "vj"]
    assert jobs["subresources"] == [{"subresource": "status", "responseKind": jobs["responseKind"], "verbs": ["get"]}]
    queues = {r["resource"]: r for r in groups["scheduling.volcano.sh"]["versions"][0]["resources"]}["queues"]
    assert queues["scope"] == "Cluster"

    core = alice_api.get("/api/", HTTP_ACCEPT=AGGREGATED).json()
    assert [item["metadata"]["name"] for item in core["items"]] == [""]
    pods = {r["resource"]: r for r in core["items"][0]["versions"][0]["resources"]}["pods"]
    assert {"subresource": "log", "responseKind": {"group": "", "version": "v1", "kind": "Pod"}, "verbs": ["get"]} in (
        pods["subresources"]
    )
    # v2beta1 alone: that version; plain JSON first: the legacy document.
    beta = alice_api.get(
        "/apis", HTTP_ACCEPT="application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    )
    assert beta.json()["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    assert alice_api.get("/apis", HTTP_ACCEPT="application/json").json()["kind"] == "APIGroupList"


def test_the_accept_header_order_decides() -> None:
    assert discovery.aggregated_version(AGGREGATED) == "v2"
    assert discovery.aggregated_version("application/json, " + AGGREGATED) is None
    assert discovery.aggregated_version("application/yaml") is None
    assert discovery.aggregated_version("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList") is None


@pytest.mark.django_db(transaction=True)
def test_the_official_clients_discovery_calls(official, cast) -> None:
    api = official(cast.alice)
    groups = client.ApisApi(api).get_api_versions()
    assert "batch.volcano.sh" in {g.name for g in groups.groups}
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    resources = client.CoreV1Api(api).get_api_resources()
    names = {r.name for r in resources.resources}
    assert {"pods", "pods/log", "events", "namespaces"} <= names
    assert client.VersionApi(api).get_code().git_version.startswith("v1.32")
