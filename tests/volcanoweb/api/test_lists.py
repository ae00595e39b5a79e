"""Lists: limit/continue pagination, filters, label selectors, text search and ordering."""

from __future__ import annotations

from typing import Any

from tests.volcanoweb import builders
from tests.volcanoweb.builders import job_manifest, with_changes
from volcanoweb.jobs import services
from volcanoweb.tenancy.access import SYSTEM


def make_jobs() -> None:
    builders.make_queue("q2", allowed=("team-a",))
    for i, (queue, labels) in enumerate(
        [("default", {"app": "web", "tier": "front"}), ("q2", {"app": "db"}), ("default", {"app": "web"}), ("q2", {})]
    ):
        doc = with_changes(job_manifest(f"job-{i}", namespace="team-a", queue=queue), "metadata.labels", labels)
        services.apply_job(SYSTEM, doc)


def names(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [item["metadata"]["name"] for item in response.json()["items"]]


def test_limit_and_continue_walk_every_item_once(cast: Any, alice_api: Any) -> None:
    make_jobs()
    first = alice_api.get("/api/v1/namespaces/team-a/jobs?limit=3")
    assert names(first) == ["job-0", "job-1", "job-2"]
    meta = first.json()["metadata"]
    assert meta["remainingItemCount"] == 1
    assert first.json()["kind"] == "JobList"
    second = alice_api.get(f"/api/v1/namespaces/team-a/jobs?limit=3&continue={meta['continue']}")
    assert names(second) == ["job-3"]
    assert "continue" not in second.json()["metadata"]
    assert alice_api.get("/api/v1/jobs?continue=garbage").status_code == 400


def test_filters_selectors_search_and_ordering(cast: Any, alice_api: Any) -> None:
    make_jobs()
    assert names(alice_api.get("/api/v1/jobs?queue=q2")) == ["job-1", "job-3"]
    assert names(alice_api.get("/api/v1/jobs?labelSelector=app=web")) == ["job-0", "job-2"]
    assert names(alice_api.get("/api/v1/jobs?labelSelector=app!=web")) == ["job-1", "job-3"]
    assert names(alice_api.get("/api/v1/jobs?labelSelector=app in (db,web),!tier")) == ["job-1", "job-2"]
    assert names(alice_api.get("/api/v1/jobs?labelSelector=tier")) == ["job-0"]
    assert names(alice_api.get("/api/v1/jobs?q=b-3")) == ["job-3"]
    assert names(alice_api.get("/api/v1/jobs?phase=Running")) == []
    assert names(alice_api.get("/api/v1/jobs?ordering=-name")) == ["job-3", "job-2", "job-1", "job-0"]
    assert names(alice_api.get("/api/v1/jobs?ordering=queue,-name")) == ["job-2", "job-0", "job-3", "job-1"]
    bad = alice_api.get("/api/v1/jobs?ordering=secret")
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "ordering"
    assert alice_api.get("/api/v1/jobs?labelSelector=a b c").status_code == 400
