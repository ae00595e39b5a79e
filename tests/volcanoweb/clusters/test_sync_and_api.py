"""sync_from_backend mirrors nodes and pods; nodes API; fault injection permissions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb.clusters.helpers import make_gang, pod_spec
from volcanoweb.audit.models import AuditEntry
from volcanoweb.clusters import faults, services
from volcanoweb.clusters.models import Node
from volcanoweb.feed import log
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.live import feedsource
from volcanoweb.tenancy.access import SYSTEM


@pytest.fixture
def synced(sim: Any, cast: Any) -> Any:
    services.sync_from_backend()
    return sim


def test_sync_mirrors_nodes_with_integer_resources(synced: Any) -> None:
    node = Node.objects.get(name="cpu-0")
    assert node.allocatable == {"cpu": 8000, "memory": 32 * 1024**3, "pods": 110, "ephemeral-storage": 100 * 1024**3}
    assert node.ready
    assert node.kind == "cpu"
    assert node.labels["sim.volcanoweb.io/pool"] == "cpu"
    assert Node.objects.count() == 4


def test_sync_creates_pods_in_backend_and_mirrors_their_phase(synced: Any, cast: Any) -> None:
    backend, clock = synced
    _, pods = make_gang("g", 1, tenant=cast.team_a)
    services.sync_from_backend()
    assert backend.get_pod("team-a", "g-0").phase == "Pending"
    backend.bind("team-a", "g-0", "cpu-1")
    clock.advance(60)
    result = services.sync_from_backend()
    pod = Pod.objects.get(pk=pods[0].pk)
    assert (pod.phase, pod.node_name, pod.exit_code) == ("Succeeded", "cpu-1", 0)
    assert pod.started_at is not None
    assert pod.finished_at is not None
    assert result.pods_changed == 1


def test_plain_volcano_pod_gets_a_podgroup(synced: Any, cast: Any) -> None:
    pod = Pod.objects.create(
        namespace="team-a",
        name="spark-driver",
        tenant=cast.team_a,
        scheduler_name="volcano",
        requests={"cpu": 500},
        spec=pod_spec("500m"),
        annotations={"scheduling.volcano.sh/queue-name": "default"},
    )
    services.sync_from_backend()
    pod.refresh_from_db()
    group = PodGroup.objects.get(namespace="team-a", name=f"podgroup-{pod.uid}")
    assert (group.min_member, group.queue_name, group.min_resources) == (1, "default", {"cpu": "500m"})
    assert pod.group_name == group.name
    assert pod.podgroup_id == group.pk
    assert pod.annotations["scheduling.k8s.io/group-name"] == group.name


def test_nodes_api_for_any_authenticated_user(synced: Any, client_for: Any, cast: Any) -> None:
    response = client_for(cast.victor).get("/api/v1/nodes")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["kind"] == "NodeList"
    assert [n["metadata"]["name"] for n in body["items"]] == ["cpu-0", "cpu-1", "cpu-2", "cpu-3"]
    assert body["items"][0]["status"]["allocatable"] == {
        "cpu": "8",
        "memory": "32Gi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }
    detail = client_for(cast.victor).get("/api/v1/nodes/cpu-0")
    assert detail.status_code == 200
    assert detail.json()["status"]["pods"] == []
    assert client_for(cast.victor).get("/api/v1/nodes/nope").status_code == 404
    assert client_for(None).get("/api/v1/nodes").status_code in (401, 403)


def test_fail_and_recover_node_platform_admin_only(synced: Any, client_for: Any, cast: Any) -> None:
    assert client_for(cast.alice).post("/api/v1/nodes/cpu-0/fail").status_code == 403
    response = client_for(cast.root).post("/api/v1/nodes/cpu-0/fail")
    assert response.status_code == 200, response.content
    assert response.json()["status"]["ready"] is False
    assert not Node.objects.get(name="cpu-0").ready
    response = client_for(cast.root).post("/api/v1/nodes/cpu-0/recover")
    assert response.json()["status"]["ready"] is True


def test_cordon_and_uncordon_platform_admin_only(synced: Any, client_for: Any, cast: Any) -> None:
    """Cordon keeps the node Ready and its pods, marks it unschedulable (the scheduler's snapshot leaves it out
    of placement); uncordon undoes it; tenants are refused; each is audited."""
    from volcanoweb.audit.models import AuditEntry

    assert client_for(cast.alice).post("/api/v1/nodes/cpu-1/cordon").status_code == 403
    assert not Node.objects.get(name="cpu-1").unschedulable
    response = client_for(cast.root).post("/api/v1/nodes/cpu-1/cordon")
    assert response.status_code == 200, response.content
    node = Node.objects.get(name="cpu-1")
    assert node.unschedulable
    assert node.ready
    from volcanoweb.scheduling.snapshots import build_snapshot

    placed = {n.name: n for n in build_snapshot().snapshot.nodes}
    assert placed["cpu-1"].unschedulable  # the predicates leave it out of placement
    assert client_for(cast.root).post("/api/v1/nodes/cpu-1/uncordon").status_code == 200
    assert not Node.objects.get(name="cpu-1").unschedulable
    assert client_for(cast.root).post("/api/v1/nodes/nope/cordon").status_code == 404
    verbs = list(AuditEntry.objects.filter(kind="Node", object_key="cpu-1").values_list("action", flat=True))
    assert "cordon" in verbs
    assert "uncordon" in verbs


def test_end_pod_with_exit_code_by_tenant_admin(synced: Any, client_for: Any, cast: Any) -> None:
    backend, _ = synced
    make_gang("g", 1, tenant=cast.team_a)
    services.sync_from_backend()
    backend.bind("team-a", "g-0", "cpu-0")
    services.sync_from_backend()
    url = "/api/v1/namespaces/team-a/pods/g-0/exit"
    assert client_for(cast.bob).post(url, {"exitCode": 137}, format="json").status_code == 403
    assert client_for(cast.charlie).post(url, {"exitCode": 137}, format="json").status_code == 404
    response = client_for(cast.alice).post(url, {"exitCode": 137}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["exitCode"] == 137
    assert response.json()["phase"] == "Failed"
    assert client_for(cast.alice).post(url, {"exitCode": "x"}, format="json").status_code == 400


def test_evict_pod(synced: Any, cast: Any) -> None:
    backend, _ = synced
    make_gang("g", 1, tenant=cast.team_a)
    services.sync_from_backend()
    backend.bind("team-a", "g-0", "cpu-0")
    backend.tick()
    faults.evict_pod(SYSTEM, "team-a", "g-0")
    with pytest.raises(Exception, match="not found"):
        backend.get_pod("team-a", "g-0")
    assert not Pod.objects.filter(namespace="team-a", name="g-0").exists()  # a plain pod is simply gone


def run_restartable_pod(backend: Any, cast: Any, name: str) -> str:
    """Create, bind and start a one-pod gang whose pod has restartPolicy OnFailure; return the pod name."""
    _, (pod,) = make_gang(name, 1, tenant=cast.team_a)
    pod.spec = {**pod.spec, "restartPolicy": "OnFailure"}
    pod.save(update_fields=["spec"])
    services.sync_from_backend()
    backend.bind("team-a", pod.name, "cpu-0")
    backend.tick()
    services.sync_from_backend()
    return pod.name


def test_container_exit_restarts_in_place_and_is_mirrored(synced: Any, client_for: Any, cast: Any) -> None:
    backend, _ = synced
    run_restartable_pod(backend, cast, "r")
    url = "/api/v1/namespaces/team-a/pods/r-0/exit"
    bad = client_for(cast.alice).post(url, {"exitCode": 1, "restartContainer": "yes"}, format="json")
    assert bad.status_code == 400
    assert "restartContainer" in bad.json()["message"]
    response = client_for(cast.alice).post(url, {"exitCode": 1, "restartContainer": True}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["phase"], response.json()["restartCount"]) == ("Running", 1)
    assert Pod.objects.get(name="r-0").status["restartCount"] == 1
    assert AuditEntry.objects.filter(action="end", message__contains="container restart").exists()


def test_a_pod_is_broadcast_only_when_its_phase_or_node_changes(synced: Any, cast: Any) -> None:
    backend, _ = synced

    def pod_messages(after: int) -> list[dict[str, Any]]:
        shown = (feedsource.message(change) for change in log.changes(after, ["pods"]))
        return [m[0] for m in shown if m is not None and m[0]["id"] == "team-a/b-0"]

    start = log.head()[0]
    run_restartable_pod(backend, cast, "b")  # bound and started
    services.sync_from_backend()  # nothing new
    before = pod_messages(start)
    assert before
    assert before[-1]["phase"] == "Running"
    mark = log.head()[0]
    backend.restart_container("team-a", "b-0", exit_code=1)
    services.sync_from_backend()  # status only (restartCount, reason): stored and logged, reaches no socket
    assert Pod.objects.get(name="b-0").status["restartCount"] == 1
    assert log.changes(mark, ["pods"])  # the log has the change (a watch sees it) ...
    assert pod_messages(mark) == []  # ... the dashboard's sockets do not
    mark = log.head()[0]
    backend.evict("team-a", "b-0")
    backend.tick()
    services.sync_from_backend()  # gone: broadcast
    assert pod_messages(mark)


def test_plain_pods_beyond_one_batch_are_all_created_in_the_cluster(
    synced: Any, cast: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, _clock = synced
    monkeypatch.setattr(services, "PLAIN_POD_BATCH", 2)
    for i in range(5):
        Pod.objects.create(
            namespace="team-a",
            name=f"plain-{i}",
            tenant=cast.team_a,
            scheduler_name="volcano",
            requests={"cpu": 500},
            spec=pod_spec("500m"),
        )
    created = [services.create_plain_pods_in_backend(backend) for _ in range(4)]
    assert created == [2, 2, 1, 0]  # the pending pods already in the cluster do not fill the next batch
    assert all(backend.get_pod("team-a", f"plain-{i}").phase == "Pending" for i in range(5))
    assert not Pod.objects.filter(name__startswith="plain-").exclude(status__has_key="backendUid").exists()
