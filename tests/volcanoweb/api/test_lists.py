"""Lists: limit/continue pagination, filters, label selectors, text search and ordering."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.builders import job_manifest, with_changes
from volcanoweb.api import listing
from volcanoweb.jobs import services
from volcanoweb.jobs.models import Job, Pod
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


def walk(client: Any, url: str, limit: int, between: Any = None) -> list[str]:
    """Every name of a paged list; ``between`` runs after each page (a colleague deleting or creating)."""
    seen: list[str] = []
    token = ""
    while True:
        sep = "&" if "?" in url else "?"
        response = client.get(f"{url}{sep}limit={limit}" + (f"&continue={token}" if token else ""))
        seen += names(response)
        token = response.json()["metadata"].get("continue", "")
        if not token:
            return seen
        if between is not None:
            between(seen)


@pytest.mark.both_databases
@pytest.mark.parametrize("ordering", ["", "&ordering=-name", "&ordering=queue,-created"])
def test_a_delete_on_an_earlier_page_makes_no_later_page_skip(cast: Any, alice_api: Any, ordering: str) -> None:
    for i in range(7):
        services.apply_job(SYSTEM, job_manifest(f"p-{i}", namespace="team-a", queue="default"))
    everything = walk(alice_api, f"/api/v1/namespaces/team-a/jobs?x=1{ordering}", limit=100)
    deleted: list[str] = []

    def delete_first_of_page(seen: list[str]) -> None:  # TTL clean-up or a colleague, between two pages
        name = seen[-2]
        Job.objects.filter(namespace="team-a", name=name).delete()
        deleted.append(name)

    paged = walk(alice_api, f"/api/v1/namespaces/team-a/jobs?x=1{ordering}", limit=2, between=delete_first_of_page)
    assert paged == everything  # every object once, in the order of one full list
    assert deleted


def paged(queryset: Any, limit: int) -> list[str]:
    seen, params = [], {"limit": str(limit)}
    while True:
        items, meta = listing.paginate(queryset, params)
        seen += [item.name for item in items]
        if "continue" not in meta:
            return seen
        params = {"limit": str(limit), "continue": meta["continue"]}


@pytest.mark.both_databases
def test_pages_ordered_by_a_nullable_column_agree_on_both_databases(cast: Any) -> None:
    for i in range(5):
        Pod.objects.create(namespace="team-a", name=f"n-{i}", tenant=cast.team_a, priority=i if i % 2 else None)
    pods = Pod.objects.filter(namespace="team-a", name__startswith="n-")
    up = pods.order_by("priority", "name")
    assert [p.name for p in listing.paginate(up, {"limit": "100"})[0]] == ["n-1", "n-3", "n-0", "n-2", "n-4"]
    assert paged(up, 2) == ["n-1", "n-3", "n-0", "n-2", "n-4"]  # nulls last ascending, on both databases
    down = pods.order_by("-priority", "name")
    assert [p.name for p in listing.paginate(down, {"limit": "100"})[0]] == ["n-0", "n-2", "n-4", "n-3", "n-1"]
    assert paged(down, 1) == ["n-0", "n-2", "n-4", "n-3", "n-1"]  # nulls first descending


def test_a_continue_token_is_refused_for_another_ordering_or_when_forged(cast: Any, alice_api: Any) -> None:
    make_jobs()
    token = alice_api.get("/api/v1/namespaces/team-a/jobs?limit=1").json()["metadata"]["continue"]
    other = alice_api.get(f"/api/v1/namespaces/team-a/jobs?limit=1&ordering=-name&continue={token}")
    assert other.status_code == 400
    assert other.json()["details"]["causes"][0]["field"] == "continue"
    assert "another ordering" in other.json()["details"]["causes"][0]["message"]
    forged = base64.urlsafe_b64encode(json.dumps({"f": ["name", "pk"], "k": ["a", "not-a-number"]}).encode())
    bad = alice_api.get(f"/api/v1/namespaces/team-a/jobs?limit=1&continue={forged.decode()}")
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "continue"
