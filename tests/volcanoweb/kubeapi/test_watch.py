"""``?watch=1``: the event stream (ADDED/MODIFIED/DELETED/BOOKMARK), resuming from a list version, 410 Gone."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.volcanoweb import builders
from volcanoweb.feed import log
from volcanoweb.jobs.models import Job
from volcanoweb.kubeapi import watch

pytestmark = pytest.mark.django_db

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"


def _events(response) -> list[dict]:
    return [json.loads(line) for line in b"".join(response).decode().splitlines()]


@pytest.fixture
def api(client_for, cast):
    return client_for(cast.alice, "token")


def _patch(api, url: str, body: dict) -> dict:
    response = api.patch(url, data=json.dumps(body), content_type="application/merge-patch+json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_watch_without_version_starts_with_the_current_objects(api) -> None:
    job = builders.make_job("team-a", "train")
    response = api.get(f"{JOBS}?watch=1&timeoutSeconds=0&allowWatchBookmarks=true")
    assert response.status_code == 200
    events = _events(response)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["name"] == "train"
    job.refresh_from_db()
    assert events[0]["object"]["metadata"]["resourceVersion"] == str(job.resource_version)
    bookmark = events[1]["object"]["metadata"]
    assert bookmark["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["resourceVersion"]) == log.head()[0] >= job.resource_version


def test_a_watch_from_the_lists_version_sends_only_changes(api) -> None:
    builders.make_job("team-a", "train")
    version = api.get(JOBS).json()["metadata"]["resourceVersion"]
    events = _events(api.get(f"{JOBS}?watch=1&timeoutSeconds=0&resourceVersion={version}"))
    assert events == []


def test_five_quick_patches_are_five_modified_events_in_order(api) -> None:
    builders.make_job("team-a", "train")
    version = api.get(JOBS).json()["metadata"]["resourceVersion"]
    written = [_patch(api, f"{JOBS}/train", {"metadata": {"labels": {"step": str(i)}}}) for i in range(5)]
    events = _events(api.get(f"{JOBS}?watch=1&timeoutSeconds=0&resourceVersion={version}"))
    assert [e["type"] for e in events] == ["MODIFIED"] * 5
    assert [e["object"]["metadata"]["labels"]["step"] for e in events] == ["0", "1", "2", "3", "4"]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    assert len(set(versions)) == 5
    assert versions == [int(w["metadata"]["resourceVersion"]) for w in written]


def test_a_change_between_the_list_and_the_watch_is_delivered(api) -> None:
    builders.make_job("team-a", "train")
    listed = api.get(JOBS).json()
    _patch(api, f"{JOBS}/train", {"metadata": {"labels": {"after": "list"}}})
    builders.make_job("team-a", "second")
    rv = listed["metadata"]["resourceVersion"]
    events = _events(api.get(f"{JOBS}?watch=1&timeoutSeconds=0&resourceVersion={rv}"))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "train"),
        ("ADDED", "second"),
    ]
    assert events[0]["object"]["metadata"]["labels"] == {"after": "list"}


def test_a_compacted_version_is_410_expired_as_an_error_event(api, settings) -> None:
    builders.make_job("team-a", "train")
    _patch(api, f"{JOBS}/train", {"metadata": {"labels": {"a": "1"}}})
    settings.FEED_RETENTION_ENTRIES = 0
    point = log.compact(now=timezone.now() + timedelta(days=1))
    assert point == log.head()[0] > 1
    response = api.get(f"{JOBS}?watch=1&resourceVersion=1&timeoutSeconds=0")
    assert response.status_code == 200
    events = _events(response)
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"
    # A watch from the compaction point (or later) is fine: nothing it needs is gone.
    assert _events(api.get(f"{JOBS}?watch=1&resourceVersion={point}&timeoutSeconds=0")) == []
    bad = api.get(f"{JOBS}?watch=1&resourceVersion=abc")
    assert bad.status_code == 400
    assert api.get(f"{JOBS}?watch=1&timeoutSeconds=-1").status_code == 400


def test_an_object_leaving_the_label_selector_is_deleted_for_that_watch(api) -> None:
    builders.make_job("team-a", "train")
    _patch(api, f"{JOBS}/train", {"metadata": {"labels": {"team": "vision"}}})
    rv = api.get(JOBS).json()["metadata"]["resourceVersion"]
    _patch(api, f"{JOBS}/train", {"metadata": {"labels": {"team": "speech"}}})
    _patch(api, f"{JOBS}/train", {"metadata": {"labels": {"team": "vision"}}})
    events = _events(api.get(f"{JOBS}?watch=1&timeoutSeconds=0&resourceVersion={rv}&labelSelector=team%3Dvision"))
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]
    assert events[0]["object"]["metadata"]["labels"] == {"team": "vision"}  # the object as it was in the selection
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) > int(rv)


def test_deletes_are_delivered_with_the_last_state(api) -> None:
    builders.make_job("team-a", "train")
    rv = api.get(JOBS).json()["metadata"]["resourceVersion"]
    assert api.delete(f"{JOBS}/train").status_code == 200
    events = _events(api.get(f"{JOBS}?watch=1&timeoutSeconds=0&resourceVersion={rv}"))
    assert [e["type"] for e in events][-1] == "DELETED"
    assert events[-1]["object"]["metadata"]["name"] == "train"


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
