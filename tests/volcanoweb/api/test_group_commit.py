"""Group commit (ADR 0030): concurrent single-Job applies go through one transaction of the set-based path,
each keeping its own answer and its own all-or-nothing; a refused one never takes the others down; callers'
requests are never mixed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections

from tests.volcanoweb import builders
from tests.volcanoweb.conftest import post_yaml
from volcanoweb import groupcommit
from volcanoweb.core.errors import ApiError
from volcanoweb.jobs import services as jobs
from volcanoweb.jobs.models import Job
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.tenancy.access import access_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def committer(cast: Any) -> Iterator[groupcommit.GroupCommit]:
    """A batcher whose window is long enough that requests started together share a batch."""
    ensure_builtin_queues()
    builders.make_queue("ml-training", allowed=("team-a", "team-b"))
    calls: list[int] = []

    def apply_many(access: Any, docs: list[Any], namespace: Any, mode: str) -> Any:
        calls.append(len(docs))
        return jobs.apply_jobs(access, docs, namespace, mode=mode)

    batcher = groupcommit.GroupCommit(0.3, apply_many)
    batcher.calls = calls  # type: ignore[attr-defined]
    yield batcher
    batcher.stop()


def _submit_together(committer: groupcommit.GroupCommit, requests: list[tuple[Any, ...]]) -> list[Any]:
    """Apply every request from a thread of its own, all at once; return each one's outcome or error."""
    results: list[Any] = [None] * len(requests)
    start = threading.Barrier(len(requests))

    def run(index: int) -> None:
        access, doc, namespace, *mode = requests[index]
        start.wait()
        try:
            results[index] = committer.apply(access, doc, namespace, *mode)
        except ApiError as error:
            results[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_concurrent_single_applies_share_one_transaction_and_keep_their_own_answers(cast: Any, committer: Any) -> None:
    alice = access_for(cast.alice)
    docs = [builders.job_manifest(f"batch-{i}", queue="ml-training") for i in range(5)]
    results = _submit_together(committer, [(alice, doc, "team-a") for doc in docs])
    assert [(o.action, o.name) for o in results] == [("created", f"batch-{i}") for i in range(5)]
    assert committer.calls == [5]  # one set-based apply for the five
    assert sorted(Job.objects.values_list("name", flat=True)) == [f"batch-{i}" for i in range(5)]


def test_a_refused_request_gets_its_own_error_and_the_others_are_applied(cast: Any, committer: Any) -> None:
    alice = access_for(cast.alice)
    docs = [builders.job_manifest(f"ok-{i}", queue="ml-training") for i in range(4)]
    bad = builders.job_manifest("bad", queue="ml-training")
    bad["spec"]["tasks"][0]["replicas"] = -1
    alone = None
    try:
        jobs.apply_job(alice, bad, "team-a")
    except ApiError as error:
        alone = error
    assert alone is not None
    results = _submit_together(committer, [(alice, doc, "team-a") for doc in [*docs[:2], bad, *docs[2:]]])
    refused = results[2]
    assert isinstance(refused, ApiError)
    assert (refused.code, refused.message) == (alone.code, alone.message)  # as if it had come alone
    assert [o.name for o in results if not isinstance(o, ApiError)] == [f"ok-{i}" for i in range(4)]
    assert sorted(Job.objects.values_list("name", flat=True)) == [f"ok-{i}" for i in range(4)]


def test_callers_are_never_mixed_and_each_keeps_its_rights(cast: Any, committer: Any) -> None:
    alice, charlie = access_for(cast.alice), access_for(cast.charlie)
    requests = [
        (alice, builders.job_manifest("a-1", queue="ml-training"), "team-a"),
        (charlie, builders.job_manifest("c-1", queue="ml-training"), "team-b"),
        (alice, builders.job_manifest("a-2", queue="ml-training"), "team-a"),
        (charlie, builders.job_manifest("sneak", queue="ml-training", namespace="team-a"), "team-b"),
    ]
    results = _submit_together(committer, requests)
    assert results[0].name == "a-1"
    assert results[1].name == "c-1"
    assert results[2].name == "a-2"
    assert isinstance(results[3], ApiError)
    assert results[3].code == 403  # charlie may not write team-a, batched or not
    assert sorted(Job.objects.values_list("namespace", "name")) == [
        ("team-a", "a-1"),
        ("team-a", "a-2"),
        ("team-b", "c-1"),
    ]


def test_one_name_twice_in_a_batch_is_applied_in_order(cast: Any, committer: Any) -> None:
    alice = access_for(cast.alice)
    doc = builders.job_manifest("twice", queue="ml-training")
    results = _submit_together(committer, [(alice, doc, "team-a"), (alice, dict(doc), "team-a")])
    assert sorted(o.action for o in results) == ["created", "unchanged"]
    assert Job.objects.filter(name="twice").count() == 1


def test_the_rest_api_applies_one_job_through_the_batcher(cast: Any, client_for: Any, monkeypatch: Any) -> None:
    ensure_builtin_queues()
    builders.make_queue("ml-training", allowed=("team-a",))
    seen: list[int] = []
    batcher = groupcommit.GroupCommit(0.001)
    real = batcher._apply
    monkeypatch.setattr(batcher, "_apply", lambda group: (seen.append(len(group)), real(group)))
    monkeypatch.setattr(groupcommit, "group_commit", lambda: batcher)
    response = post_yaml(
        client_for(cast.alice, "token"), "/api/v1/apply", builders.to_yaml(builders.job_manifest("api"))
    )
    assert response.status_code == 200, response.json()
    assert response.json()["items"][0]["action"] == "created"
    assert seen == [1]
    assert Job.objects.filter(name="api").exists()
    batcher.stop()


def test_a_waiting_request_holds_no_database_connection(cast: Any) -> None:
    """With a pool of connections (ASGI), requests waiting for the writer thread must not hold the connections
    it needs: a waiting request has given its own back."""
    ensure_builtin_queues()
    builders.make_queue("ml-training", allowed=("team-a",))
    alice = access_for(cast.alice)
    held: list[bool] = []
    waiting: dict[str, Any] = {}

    def apply_many(access: Any, docs: list[Any], namespace: Any, mode: str) -> Any:
        held.append(waiting["connection"].connection is not None)
        return jobs.apply_jobs(access, docs, namespace, mode=mode)

    batcher = groupcommit.GroupCommit(0.3, apply_many)

    def request(name: str) -> None:
        own = connections["default"]  # this thread's own connection object (not the per-thread proxy)
        list(Job.objects.all()[:1])  # the request used the database before it applies (its authentication)
        waiting["connection"] = own
        batcher.apply(alice, builders.job_manifest(name, queue="ml-training"), "team-a")
        own.close()

    threads = [threading.Thread(target=request, args=(f"w-{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    batcher.stop()
    assert held == [False]
    assert Job.objects.filter(name__startswith="w-").count() == 2


def test_batched_creates_refuse_an_existing_name_as_a_create_alone_does(cast: Any, committer: Any) -> None:
    """The Kubernetes API's create (POST .../jobs) goes through the batcher in create mode: 409 for a name that
    exists, the others created in one set-based call."""
    alice = access_for(cast.alice)
    jobs.apply_job(alice, builders.job_manifest("taken", queue="ml-training"), "team-a")
    docs = [builders.job_manifest(name, queue="ml-training") for name in ("n-1", "taken", "n-2")]
    results = _submit_together(committer, [(alice, doc, "team-a", "create") for doc in docs])
    assert isinstance(results[1], ApiError)
    assert (results[1].code, results[1].reason) == (409, "AlreadyExists")
    assert [results[0].action, results[2].action] == ["created", "created"]
