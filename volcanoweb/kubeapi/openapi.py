"""OpenAPI documents of the Kubernetes-shaped API: an operation per verb and each kind's schema.

kubectl reads ``/openapi/v3`` to learn that PATCH accepts ``fieldValidation`` for a kind (then it leaves
validation to the server instead of downloading ``/openapi/v2``), and ``kubectl explain`` reads the schemas
(:mod:`volcanoweb.kubeapi.schemas`) down to the leaves. ``/openapi/v2`` is also served as protobuf
(:mod:`volcanoweb.kubeapi.openapi_v2`), which kubectl downloads for the kinds without that PATCH operation.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from volcanoweb.kubeapi import schemas
from volcanoweb.kubeapi.registry import BY_GROUP_VERSION, KubeResource

_WRITE_PARAMS = [
    {"name": "dryRun", "in": "query", "schema": {"type": "string"}, "description": "All: validate only"},
    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
    {
        "name": "fieldValidation",
        "in": "query",
        "schema": {"type": "string"},
        "description": "Strict (the default), Warn or Ignore",
    },
]
_LIST_PARAMS = [
    {"name": name, "in": "query", "schema": {"type": kind}}
    for name, kind in (
        ("labelSelector", "string"),
        ("fieldSelector", "string"),
        ("limit", "integer"),
        ("continue", "string"),
        ("resourceVersion", "string"),
        ("timeoutSeconds", "integer"),
        ("watch", "boolean"),
        ("allowWatchBookmarks", "boolean"),
    )
]


def _schema_name(resource: KubeResource) -> str:
    group = ".".join(reversed(resource.group.split("."))) if resource.group else "io.k8s.api.core"
    return f"{group}.{resource.version}.{resource.info.kind}"


def _gvk(resource: KubeResource) -> dict[str, str]:
    return {"group": resource.group, "version": resource.version, "kind": resource.info.kind}


def _object_schema(resource: KubeResource) -> dict[str, Any]:
    schema = schemas.schema_of(resource.info.kind)
    return {
        **schema,
        "description": f"{resource.info.kind} ({resource.info.api_version}), as in Volcano's CRD",
        "x-kubernetes-group-version-kind": [_gvk(resource)],
    }


def _base_path(resource: KubeResource, namespaced: bool) -> str:
    prefix = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
    return f"{prefix}/namespaces/{{namespace}}/{resource.plural}" if namespaced else f"{prefix}/{resource.plural}"


def _operation(resource: KubeResource, action: str, params: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    return {
        "operationId": f"{action}{resource.info.kind}",
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(resource),
    }


def _paths(resource: KubeResource) -> dict[str, Any]:
    ref = f"#/components/schemas/{_schema_name(resource)}"
    namespaced = resource.info.namespaced
    path_params = (
        [{"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}] if namespaced else []
    )
    name_param = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
    collection: dict[str, Any] = {"parameters": path_params, "get": _operation(resource, "list", _LIST_PARAMS, ref)}
    item: dict[str, Any] = {"parameters": [*path_params, *name_param], "get": _operation(resource, "get", [], ref)}
    if resource.writable or resource.plural == "commands":
        collection["post"] = _operation(resource, "post", _WRITE_PARAMS, ref)
    if resource.writable:
        item["put"] = _operation(resource, "put", _WRITE_PARAMS, ref)
        item["patch"] = _operation(resource, "patch", _WRITE_PARAMS, ref)
    if resource.delete is not None:
        item["delete"] = _operation(resource, "delete", _WRITE_PARAMS[:1], ref)
        collection["delete"] = _operation(resource, "deletecollection", _LIST_PARAMS[:2], ref)
    base = _base_path(resource, namespaced)
    paths = {base: collection, f"{base}/{{name}}": item}
    if resource.model is not None and resource.plural not in ("events", "namespaces", "commands", "services"):
        status = _operation(resource, "get", [], ref)
        paths[f"{base}/{{name}}/status"] = {
            "parameters": item["parameters"],
            "get": {**status, "operationId": f"read{resource.info.kind}Status"},
        }
    if resource.plural == "pods":
        log = {
            "operationId": "readPodLog",
            "parameters": [
                {"name": name, "in": "query", "schema": {"type": kind}}
                for name, kind in (
                    ("container", "string"),
                    ("follow", "boolean"),
                    ("previous", "boolean"),
                    ("tailLines", "integer"),
                    ("sinceSeconds", "integer"),
                    ("sinceTime", "string"),
                    ("timestamps", "boolean"),
                    ("limitBytes", "integer"),
                )
            ],
            "responses": {"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}},
            "x-kubernetes-action": "connect",
            "x-kubernetes-group-version-kind": _gvk(resource),
        }
        paths[f"{base}/{{name}}/log"] = {"parameters": item["parameters"], "get": log}
    return paths


def v3_document(group: str, version: str) -> dict[str, Any]:
    """Return the OpenAPI 3.0 document of one group-version."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for resource in BY_GROUP_VERSION[(group, version)].values():
        paths.update(_paths(resource))
        schemas[_schema_name(resource)] = _object_schema(resource)
    title = f"{group}/{version}" if group else version
    return {
        "openapi": "3.0.0",
        "info": {"title": f"volcanoweb {title}", "version": version},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _hash(group: str, version: str) -> str:
    text = json.dumps(v3_document(group, version), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32].upper()


def v3_root() -> dict[str, Any]:
    """Return the ``/openapi/v3`` discovery document (one URL per group-version)."""
    paths = {}
    for group, version in sorted(BY_GROUP_VERSION):
        key = f"apis/{group}/{version}" if group else f"api/{version}"
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={_hash(group, version)}"}
    return {"paths": paths}


def v2_document() -> dict[str, Any]:
    """Return a Swagger 2.0 document of every kind (for clients that still read v2)."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for (_group, _version), resources in sorted(BY_GROUP_VERSION.items()):
        for resource in resources.values():
            for path, item in _paths(resource).items():
                converted: dict[str, Any] = {}
                for verb, op in item.items():
                    if verb == "parameters":
                        converted[verb] = [_v2_param(p) for p in op]
                        continue
                    ref = f"#/definitions/{_schema_name(resource)}"
                    converted[verb] = {
                        **{k: v for k, v in op.items() if k not in ("responses", "parameters")},
                        "parameters": [_v2_param(p) for p in op["parameters"]],
                        "responses": {"200": {"description": "OK", "schema": _v2_response(op, ref)}},
                    }
                paths[path] = converted
            definitions[_schema_name(resource)] = _object_schema(resource)
    return {
        "swagger": "2.0",
        "info": {"title": "volcanoweb", "version": "v1.32.0"},
        "paths": paths,
        "definitions": definitions,
    }


def _v2_response(op: dict[str, Any], ref: str) -> dict[str, Any]:
    content = op["responses"]["200"]["content"]
    if "text/plain" in content:
        return {"type": "string"}
    return {"$ref": ref}


def _v2_param(param: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in param.items() if k != "schema"}
    out["type"] = param.get("schema", {}).get("type", "string")
    return out
