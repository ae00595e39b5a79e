"""Queues: built-ins, hierarchy and tenancy, open/close state machine, deletion rules."""

from __future__ import annotations

from typing import Any

from tests.volcanoweb import builders
from tests.volcanoweb.builders import job_manifest, queue_manifest, to_yaml
from tests.volcanoweb.conftest import post_yaml
from volcanoweb.audit.models import AuditEntry
from volcanoweb.jobs import services as job_services
from volcanoweb.queues.models import Queue
from volcanoweb.tenancy.access import SYSTEM


def test_root_and_default_exist_from_the_start(db: Any) -> None:
    root, default = Queue.objects.get(name="root"), Queue.objects.get(name="default")
    assert (root.parent, root.reclaimable, root.weight, root.state) == (None, False, 1, "Open")
    assert (default.parent, default.reclaimable, default.weight) == (root, True, 1)


def test_queue_defaults_follow_volcano(cast: Any, root_api: Any) -> None:
    response = post_yaml(root_api, "/api/v1/queues", to_yaml(queue_manifest("q1")))
    assert response.status_code == 201
    spec = response.json()["spec"]
    assert (spec["weight"], spec["reclaimable"], spec["parent"]) == (1, True, "root")
    assert response.json()["status"]["state"] == "Open"


def test_a_tenant_admin_adds_child_queues_under_its_own_queue(cast: Any, alice_api: Any) -> None:
    builders.make_queue(
        "team-a-q", tenant="team-a", weight=4, capability={"cpu": "10"}, guarantee={"cpu": "4"}, deserved={"cpu": "4"}
    )
    child = queue_manifest(
        "team-a-batch", parent="team-a-q", capability={"cpu": "8"}, guarantee={"cpu": "2"}, deserved={"cpu": "2"}
    )
    response = post_yaml(alice_api, "/api/v1/apply", to_yaml(child))
    assert response.status_code == 200, response.json()
    created = Queue.objects.get(name="team-a-batch")
    assert created.tenant == cast.team_a
    assert created.parent.name == "team-a-q"
    assert response.json()["items"][0]["object"]["metadata"]["annotations"]["volcanoweb.io/tenant"] == "team-a"
    too_big = with_guarantee = queue_manifest(
        "team-a-more", parent="team-a-q", guarantee={"cpu": "3"}, deserved={"cpu": "3"}
    )
    rejected = post_yaml(alice_api, "/api/v1/apply", to_yaml(with_guarantee))
    assert rejected.status_code == 400
    assert too_big
    assert (
        "the sum of guarantee of the child queues of team-a-q {cpu: 5} exceeds the guarantee of team-a-q {cpu: 4}"
        in rejected.json()["message"]
    )


def test_editing_a_queue_re_runs_the_hierarchical_checks(cast: Any, root_api: Any) -> None:
    builders.make_queue("eng", capability={"cpu": "10"})
    builders.make_queue("eng-ml", parent="eng", capability={"cpu": "6"})
    shrink = post_yaml(root_api, "/api/v1/apply", to_yaml(queue_manifest("eng", capability={"cpu": "4"})))
    assert shrink.status_code == 400
    assert "capability of its descendant in the subtree of eng-ml" in shrink.json()["message"]


def test_close_and_open_cascade_to_children(cast: Any, root_api: Any) -> None:
    builders.make_queue("parent")
    builders.make_queue("child", parent="parent")
    closed = root_api.post("/api/v1/queues/parent/close")
    assert closed.status_code == 200
    assert closed.json()["status"]["state"] == "Closed"
    child = Queue.objects.get(name="child")
    assert child.state == "Closed"
    assert child.annotations["volcano.sh/closed-by-parent"] == "true"
    refused = root_api.post("/api/v1/queues/child/open")
    assert refused.status_code == 409
    assert (
        "Failed to open queue child because its parent queue parent is closing or closed" in refused.json()["message"]
    )
    assert root_api.post("/api/v1/queues/parent/open").json()["status"]["state"] == "Open"
    assert Queue.objects.get(name="child").state == "Open"
    assert list(
        AuditEntry.objects.filter(kind="Queue", action__in=["open", "close"]).values_list("action", flat=True)
    ) == ["open", "close"]


def test_a_queue_with_podgroups_is_closing_until_they_are_gone(cast: Any, root_api: Any) -> None:
    builders.make_queue("busy", allowed=("team-a",))
    job_services.apply_job(SYSTEM, job_manifest(namespace="team-a", queue="busy"))
    assert root_api.post("/api/v1/queues/busy/close").json()["status"]["state"] == "Closing"
    job_services.delete_job(SYSTEM, "team-a", "train")
    from volcanoweb.queues import services

    assert services.sync_queue_state("busy").state == "Closed"


def test_built_in_queues_and_parents_cannot_be_deleted(cast: Any, root_api: Any) -> None:
    assert root_api.delete("/api/v1/queues/default").json()["message"] == "`default` queue can not be deleted"
    builders.make_queue("p")
    builders.make_queue("c1", parent="p")
    response = root_api.delete("/api/v1/queues/p")
    assert response.status_code == 400
    assert response.json()["message"] == "queue p can not be deleted because it has 1 child queues: c1"
    assert root_api.delete("/api/v1/queues/c1").status_code == 200
    assert root_api.post("/api/v1/queues/root/close").status_code == 400


def test_queues_list_only_what_the_tenant_can_use(cast: Any, client_for: Any) -> None:
    builders.make_queue("a-only", allowed=("team-a",))
    builders.make_queue("b-only", tenant="team-b")
    names = {q["metadata"]["name"] for q in client_for(cast.alice).get("/api/v1/queues").json()["items"]}
    assert names == {"root", "default", "a-only"}
