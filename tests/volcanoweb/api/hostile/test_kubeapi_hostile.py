"""The hostile-input corpus against the Kubernetes API's writes (create, update, every patch type, dry runs):
the same bodies as the REST API (imported from :mod:`corpus`, not copied) get a 400 ``Status`` naming the field
and the reason, and nothing is written."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from tests.volcanoweb.api.hostile.corpus import GENERIC, MANIFESTS, Hostile, raw
from tests.volcanoweb.api.hostile.test_hostile_input import assert_refused, snapshot
from tests.volcanoweb.conftest import Cast
from volcanoweb.kubeapi.registry import RESOURCES, KubeResource
from volcanoweb.kubeapi.verbs.patch import MAX_JSON_PATCH_OPERATIONS

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"
MERGE, JSON_PATCH, APPLY = "application/merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml"

#: (method, url, content type or None for the case's own, query) of every Kubernetes API write with a body.
KUBE_WRITES = [
    ("post", JOBS, None, ""),
    ("post", JOBS, None, "?dryRun=All"),
    ("put", f"{JOBS}/train", None, ""),
    ("patch", f"{JOBS}/train", MERGE, ""),
    ("patch", f"{JOBS}/train", JSON_PATCH, ""),
    ("patch", f"{JOBS}/train", APPLY, "?fieldManager=kubectl"),
    ("patch", f"{JOBS}/fresh", APPLY, "?fieldManager=kubectl&dryRun=All"),
]


def send(world: Cast, user: str, method: str, url: str, case: Hostile, content_type: str | None, query: str) -> Any:
    client = APIClient()
    client.force_authenticate(getattr(world, user))
    return getattr(client, method)(url + query, data=case.body(), content_type=content_type or case.content_type)


@pytest.mark.parametrize(
    ("method", "url", "content_type", "query"), KUBE_WRITES, ids=[f"{m}:{u}:{c}{q}" for m, u, c, q in KUBE_WRITES]
)
@pytest.mark.parametrize("case", GENERIC, ids=[case.id for case in GENERIC])
def test_every_kubeapi_write_refuses_hostile_bodies(
    case: Hostile, method: str, url: str, content_type: str | None, query: str, world: Cast, db: Any
) -> None:
    before = snapshot()
    assert_refused(send(world, "alice", method, url, case, content_type, query), case)
    assert snapshot() == before


def _resource_of(kind: str) -> KubeResource | None:
    return next((r for r in RESOURCES if r.info.kind == kind and r.writable and r.apply is not None), None)


def _manifest_writes() -> list[Any]:
    """Every manifest case of a kind the Kubernetes API writes, on its collection (create) and its object (server-side
    apply); pods are read-only there."""
    params = []
    for case in MANIFESTS:
        doc = yaml.safe_load(case.body())
        resource = _resource_of(str(doc.get("kind")))
        if resource is None:
            continue
        prefix = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
        collection = (
            f"{prefix}/namespaces/team-a/{resource.plural}"
            if resource.info.namespaced
            else (f"{prefix}/{resource.plural}")
        )
        user = "alice" if resource.info.namespaced else "root"
        name = doc["metadata"]["name"]
        params.append(pytest.param(case, user, "post", collection, None, "", id=f"{case.id}-create"))
        params.append(
            pytest.param(case, user, "patch", f"{collection}/{name}", APPLY, "?fieldManager=k", id=f"{case.id}-apply")
        )
    return params


@pytest.mark.parametrize(("case", "user", "method", "url", "content_type", "query"), _manifest_writes())
def test_kubeapi_refuses_unknown_duplicate_fields_and_bad_quantities(
    case: Hostile, user: str, method: str, url: str, content_type: str | None, query: str, world: Cast, db: Any
) -> None:
    before = snapshot()
    assert_refused(send(world, user, method, url, case, content_type, query), case)
    assert snapshot() == before


def test_every_kind_of_the_manifest_corpus_reaches_the_kubeapi() -> None:
    kinds = {yaml.safe_load(case.body()).get("kind") for case in MANIFESTS}
    reached = {kind for kind in kinds if _resource_of(str(kind)) is not None}
    assert {"Job", "Queue", "PodGroup", "CronJob", "JobFlow", "JobTemplate", "PriorityClass"} <= reached


def _operations(count: int) -> bytes:
    return json.dumps([{"op": "test", "path": "/kind", "value": "Job"}] * count).encode()


@pytest.mark.parametrize(
    "case",
    [
        Hostile("json-patch-100k-ops", lambda: _operations(100_000), None, "the patch is too large", JSON_PATCH),
        Hostile(
            "json-patch-too-many-ops",
            lambda: _operations(MAX_JSON_PATCH_OPERATIONS + 1),
            "",
            f"the limit is {MAX_JSON_PATCH_OPERATIONS}",
            JSON_PATCH,
        ),
        Hostile("json-patch-not-a-list", raw('{"op": "add"}'), "", "a JSON patch must be a list", JSON_PATCH),
        Hostile(
            "json-patch-adds-a-deep-value",
            raw(json.dumps([{"op": "add", "path": "/spec/x", "value": json.loads('{"a":' * 45 + "1" + "}" * 45)}])),
            "",
            "nested deeper than 40 levels",
            JSON_PATCH,
        ),
    ],
    ids=lambda case: case.id,
)
def test_json_patches_with_too_many_operations_are_refused(case: Hostile, world: Cast, db: Any) -> None:
    before = snapshot()
    assert_refused(send(world, "alice", "patch", f"{JOBS}/train", case, None, ""), case)
    assert snapshot() == before
