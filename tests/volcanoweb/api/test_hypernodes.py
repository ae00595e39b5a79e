"""HyperNodes (``topology.volcano.sh/v1alpha1``) on the REST path, the Kubernetes-shaped API and into the
scheduler's snapshot: platform admins write them, everyone reads them, a bad member is a 400 naming the field,
and they reach the scheduler (``tests/volcanoweb/scheduling/test_snapshots.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.volcanoweb.builders import to_yaml
from tests.volcanoweb.conftest import Cast
from volcanoweb.jobs.models import HyperNode

pytestmark = pytest.mark.django_db


def _rack(name: str, tier: int = 1, **spec: Any) -> dict[str, Any]:
    members = spec.pop("members", [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^{name}-"}}}])
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members, **spec},
    }


def _post(client: APIClient, url: str, doc: dict[str, Any]) -> Any:
    return client.post(url, data=to_yaml(doc).encode(), content_type="application/yaml")


@pytest.fixture
def admin_client(root_api: APIClient) -> APIClient:
    return root_api


@pytest.fixture
def member_client(client_for: Any, cast: Cast) -> APIClient:
    return client_for(cast.bob)


def test_a_platform_admin_creates_and_everyone_lists_hypernodes(
    admin_client: APIClient, member_client: APIClient
) -> None:
    created = _post(admin_client, "/api/v1/hypernodes", _rack("rack1", tierName="rack"))
    assert created.status_code == 201, created.json()
    assert created.json()["spec"]["tierName"] == "rack"
    spine = _rack("spine", 2, members=[{"type": "HyperNode", "selector": {"exactMatch": {"name": "rack1"}}}])
    assert _post(admin_client, "/api/v1/hypernodes", spine).status_code == 201
    listed = member_client.get("/api/v1/hypernodes").json()
    assert [i["metadata"]["name"] for i in listed["items"]] == ["rack1", "spine"]  # lowest tier first
    assert listed["apiVersion"] == "topology.volcano.sh/v1alpha1"
    assert member_client.get("/api/v1/hypernodes/spine").json()["spec"]["tier"] == 2


def test_a_member_may_not_write_hypernodes(member_client: APIClient) -> None:
    response = _post(member_client, "/api/v1/hypernodes", _rack("rack1"))
    assert response.status_code == 403, response.json()
    assert not HyperNode.objects.exists()


@pytest.mark.parametrize(
    ("members", "field"),
    [
        ([{"type": "Switch", "selector": {"exactMatch": {"name": "x"}}}], "spec.members[0].type"),
        ([{"type": "Node", "selector": {}}], "spec.members[0].selector"),
        ([{"type": "HyperNode", "selector": {"regexMatch": {"pattern": "x"}}}], "spec.members[0].selector"),
        (
            [{"type": "Node", "selector": {"regexMatch": {"pattern": "("}}}],
            "spec.members[0].selector.regexMatch.pattern",
        ),
    ],
)
def test_a_bad_member_is_a_400_naming_the_field(admin_client: APIClient, members: list[Any], field: str) -> None:
    response = _post(admin_client, "/api/v1/hypernodes", _rack("rack1", members=members))
    assert response.status_code == 400, response.json()
    body = response.json()
    assert field in [c["field"] for c in body["details"]["causes"]], body


def test_the_kubernetes_api_serves_hypernodes(admin_client: APIClient) -> None:
    url = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
    created = _post(admin_client, url, _rack("rack1"))
    assert created.status_code == 201, created.json()
    got = admin_client.get(f"{url}/rack1").json()
    assert got["kind"] == "HyperNode"
    assert got["spec"]["tier"] == 1
    assert admin_client.delete(f"{url}/rack1").status_code == 200
    assert not HyperNode.objects.exists()


def test_anonymous_callers_get_401(db: Any) -> None:
    assert APIClient().get("/api/v1/hypernodes").status_code == 401
