"""Pods look like core v1 pods: conditions, container statuses, QoS class, no product bookkeeping, and
Kubernetes' pod printer columns (READY, STATUS, RESTARTS; wide: IP, NODE, NOMINATED NODE, READINESS GATES)."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.volcanoweb.dashboard.test_events import _running
from volcanoweb.jobs.models import Pod
from volcanoweb.manifests.corepod import SCHEDULED_BY_ANNOTATION

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _conditions(obj: dict) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj["status"]["conditions"]}


@pytest.mark.django_db
def test_a_running_pod_is_ready_and_a_finished_one_is_not(sim_backend, client_for, cast) -> None:
    job = _running("shape")
    pod = Pod.objects.filter(job=job).order_by("name").first()
    assert pod is not None
    api = client_for(cast.alice, "token")
    url = f"/api/v1/namespaces/team-a/pods/{pod.name}"
    for body in (api.get(url).json(), api.get(url + "?fieldValidation=Strict", HTTP_ACCEPT="application/json").json()):
        status = body["status"]
        assert _conditions(body) == {
            "PodReadyToStartContainers": "True",
            "Initialized": "True",
            "Ready": "True",
            "ContainersReady": "True",
            "PodScheduled": "True",
        }
        (container,) = status["containerStatuses"]
        assert container["name"] == "main"
        assert container["ready"] is True
        assert container["started"] is True
        assert container["restartCount"] == 0
        assert "startedAt" in container["state"]["running"]
        assert status["qosClass"] == "Burstable"
        assert not {"backendUid", "backendVersion", "scheduledBy", "exitCode"} & set(status)
        assert body["metadata"]["annotations"][SCHEDULED_BY_ANNOTATION]

    sim_backend[0].fail_pod("team-a", pod.name, 3)
    Pod.objects.filter(pk=pod.pk).update(phase="Failed", exit_code=3, status={**pod.status, "exitCode": 3})
    failed = api.get(url).json()
    assert _conditions(failed)["Ready"] == "False"
    ready = next(c for c in failed["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "PodCompleted"
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3
    assert terminated["reason"] == "Error"

    table = api.get("/api/v1/namespaces/team-a/pods", HTTP_ACCEPT=TABLE).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
    assert rows[pod.name][1:4] == ["0/1", "Error", 0]
    other = next(name for name in rows if name != pod.name)
    assert rows[other][1:4] == ["1/1", "Running", 0]
    assert rows[other][6] == Pod.objects.get(name=other).node_name


@pytest.mark.django_db(transaction=True)
def test_the_official_clients_pod_model_reads_the_status(official, sim_backend, cast) -> None:
    _running("typed")
    core = client.CoreV1Api(official(cast.alice))
    pods = core.list_namespaced_pod("team-a").items
    assert pods
    pod = pods[0]
    assert pod.status.qos_class == "Burstable"
    assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"
    assert pod.status.container_statuses[0].state.running.started_at is not None
    assert pod.status.container_statuses[0].restart_count == 0
