"""Everyday kubectl commands through the Kubernetes API: nodes (core v1, read-only, printer columns),
auth can-i (SelfSubjectAccessReview, JSON and kubectl's protobuf) and whoami, cluster-info's services,
/livez, /readyz and /version as kube-apiserver answers them, and strategic merge patch refused on custom kinds."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from kubernetes import client

from volcanoweb.clusters.backends.sim import parse_pool_spec

pytestmark = pytest.mark.django_db
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


def _can(api, **attributes: str) -> dict:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    answer = api.post(SSAR, data=json.dumps(body), content_type="application/json")
    assert answer.status_code == 201, answer.content
    return answer.json()["status"]


def test_simulated_nodes_carry_the_kubelets_labels_and_disk() -> None:
    (node,) = parse_pool_spec("cpu:1x8c32Gi")
    assert node.labels["kubernetes.io/os"] == "linux"
    assert node.labels["kubernetes.io/arch"] == "amd64"
    assert node.labels["kubernetes.io/hostname"] == "cpu-0"
    assert node.allocatable["ephemeral-storage"] == "100Gi"


def test_nodes_for_every_user_read_only(sim_backend, client_for, cast) -> None:
    api = client_for(cast.victor, "token")  # a viewer
    table = api.get("/api/v1/nodes", HTTP_ACCEPT=TABLE).json()
    assert [c["name"] for c in table["columnDefinitions"]][:5] == ["Name", "Status", "Roles", "Age", "Version"]
    row = table["rows"][0]["cells"]
    assert row[0] == "cpu-0"
    assert row[1:3] == ["Ready", "<none>"]
    node = api.get("/api/v1/nodes/cpu-0").json()
    assert node["kind"] == "Node"
    assert node["metadata"]["labels"]["kubernetes.io/os"] == "linux"
    assert node["status"]["capacity"]["ephemeral-storage"] == "100Gi"
    assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.32")
    assert {c["type"] for c in node["status"]["conditions"]} == {"Ready"}
    patched = api.patch("/api/v1/nodes/cpu-0", data="{}", content_type="application/merge-patch+json")
    # the viewer's token is read-only: 403 before the handler, as kube-apiserver authorizes first
    assert patched.status_code == 403
    # nodes are read-only for everyone: a platform admin's patch reaches the handler and is 405
    admin = client_for(cast.root, "session")
    assert admin.patch("/api/v1/nodes/cpu-0", data="{}", content_type="application/merge-patch+json").status_code == 405
    labelled = api.get("/api/v1/nodes?labelSelector=kubernetes.io%2Fhostname%3Dcpu-1", HTTP_ACCEPT=TABLE).json()
    assert [r["cells"][0] for r in labelled["rows"]] == ["cpu-1"]


@pytest.mark.django_db(transaction=True)
def test_the_official_clients_list_node(official, cast) -> None:
    nodes = client.CoreV1Api(official(cast.bob)).list_node().items
    assert [n.metadata.name for n in nodes][:1] == ["cpu-0"]
    assert nodes[0].status.node_info.operating_system == "linux"
    assert nodes[0].status.allocatable["ephemeral-storage"] == "100Gi"


def test_auth_can_i_answers_from_the_roles(client_for, cast) -> None:
    alice, victor, charlie = (client_for(u, "token") for u in (cast.alice, cast.victor, cast.charlie))
    job = {"group": "batch.volcano.sh", "resource": "jobs", "namespace": "team-a"}
    assert _can(alice, verb="create", **job)["allowed"] is True
    assert _can(victor, verb="list", **job)["allowed"] is True
    refused = _can(victor, verb="create", **job)
    assert refused["allowed"] is False
    assert "may only read" in refused["reason"]
    assert _can(charlie, verb="get", **job)["allowed"] is False
    assert _can(alice, verb="delete", resource="nodes")["allowed"] is False
    assert _can(alice, verb="list", resource="nodes")["allowed"] is True
    assert _can(alice, verb="get", resource="pods", subresource="log", namespace="team-a")["allowed"] is True
    assert _can(alice, verb="create", group="apps", resource="deployments", namespace="team-a")["allowed"] is False
    assert _can(client_for(cast.root, "token"), verb="delete", group="batch.volcano.sh", resource="jobs")["allowed"]


def test_auth_can_i_reads_kubectls_protobuf_body(client_for, cast) -> None:
    def field(number: int, data: bytes) -> bytes:
        return bytes([number << 3 | 2, len(data)]) + data

    attributes = field(1, b"team-a") + field(2, b"create") + field(3, b"batch.volcano.sh") + field(5, b"jobs")
    raw = field(2, field(1, attributes))
    type_meta = field(1, b"authorization.k8s.io/v1") + field(2, b"SelfSubjectAccessReview")
    body = b"k8s\x00" + field(1, type_meta) + field(2, raw)
    for user, allowed in ((cast.alice, True), (cast.charlie, False)):
        answer = client_for(user, "token").post(SSAR, data=body, content_type="application/vnd.kubernetes.protobuf")
        assert answer.status_code == 201, answer.content
        assert answer.json()["status"]["allowed"] is allowed
        assert answer.json()["spec"]["resourceAttributes"]["resource"] == "jobs"


def test_whoami(client_for, cast) -> None:
    answer = client_for(cast.alice, "token").post(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        content_type="application/json",
    )
    assert answer.status_code == 201
    user = answer.json()["status"]["userInfo"]
    assert user["username"] == "alice"
    assert "system:authenticated" in user["groups"]
    assert any(g.startswith("volcanoweb:tenant:team-a:") for g in user["groups"])


def test_cluster_info_health_and_version(client_for, cast) -> None:
    services = client_for(cast.victor, "token").get("/api/v1/namespaces/kube-system/services")
    assert services.json() == {
        "kind": "ServiceList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "1"},
        "items": [],
    }
    anonymous = Client()
    assert anonymous.get("/livez").content == b"ok"
    verbose = anonymous.get("/livez?verbose").content.decode()
    assert verbose.endswith("livez check passed\n")
    assert "[+]ping ok" in verbose
    ready = anonymous.get("/readyz?verbose").content.decode()
    assert "[+]database ok" in ready
    assert ready.endswith("readyz check passed\n")
    assert anonymous.get("/readyz?exclude=redis").content == b"ok"
    assert anonymous.get("/readyz").json()["status"] == "ready"  # the product's JSON stays the default
    assert anonymous.get("/version").json()["gitVersion"].startswith("v1.32")


def test_strategic_merge_patch_is_refused_on_custom_kinds(client_for, cast) -> None:
    from tests.volcanoweb import builders

    builders.make_job("team-a", "train")
    api = client_for(cast.alice, "token")
    refused = api.patch(
        "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs/train",
        data=json.dumps({"metadata": {"labels": {"a": "b"}}}),
        content_type="application/strategic-merge-patch+json",
    )
    assert refused.status_code == 415
    assert refused.json()["reason"] == "UnsupportedMediaType"
    assert "application/merge-patch+json" in refused.json()["message"]
    assert "strategic" not in refused.json()["message"]


def test_auth_can_i_list(client_for, cast) -> None:
    def rules(user, namespace: str) -> dict[str, list[str]]:
        body = {"kind": "SelfSubjectRulesReview", "spec": {"namespace": namespace}}
        answer = client_for(user, "token").post(
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            data=json.dumps(body),
            content_type="application/json",
        )
        assert answer.status_code == 201
        return {r["resources"][0]: r["verbs"] for r in answer.json()["status"]["resourceRules"]}

    mine = rules(cast.alice, "team-a")
    assert "create" in mine["jobs"]
    assert mine["events"] == ["get", "list", "watch"]
    viewer = rules(cast.victor, "team-a")
    assert viewer["jobs"] == ["get", "list", "watch"]
    other = rules(cast.charlie, "team-a")
    assert "jobs" not in other
    assert other["nodes"] == ["get", "list", "watch"]
