"""OpenAPI: v3 schemas of every served kind down to the leaves (what ``kubectl explain`` reads), a PATCH with
``fieldValidation`` per writable kind, and ``/openapi/v2`` as the protobuf kubectl downloads."""

from __future__ import annotations

from typing import Any

import pytest

from volcanoweb.kubeapi import openapi_v2, schemas, wire
from volcanoweb.kubeapi.registry import RESOURCES
from volcanoweb.manifests import strict

PROTOBUF_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _fields(data: bytes, number: int) -> list[Any]:
    # the server's own schema-free decoder (what reads kubectl's protobuf request bodies), not the encoder under test
    return [value for n, value in wire.fields(data) if n == number]


def _named(data: bytes, container: int = 1) -> dict[str, bytes]:
    """A gnostic ``Named*`` list: {name: value bytes}."""
    return {_fields(item, 1)[0].decode(): _fields(item, 2)[0] for item in _fields(data, container)}


def _v3(client, group_version: str) -> dict[str, Any]:
    root = client.get("/openapi/v3").json()["paths"]
    return client.get(root[group_version]["serverRelativeURL"]).json()


@pytest.mark.django_db
def test_every_kind_has_a_schema_to_the_leaves_and_its_verbs(alice_api) -> None:
    for resource in RESOURCES:
        key = f"apis/{resource.group}/{resource.version}" if resource.group else "api/v1"
        doc = _v3(alice_api, key)
        found = [
            s
            for s in doc["components"]["schemas"].values()
            if {"group": resource.group, "version": resource.version, "kind": resource.info.kind}
            in s.get("x-kubernetes-group-version-kind", [])
        ]
        assert len(found) == 1, resource.info.kind
        assert found[0]["properties"]["metadata"]["properties"]["name"]["type"] == "string"
        item = [p for p in doc["paths"] if p.endswith(f"/{resource.plural}/{{name}}")]
        assert item, resource.plural
        operations = doc["paths"][item[0]]
        assert "get" in operations
        if resource.writable:
            assert "fieldValidation" in {p["name"] for p in operations["patch"]["parameters"]}
            assert "delete" in operations

    core = _v3(alice_api, "api/v1")["paths"]
    log = core["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"]
    assert {"container", "follow", "previous", "tailLines", "sinceSeconds", "timestamps"} <= {
        p["name"] for p in log["parameters"]
    }
    assert "/api/v1/namespaces/{namespace}/pods/{name}/status" in core
    batch = _v3(alice_api, "apis/batch.volcano.sh/v1alpha1")["paths"]
    assert batch["/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/{name}/status"]["get"]["operationId"] == (
        "readJobStatus"
    )
    job = _v3(alice_api, "apis/batch.volcano.sh/v1alpha1")["components"]["schemas"]["sh.volcano.batch.v1alpha1.Job"]
    tasks = job["properties"]["spec"]["properties"]["tasks"]
    assert tasks["type"] == "array"
    assert tasks["description"] == "Tasks specifies the task specification of Job."
    task = tasks["items"]["properties"]
    assert task["replicas"]["type"] == "integer"
    assert task["name"]["type"] == "string"
    container = task["template"]["properties"]["spec"]["properties"]["containers"]["items"]["properties"]
    assert container["image"]["type"] == "string"
    assert container["resources"]["properties"]["limits"]["additionalProperties"]["x-kubernetes-int-or-string"]
    assert job["properties"]["status"]["properties"]["state"]["properties"]["phase"]["type"] == "string"
    assert job["properties"]["status"]["properties"]["running"]["type"] == "integer"


def _paths(node: Any, tree: Any, path: str = "") -> list[str]:
    """The dotted paths of the field tree's leaves."""
    if isinstance(tree, dict):
        return [p for key, child in tree.items() for p in _paths(node, child, f"{path}.{key}" if path else key)]
    if isinstance(tree, list):
        return _paths(node, tree[0], path)
    return [path]


def test_the_schema_follows_the_servers_field_trees() -> None:
    """Every field the server accepts (strict.SCHEMAS) is in the published schema, and nothing else."""
    for kind, tree in strict.SCHEMAS.items():
        if kind == "ResourceQuota":
            continue  # not served by the Kubernetes-shaped API
        schema = schemas.schema_of(kind)
        for path in _paths(None, {k: v for k, v in tree.items() if k != "status"}):
            node = schema
            for part in path.split("."):
                node = node.get("items", node)
                assert part in node.get("properties", {}), (kind, path)
                node = node["properties"][part]


@pytest.mark.django_db
def test_openapi_v2_as_protobuf(alice_api) -> None:
    response = alice_api.get("/openapi/v2", HTTP_ACCEPT=PROTOBUF_ACCEPT)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    data = response.content
    assert _fields(data, 1) == [b"2.0"]  # Document.swagger
    paths = _named(_fields(data, 8)[0], 2)  # Document.paths -> Paths.path (NamedPathItem)
    item = paths["/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/{name}"]
    patch = _fields(item, 8)[0]  # PathItem.patch
    assert _fields(patch, 5) == [b"patchJob"]  # Operation.operation_id
    parameters = [_fields(_fields(p, 1)[0], 2)[0] for p in _fields(patch, 8)]  # ParametersItem.parameter.non_body
    names = {_fields(_fields(p, 3)[0], 4)[0] for p in parameters if _fields(p, 3)}  # query parameter name
    assert b"fieldValidation" in names
    definitions = _named(_fields(data, 9)[0])  # Document.definitions
    job = definitions["sh.volcano.batch.v1alpha1.Job"]
    extensions = _named(job, 31)  # Schema.vendor_extension
    gvk = _fields(extensions["x-kubernetes-group-version-kind"], 2)[0].decode()  # Any.yaml
    assert "kind: Job" in gvk
    assert "group: batch.volcano.sh" in gvk
    properties = _named(_fields(job, 25)[0])  # Schema.properties
    spec = _named(_fields(properties["spec"], 25)[0])
    assert _fields(_fields(spec["minAvailable"], 22)[0], 1) == [b"integer"]  # Schema.type -> TypeItem.value
    # JSON stays the default.
    assert alice_api.get("/openapi/v2").json()["swagger"] == "2.0"
    assert alice_api.get("/openapi/v2", HTTP_ACCEPT="application/json").json()["swagger"] == "2.0"


def test_the_encoder_writes_negative_numbers_and_false_as_protobuf_does() -> None:
    assert openapi_v2._varint(1) == b"\x01"
    assert openapi_v2._varint(300) == b"\xac\x02"
    assert openapi_v2._varint(-1) == b"\xff" * 9 + b"\x01"
    assert wire.fields(openapi_v2.schema({"additionalProperties": False})) == [(21, b"\x10\x00")]
    assert openapi_v2.wants_protobuf(PROTOBUF_ACCEPT)
    assert not openapi_v2.wants_protobuf("application/json, " + PROTOBUF_ACCEPT)
