"""Lists at a revision: ``resourceVersion`` is the log's revision, ``continue`` pages are read as of it (a delete
between pages skips nothing, a create between pages adds nothing), ``resourceVersionMatch=Exact``, 410 and 504."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.volcanoweb import builders
from volcanoweb.feed import log
from volcanoweb.jobs.models import Job

pytestmark = pytest.mark.django_db

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"
NAMES = ["a", "b", "c", "d", "e"]


@pytest.fixture
def api(client_for, cast):
    for name in NAMES:
        builders.make_job("team-a", name)
    return client_for(cast.alice, "token")


def _names(body: dict) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


def _label(api, name: str, value: str) -> None:
    response = api.patch(
        f"{JOBS}/{name}",
        data=json.dumps({"metadata": {"labels": {"v": value}}}),
        content_type="application/merge-patch+json",
    )
    assert response.status_code == 200, response.content


def test_a_delete_between_pages_skips_nothing(api) -> None:
    first = api.get(f"{JOBS}?limit=2").json()
    assert _names(first) == ["a", "b"]
    token = first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 3
    Job.objects.filter(name__in=["a", "c"]).delete()  # one of page 1, one of page 2
    builders.make_job("team-a", "bb")  # created after the list's revision
    second = api.get(f"{JOBS}?limit=2&continue={token}").json()
    assert _names(second) == ["c", "d"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    third = api.get(f"{JOBS}?limit=2&continue={second['metadata']['continue']}").json()
    assert _names(third) == ["e"]
    assert "continue" not in third["metadata"]
    # A fresh list is the state now.
    assert _names(api.get(JOBS).json()) == ["b", "bb", "d", "e"]


def test_later_pages_show_objects_as_they_were_at_the_lists_revision(api) -> None:
    first = api.get(f"{JOBS}?limit=3").json()
    _label(api, "d", "changed")
    second = api.get(f"{JOBS}?limit=3&continue={first['metadata']['continue']}").json()
    assert _names(second) == ["d", "e"]
    assert "labels" not in second["items"][0]["metadata"]
    assert int(second["items"][0]["metadata"]["resourceVersion"]) <= int(first["metadata"]["resourceVersion"])


def test_resource_version_match_exact_lists_the_past(api) -> None:
    before = api.get(JOBS).json()["metadata"]["resourceVersion"]
    Job.objects.filter(name="a").delete()
    _label(api, "b", "new")
    builders.make_job("team-a", "f")
    then = api.get(f"{JOBS}?resourceVersion={before}&resourceVersionMatch=Exact").json()
    assert _names(then) == NAMES
    assert then["metadata"]["resourceVersion"] == before
    assert "labels" not in then["items"][1]["metadata"]
    now = api.get(f"{JOBS}?resourceVersion={before}&resourceVersionMatch=NotOlderThan").json()
    assert _names(now) == ["b", "c", "d", "e", "f"]
    assert int(now["metadata"]["resourceVersion"]) > int(before)


def test_bad_and_impossible_versions(api, settings) -> None:
    head = log.head()[0]
    assert api.get(f"{JOBS}?resourceVersionMatch=Exact").status_code == 400
    assert api.get(f"{JOBS}?resourceVersion=0&resourceVersionMatch=Exact").status_code == 400
    assert api.get(f"{JOBS}?resourceVersion=1&resourceVersionMatch=Sometimes").status_code == 400
    too_large = api.get(f"{JOBS}?resourceVersion={head + 1000}&resourceVersionMatch=Exact")
    assert too_large.status_code == 504
    assert too_large.json()["reason"] == "Timeout"
    assert api.get(f"{JOBS}?limit=2&continue=not-a-token").status_code == 400
    # A continue token of a compacted revision: 410 Expired, and a fresh list works.
    token = api.get(f"{JOBS}?limit=2").json()["metadata"]["continue"]
    _label(api, "a", "x")
    settings.FEED_RETENTION_ENTRIES = 0
    log.compact(now=timezone.now() + timedelta(days=1))
    gone = api.get(f"{JOBS}?limit=2&continue={token}")
    assert gone.status_code == 410
    assert gone.json()["reason"] == "Expired"
    assert "start a new list" in gone.json()["message"]
    assert _names(api.get(f"{JOBS}?limit=2").json()) == ["a", "b"]


def test_a_list_is_consistent_with_its_revision(api) -> None:
    body = api.get(JOBS).json()
    versions = [int(item["metadata"]["resourceVersion"]) for item in body["items"]]
    assert max(versions) <= int(body["metadata"]["resourceVersion"]) == log.head()[0]
