"""Escalation through one's own objects: a tenant admin cannot raise its top-level queue's share of the cluster
(weight, capability, deserved, guarantee, reclaimable, priority, hdrf annotations) on any write path, and keeps
the queues below it within that queue's bounds. Nothing is written by a refused request."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from django.test import Client
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.builders import queue_manifest, to_yaml
from tests.volcanoweb.conftest import Cast, post_yaml, put_yaml
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.errors import Forbidden
from volcanoweb.queues import services as queue_services
from volcanoweb.queues.models import Queue
from volcanoweb.tenancy.access import access_for

pytestmark = pytest.mark.both_databases

KUBE = "/apis/scheduling.volcano.sh/v1beta1/queues"
GREEDY = {
    "weight": 1000,
    "capability": {"cpu": "100000"},
    "guarantee": {"resource": {"cpu": "250", "memory": "1000Gi", "nvidia.com/gpu": "16"}},
    "deserved": {"cpu": "250", "memory": "1000Gi", "nvidia.com/gpu": "16"},
}


@pytest.fixture
def top(cast: Cast) -> Queue:
    """team-a's top-level queue (a child of root), as a platform admin set it."""
    return builders.make_queue(
        "team-a-q", tenant="team-a", weight=4, capability={"cpu": "10"}, guarantee={"cpu": "4"}, deserved={"cpu": "4"}
    )


def state(name: str = "team-a-q") -> tuple[Any, ...]:
    queue = Queue.objects.get(name=name)
    return (queue.weight, queue.capability, queue.guarantee, queue.deserved, queue.spec, queue.resource_version)


def greedy_manifest() -> dict[str, Any]:
    doc = queue_manifest("team-a-q", tenant="team-a")
    doc["spec"].update(GREEDY)
    return doc


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def send_rest_apply(client: APIClient) -> Any:
    return post_yaml(client, "/api/v1/apply", to_yaml(greedy_manifest()))


def send_rest_put(client: APIClient) -> Any:
    return put_yaml(client, "/api/v1/queues/team-a-q", to_yaml(greedy_manifest()))


def send_kube_put(client: APIClient) -> Any:
    current = client.get(f"{KUBE}/team-a-q").json()
    current["spec"].update(GREEDY)
    return client.put(f"{KUBE}/team-a-q", data=json.dumps(current), content_type="application/json")


def send_kube_merge(client: APIClient) -> Any:
    body = json.dumps({"spec": GREEDY})
    return client.patch(f"{KUBE}/team-a-q", data=body, content_type="application/merge-patch+json")


def send_kube_json_patch(client: APIClient) -> Any:
    body = json.dumps([{"op": "replace", "path": "/spec/weight", "value": 1000}])
    return client.patch(f"{KUBE}/team-a-q", data=body, content_type="application/json-patch+json")


def send_kube_apply(client: APIClient) -> Any:
    body = yaml.safe_dump(greedy_manifest())
    return client.patch(
        f"{KUBE}/team-a-q?fieldManager=kubectl&force=true", data=body, content_type="application/apply-patch+yaml"
    )


@pytest.mark.parametrize(
    "send",
    [send_rest_apply, send_rest_put, send_kube_put, send_kube_merge, send_kube_json_patch, send_kube_apply],
)
def test_a_tenant_admin_cannot_raise_its_top_level_queue(cast: Cast, top: Queue, send: Any) -> None:
    before, audits = state(), AuditEntry.objects.count()
    response = send(api(cast.alice))
    assert response.status_code == 403, response.content
    assert "set by a platform admin" in response.json()["message"]
    assert state() == before
    assert AuditEntry.objects.count() == audits


def test_the_dashboard_editor_cannot_raise_it_either(cast: Cast, top: Queue) -> None:
    """(vcctl's ``apply`` and ``queue update`` are the REST apply and PUT above.)"""
    before = state()
    browser = Client()
    browser.force_login(cast.alice)
    saved = browser.post("/queues/team-a-q/edit/", {"weight": "1000", "capability_cpu": "100000"})
    assert saved.status_code == 422
    assert "set by a platform admin" in saved.content.decode()
    assert state() == before


def test_the_admin_form_path_is_refused(cast: Cast, top: Queue) -> None:
    before = state()
    with pytest.raises(Forbidden, match="set by a platform admin"):
        queue_services.update_queue_spec(access_for(cast.alice), "team-a-q", {"weight": 1000})
    assert state() == before


def test_what_is_not_a_share_stays_the_tenant_admins(cast: Cast, top: Queue) -> None:
    doc = queue_manifest(
        "team-a-q",
        tenant="team-a",
        weight=4,
        capability={"cpu": "10"},
        guarantee={"cpu": "4"},
        deserved={"cpu": "4"},
        allowed=("team-b",),
    )
    doc["metadata"]["labels"] = {"team": "a"}
    response = post_yaml(api(cast.alice), "/api/v1/apply", to_yaml(doc))
    assert response.status_code == 200, response.json()
    assert Queue.objects.get(name="team-a-q").labels == {"team": "a"}


def test_a_platform_admin_still_sets_the_share(cast: Cast, top: Queue) -> None:
    response = send_kube_merge(api(cast.root))
    assert response.status_code == 200, response.content
    assert Queue.objects.get(name="team-a-q").weight == 1000


def child(name: str, **kwargs: Any) -> dict[str, Any]:
    return queue_manifest(name, parent="team-a-q", tenant="team-a", **kwargs)


def test_children_split_the_top_level_weight(cast: Cast, top: Queue) -> None:
    alice = api(cast.alice)
    assert post_yaml(alice, "/api/v1/apply", to_yaml(child("team-a-x", weight=3))).status_code == 200
    too_heavy = post_yaml(alice, "/api/v1/apply", to_yaml(child("team-a-y", weight=2)))
    assert too_heavy.status_code == 403
    assert "would add up to 5, more than the weight of team-a-q (4)" in too_heavy.json()["message"]
    assert not Queue.objects.filter(name="team-a-y").exists()
    assert post_yaml(alice, "/api/v1/apply", to_yaml(child("team-a-y", weight=1))).status_code == 200
    raised = post_yaml(alice, "/api/v1/apply", to_yaml(child("team-a-x", weight=1000)))
    assert raised.status_code == 403
    assert Queue.objects.get(name="team-a-x").weight == 3


def test_children_stay_within_the_top_level_bounds(cast: Cast, top: Queue) -> None:
    alice = api(cast.alice)
    greedy = post_yaml(alice, "/api/v1/apply", to_yaml(child("team-a-x", guarantee={"cpu": "250"})))
    assert greedy.status_code == 400
    assert post_yaml(alice, "/api/v1/apply", to_yaml(child("team-a-x", capability={"cpu": "100"}))).status_code == 400
    stubborn = child("team-a-x")
    stubborn["spec"]["reclaimable"] = False
    assert post_yaml(alice, "/api/v1/apply", to_yaml(stubborn)).status_code == 403
    urgent = child("team-a-x")
    urgent["spec"]["priority"] = 100
    assert post_yaml(alice, "/api/v1/apply", to_yaml(urgent)).status_code == 403
    hdrf = child("team-a-x")
    hdrf["metadata"]["annotations"].update(
        {"volcano.sh/hierarchy": "root/big", "volcano.sh/hierarchy-weights": "1/1000"}
    )
    assert post_yaml(alice, "/api/v1/apply", to_yaml(hdrf)).status_code == 403
    assert not Queue.objects.filter(name="team-a-x").exists()
