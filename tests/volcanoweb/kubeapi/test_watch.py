"""``?watch=1``: the event stream (ADDED/MODIFIED/DELETED/BOOKMARK), resuming from a list version, 410 Gone."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.volcanoweb import builders
from volcanoweb.kubeapi import query, watch
from volcanoweb.kubeapi.registry import RESOURCES

pytestmark = pytest.mark.django_db

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"
JOB_RESOURCE = next(r for r in RESOURCES if r.plural == "jobs")


def _events(response) -> list[dict]:
    return [json.loads(line) for line in b"".join(response).decode().splitlines()]


@pytest.fixture
def api(client_for, cast):
    return client_for(cast.alice, "token")


def test_a_watch_without_version_starts_with_the_current_objects(api) -> None:
    builders.make_job("team-a", "train")
    response = api.get(f"{JOBS}?watch=1&timeoutSeconds=0&allowWatchBookmarks=true")
    assert response.status_code == 200
    events = _events(response)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["name"] == "train"
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > 10**12


def test_a_watch_from_the_lists_version_sends_only_changes(api) -> None:
    builders.make_job("team-a", "train")
    version = api.get(JOBS).json()["metadata"]["resourceVersion"]
    events = _events(api.get(f"{JOBS}?watch=1&timeoutSeconds=0&resourceVersion={version}"))
    assert events == []


def test_a_too_old_version_is_410_gone(api) -> None:
    old = int(query.list_version()) - query.WATCH_WINDOW_MS - 1000
    response = api.get(f"{JOBS}?watch=1&resourceVersion={old}")
    assert response.status_code == 410
    assert response.json()["reason"] == "Expired"
    bad = api.get(f"{JOBS}?watch=1&resourceVersion=abc")
    assert bad.status_code == 400
    assert api.get(f"{JOBS}?watch=1&timeoutSeconds=-1").status_code == 400


def test_a_watch_by_name_and_as_table(api) -> None:
    builders.make_job("team-a", "train")
    builders.make_job("team-a", "other")
    events = _events(
        api.get(f"{JOBS}?watch=1&timeoutSeconds=0&fieldSelector=metadata.name%3Dtrain", HTTP_ACCEPT=query_table())
    )
    assert len(events) == 1
    table = events[0]["object"]
    assert table["kind"] == "Table"
    assert table["rows"][0]["cells"][:2] == ["train", "Pending"]


def query_table() -> str:
    return "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_the_stream_reports_additions_changes_and_deletions(monkeypatch) -> None:
    monkeypatch.setattr(watch, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(watch, "BOOKMARK_SECONDS", 0.0)

    def obj(name: str, phase: str) -> dict:
        return {"metadata": {"name": name, "uid": name, "resourceVersion": "1"}, "status": {"state": {"phase": phase}}}

    states = iter(
        [
            {"a": obj("a", "Pending")},
            {"a": obj("a", "Running"), "b": obj("b", "Pending")},
            {"b": obj("b", "Pending")},
        ]
    )
    last: dict = {}

    def snapshot() -> dict:
        nonlocal last
        last = next(states, last)
        return last

    async def collect() -> list[tuple[str, str]]:
        out = []
        stream = watch.events(snapshot, resource=JOB_RESOURCE, replay=True, timeout=1, bookmarks=True, as_table=False)
        async for line in stream:
            event = json.loads(line)
            if event["type"] != "BOOKMARK":
                out.append((event["type"], event["object"]["metadata"]["name"]))
            if len(out) == 4:
                break
        return out

    assert asyncio.run(collect()) == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
