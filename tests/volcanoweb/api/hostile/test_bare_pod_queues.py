"""A bare Pod cannot use another tenant's private queue: its ``scheduling.volcano.sh/queue-name`` is admitted as
a Job's queue is (REST apply, the Kubernetes API's create and patch), and the PodGroup controllers never group
a pod into a queue its tenant may not use (a pod that reached the rows some other way)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.builders import to_yaml
from tests.volcanoweb.conftest import Cast, post_yaml
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.runtime import services as runtime_services
from volcanoweb.tenancy.access import SYSTEM

pytestmark = pytest.mark.both_databases

PODS = "/api/v1/namespaces/team-a/pods"
QUEUE = "scheduling.volcano.sh/queue-name"
MERGE = "application/merge-patch+json"


@pytest.fixture
def private(cast: Cast) -> None:
    """team-b's private queue, and one open to team-a."""
    builders.make_queue("team-b-private", tenant="team-b")
    builders.make_queue("shared", tenant="team-b", allowed=("team-a",))


def pod(name: str = "solo", namespace: str = "team-a", queue: str | None = "team-b-private") -> dict[str, Any]:
    annotations = {QUEUE: queue} if queue else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def nothing_in_private() -> None:
    assert not PodGroup.objects.filter(queue_name="team-b-private").exists()


def test_the_kubernetes_create_refuses_a_foreign_private_queue(cast: Cast, private: None) -> None:
    response = api(cast.alice).post(PODS, data=json.dumps(pod()), content_type="application/json")
    assert response.status_code == 400, response.content
    cause = response.json()["details"]["causes"][0]
    assert cause["field"] == f"metadata.annotations[{QUEUE}]"
    assert 'queues.scheduling.volcano.sh "team-b-private" not found' in cause["message"]
    assert not Pod.objects.filter(name="solo").exists()
    nothing_in_private()


def test_the_rest_apply_refuses_it_too(cast: Cast, private: None) -> None:
    response = post_yaml(api(cast.alice), "/api/v1/apply", to_yaml(pod()))
    assert response.status_code == 400, response.content
    assert not Pod.objects.filter(name="solo").exists()


def test_a_patch_cannot_add_it_later(cast: Cast, private: None) -> None:
    alice = api(cast.alice)
    created = alice.post(PODS, data=json.dumps(pod(queue=None)), content_type="application/json")
    assert created.status_code == 201, created.content
    body = json.dumps({"metadata": {"annotations": {QUEUE: "team-b-private"}}})
    patched = alice.patch(f"{PODS}/solo", data=body, content_type=MERGE)
    assert patched.status_code == 400, patched.content
    assert QUEUE not in Pod.objects.get(name="solo").annotations
    runtime_services.group_bare_pods()
    nothing_in_private()


def test_a_namespace_default_queue_is_checked_as_well(cast: Cast, private: None) -> None:
    from volcanoweb.tenancy.models import Namespace

    Namespace.objects.filter(name="team-a").update(annotations={QUEUE: "team-b-private"})
    response = api(cast.alice).post(PODS, data=json.dumps(pod(queue=None)), content_type="application/json")
    assert response.status_code == 400, response.content


def test_queues_the_tenant_may_use_still_work(cast: Cast, private: None) -> None:
    alice = api(cast.alice)
    shared = alice.post(PODS, data=json.dumps(pod(queue="shared")), content_type="application/json")
    assert shared.status_code == 201, shared.content
    own = api(cast.charlie).post(
        "/api/v1/namespaces/team-b/pods", data=json.dumps(pod("mine", "team-b")), content_type="application/json"
    )
    assert own.status_code == 201, own.content
    assert runtime_services.group_bare_pods() == 2
    assert PodGroup.objects.get(queue_name="team-b-private").namespace == "team-b"
    assert PodGroup.objects.get(queue_name="shared").namespace == "team-a"


def test_the_podgroup_controllers_never_group_into_a_foreign_queue(cast: Cast, private: None) -> None:
    """A row that did not pass the pod admission (as a pod read from a real cluster)."""
    job_services.apply_pod(SYSTEM, pod(queue="default"), "team-a")
    Pod.objects.filter(name="solo").update(annotations={QUEUE: "team-b-private"})
    assert runtime_services.group_bare_pods() == 0
    assert cluster_services.ensure_plain_pod_groups() == 0
    assert Pod.objects.get(name="solo").group_name == ""
    nothing_in_private()
