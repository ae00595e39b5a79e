"""``POST /api/v1/simulate`` has a cost bound: the pods and nodes it would simulate (413 naming the setting,
before any pod is built), simulations at a time per process (429 with Retry-After), and a child process with
a time limit that is killed (413), so the web process keeps none of a simulation's memory."""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from scheduler import DEFAULT_CONFIG, Snapshot
from tests.volcanoweb import builders
from tests.volcanoweb.api.hostile.stuck_child import never_answers
from tests.volcanoweb.builders import job_manifest, task, to_yaml
from tests.volcanoweb.conftest import Cast, post_yaml
from volcanoweb.api import simcycle, simulate

pytestmark = pytest.mark.both_databases
URL = "/api/v1/simulate?namespace=team-a"


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def jobs(count: int, replicas: int) -> str:
    docs = [job_manifest(f"j{i}", namespace="team-a", tasks=[task(replicas=replicas)]) for i in range(count)]
    return "---\n".join(to_yaml(d) for d in docs)


def node(name: str) -> str:
    return to_yaml(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": "8"}}}
    )


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the simulations that reached the child process."""
    calls: list[int] = []
    real = simcycle.run_isolated

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(simulate, "run_isolated", counted)
    return calls


@override_settings(SIMULATE_MAX_PODS=50)
def test_too_many_pods_is_a_413_naming_the_limit(cast: Cast, spy: list[int], monkeypatch: Any) -> None:
    built: list[int] = []
    real = simulate.job_documents
    monkeypatch.setattr(simulate, "job_documents", lambda job: built.append(1) or real(job))
    response = post_yaml(api(cast.alice), URL, jobs(10, 6))
    assert response.status_code == 413, response.content
    assert response.json()["reason"] == "RequestEntityTooLarge"
    assert "60 pods, more than SIMULATE_MAX_PODS (50)" in response.json()["message"]
    assert (spy, built) == ([], [])
    assert post_yaml(api(cast.alice), URL, jobs(10, 5)).status_code == 200
    assert spy == [1]


@override_settings(SIMULATE_MAX_NODES=2)
def test_too_many_nodes_is_a_413_naming_the_limit(cast: Cast, spy: list[int]) -> None:
    body = "---\n".join([node("n1"), node("n2"), node("n3"), to_yaml(job_manifest("j", namespace="team-a"))])
    response = post_yaml(api(cast.alice), URL, body)
    assert response.status_code == 413
    assert "SIMULATE_MAX_NODES (2)" in response.json()["message"]
    assert spy == []


@override_settings(SIMULATE_CONCURRENCY=1, SIMULATE_QUEUE_WAIT=0.01)
def test_a_busy_process_answers_429_with_retry_after(cast: Cast, spy: list[int], monkeypatch: Any) -> None:
    taken = threading.BoundedSemaphore(1)
    taken.acquire()
    monkeypatch.setattr(simulate, "_slots", taken)
    response = post_yaml(api(cast.alice), URL, jobs(1, 1))
    assert response.status_code == 429
    assert response["Retry-After"] == "1"
    assert "SIMULATE_CONCURRENCY" in response.json()["message"]
    assert spy == []
    taken.release()
    assert post_yaml(api(cast.alice), URL, jobs(1, 1)).status_code == 200


def test_a_simulation_past_its_time_limit_is_killed() -> None:
    with pytest.raises(simcycle.SimulationTimeout):
        simcycle.run_isolated(
            Snapshot.of([], [], [], []), [], set(), 0, DEFAULT_CONFIG, timeout=0.5, target=never_answers
        )
    assert multiprocessing.active_children() == []


def test_the_api_answers_413_when_the_child_times_out(cast: Cast, monkeypatch: Any) -> None:
    real = simcycle.run_isolated
    monkeypatch.setattr(simulate, "run_isolated", lambda *a, **k: real(*a, **{**k, "target": never_answers}))
    with override_settings(SIMULATE_TIMEOUT=0.5):
        response = post_yaml(api(cast.alice), URL, jobs(1, 1))
    assert response.status_code == 413
    assert "SIMULATE_TIMEOUT (0.5 s)" in response.json()["message"]
    assert multiprocessing.active_children() == []


def test_a_simulation_runs_in_a_child_that_is_gone_afterwards(cast: Cast) -> None:
    builders.make_queue("team-a-q", tenant="team-a")
    response = post_yaml(api(cast.alice), URL, to_yaml(job_manifest("j", namespace="team-a", queue="team-a-q")))
    assert response.status_code == 200, response.content
    assert response.json()["jobs"][0]["pods"] == 2
    assert multiprocessing.active_children() == []


def test_the_reported_body_is_refused_with_the_defaults(cast: Cast, spy: list[int]) -> None:
    """100 Jobs x replicas 5000 (the issue's 45 KB body): 500,000 pods, refused before any is built."""
    response = post_yaml(api(cast.alice), URL, jobs(100, 5000))
    assert response.status_code == 413
    assert "500000 pods, more than SIMULATE_MAX_PODS (5000)" in response.json()["message"]
    assert spy == []
