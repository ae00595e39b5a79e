"""``?watch=1``: the event stream (ADDED/MODIFIED/DELETED/BOOKMARK), resuming from a list version, 410 Gone."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.volcanoweb import builders
from volcanoweb.jobs.models import Job
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


ALL_JOBS = "/apis/batch.volcano.sh/v1alpha1/jobs"


def _live_names(monkeypatch, client, url: str) -> list[tuple[str, str]]:
    """Watch ``url`` for one second while, after the first snapshot, a job is created and another changed in
    each tenant; return the (type, namespace/name) of every event streamed."""
    monkeypatch.setattr(watch, "POLL_SECONDS", 0.02)
    real_sleep = watch.time.sleep
    writes = iter([True])

    def sleep_then_write(seconds: float) -> None:
        if next(writes, False):
            builders.make_job("team-a", "a-new")
            builders.make_job("team-b", "b-new")
            for namespace, name in (("team-a", "a-old"), ("team-b", "b-old")):
                job = Job.objects.get(namespace=namespace, name=name)
                job.labels = {"changed": "yes"}
                job.save()
        real_sleep(seconds)

    monkeypatch.setattr(watch.time, "sleep", sleep_then_write)
    response = client.get(f"{url}?watch=1&timeoutSeconds=1")
    assert response.status_code == 200
    return [
        (e["type"], f"{e['object']['metadata']['namespace']}/{e['object']['metadata']['name']}")
        for e in _events(response)
    ]


def test_a_cluster_wide_watch_never_streams_another_tenants_objects(monkeypatch, client_for, cast) -> None:
    builders.make_job("team-a", "a-old")
    builders.make_job("team-b", "b-old")
    seen = _live_names(monkeypatch, client_for(cast.alice, "token"), ALL_JOBS)
    assert ("ADDED", "team-a/a-old") in seen
    assert ("ADDED", "team-a/a-new") in seen
    assert ("MODIFIED", "team-a/a-old") in seen
    assert not [event for event in seen if event[1].startswith("team-b/")], seen


def test_the_same_live_watch_streams_both_tenants_for_a_platform_admin(monkeypatch, client_for, cast) -> None:
    """The control of the test above: the writes it makes in team-b are seen by someone allowed to."""
    builders.make_job("team-a", "a-old")
    builders.make_job("team-b", "b-old")
    seen = _live_names(monkeypatch, client_for(cast.root, "token"), ALL_JOBS)
    assert ("ADDED", "team-b/b-new") in seen
    assert ("MODIFIED", "team-b/b-old") in seen


@pytest.mark.parametrize(
    "url",
    [
        "/apis/batch.volcano.sh/v1alpha1/namespaces/team-b/jobs?watch=1&timeoutSeconds=0",
        "/apis/batch.volcano.sh/v1alpha1/namespaces/team-b/jobs?watch=true&timeoutSeconds=0",
        "/apis/batch.volcano.sh/v1alpha1/namespaces/team-b/jobs/b-old?watch=1&timeoutSeconds=0",
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-b/podgroups?watch=1&timeoutSeconds=0",
        "/api/v1/namespaces/team-b/pods?watch=1&timeoutSeconds=0",
        "/api/v1/namespaces/team-b/events?watch=1&timeoutSeconds=0",
    ],
)
def test_a_watch_of_another_tenants_namespace_is_refused(url: str, client_for, cast) -> None:
    builders.make_job("team-b", "b-old")
    response = client_for(cast.alice, "token").get(url)
    assert response.status_code == 403, url
    body = response.json()
    assert body["kind"] == "Status"
    assert body["reason"] == "Forbidden"
    assert 'User "alice" cannot watch' in body["message"]
    assert client_for(None).get(url).status_code == 401
