"""The bulk apply path (``jobs.apply_jobs``, ADR 0020) leaves exactly what applying one by one leaves.

Each scenario runs twice on the same starting rows, inside a savepoint rolled back after each run: once
with ``apply_documents(..., bulk=False)`` (every document through ``apply_object``) and once with the
bulk path, and compares the rows written (jobs, tasks, PodGroups, audit entries, in id order), the
outcomes or the error (status code, message, causes), and the jobs handed to the controller on commit.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.volcanoweb import builders
from tests.volcanoweb.conftest import Cast, post_yaml
from volcanoweb.apply import apply_documents
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.errors import ApiError
from volcanoweb.feed import log
from volcanoweb.jobs.models import Job, PodGroup, Task
from volcanoweb.runtime import dispatch, informer
from volcanoweb.tenancy.access import access_for

pytestmark = pytest.mark.both_databases

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
#: Columns that differ between any two runs (ids, uids, clocks, log revisions) and say nothing about what was applied.
VOLATILE = {"id", "uid", "created_at", "updated_at", "at", "job_id", "created_by_id", "actor_id", "resource_version"}
FRAGMENTS = {"05-spark-driver-pod-template.yaml"}


def _norm(value: Any) -> Any:
    if isinstance(value, dict):  # a revision is taken from a sequence, which a rollback does not give back
        return {k: "<rv>" if k == "resourceVersion" else _norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    if isinstance(value, str):
        value = UUID_RE.sub("<uid>", value)
        return "<time>" if TIME_RE.match(value) else value
    if hasattr(value, "hex") and not isinstance(value, bytes | int | float):  # a UUID column
        return "<uid>"
    return value


def _rows(model: Any, key: Callable[[Any], Any] | None = None) -> list[dict[str, Any]]:
    rows = []
    for obj in model.objects.order_by("id"):
        row = {f.attname: getattr(obj, f.attname) for f in model._meta.concrete_fields if f.attname not in VOLATILE}
        if key is not None:
            row["owner"] = key(obj)
        rows.append(_norm(row))
    return rows


def _state() -> dict[str, Any]:
    return {
        "jobs": _rows(Job),
        "tasks": _rows(Task, lambda t: t.job.key),
        "podgroups": _rows(PodGroup, lambda g: g.job.key if g.job_id else None),
        "audit": _rows(AuditEntry),
    }


def _run(
    monkeypatch: Any,
    access: Any,
    setup: list[list[dict[str, Any]]],
    documents: list[dict[str, Any]],
    *,
    bulk: bool,
) -> dict[str, Any]:
    """Apply ``setup`` (one by one) then ``documents`` (the path under test); return what it left; roll back."""
    requested: list[list[str]] = []

    def record(job_ids: Any, *, urgent: bool = False) -> None:
        requested.append(sorted(Job.objects.get(pk=i).key for i in job_ids))

    monkeypatch.setattr(dispatch, "request_sync", record)
    monkeypatch.setattr(dispatch, "queue_task", lambda task, *args: None)
    result: dict[str, Any] = {}
    with transaction.atomic():
        for docs in setup:
            apply_documents(access, copy.deepcopy(docs), default_namespace="team-a", bulk=False)
        AuditEntry.objects.all().delete()
        watching = informer.Informer(cursor=log.head()[0])  # what the controllers read of the apply under test
        try:
            outcomes = apply_documents(access, copy.deepcopy(documents), default_namespace="team-a", bulk=bulk)
        except ApiError as exc:
            result["error"] = (type(exc).__name__, exc.code, exc.message, exc.details())
        else:
            result["outcomes"] = [_norm({**o.summary(), "object": o.object}) for o in outcomes]
            result["state"] = _state()
            watching.step()
            result["synced"] = sorted(key for keys in requested for key in keys)
        transaction.set_rollback(True)
    return result


def _both(monkeypatch: Any, access: Any, documents: list[dict[str, Any]], setup: Any = ()) -> dict[str, Any]:
    one_by_one = _run(monkeypatch, access, list(setup), documents, bulk=False)
    bulk = _run(monkeypatch, access, list(setup), documents, bulk=True)
    assert bulk == one_by_one
    return bulk


def _cookbook() -> list[dict[str, Any]]:
    """Every applyable cookbook document, queues first (the jobs submit to them)."""
    docs = [
        d for p in builders.cookbook_files() if p.name not in FRAGMENTS for d in builders.cookbook_documents(p.name)
    ]
    return sorted(docs, key=lambda d: d.get("kind") != "Queue")


def _jobs(copies: int = 3) -> list[dict[str, Any]]:
    """Copies of every cookbook Job under distinct names, one after the other (one bulk run)."""
    out = []
    for copy_no in range(copies):
        for doc in _cookbook():
            if doc.get("kind") == "Job":
                job = copy.deepcopy(doc)
                job["metadata"]["name"] = f"{job['metadata']['name']}-{copy_no}"
                out.append(job)
    return out


@pytest.fixture
def access(cast: Cast) -> Any:
    return access_for(cast.root)


@pytest.fixture
def queues(cast: Cast) -> None:
    for name in builders.COOKBOOK_JOB_QUEUES:
        builders.make_queue(name, allowed=("team-a",))


def test_the_whole_cookbook_as_one_apply_leaves_the_same_rows(monkeypatch, access, queues) -> None:
    docs = _cookbook() + _jobs()
    got = _both(monkeypatch, access, docs)
    assert {o["action"] for o in got["outcomes"]} == {"created"}
    assert len(got["state"]["jobs"]) == len([d for d in docs if d.get("kind") == "Job"])
    assert len(got["state"]["audit"]) == len(docs)
    assert got["synced"] == sorted(f"team-a/{d['metadata']['name']}" for d in docs if d.get("kind") == "Job")


def test_reapplying_and_changing_jobs_leaves_the_same_rows(monkeypatch, access, queues) -> None:
    jobs = _jobs(2)
    unchanged = _both(monkeypatch, access, jobs, setup=[jobs])
    assert {o["action"] for o in unchanged["outcomes"]} == {"unchanged"}
    assert unchanged["state"]["audit"] == []

    changed = copy.deepcopy(jobs)
    for index, job in enumerate(changed):
        if index % 2:
            job["metadata"].setdefault("labels", {})["bulk"] = "yes"
            job["spec"]["tasks"][0]["replicas"] += 1
    new = copy.deepcopy(jobs[0])
    new["metadata"]["name"] = "a-new-one"
    got = _both(monkeypatch, access, [*changed, new], setup=[jobs])
    assert [o["action"] for o in got["outcomes"]].count("configured") == len(jobs) // 2
    assert got["outcomes"][-1]["action"] == "created"
    assert [row["action"] for row in got["state"]["audit"]].count("update") == len(jobs) // 2


def _broken(index: int, change: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    docs = _jobs(1)
    change(docs[index])
    return docs


BROKEN: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "invalid spec": lambda: _broken(3, lambda d: d["spec"]["tasks"][0].update(replicas=-1)),
    "invalid metadata": lambda: _broken(2, lambda d: d["metadata"].update(name="Not_A_Name")),
    "missing spec": lambda: _broken(1, lambda d: d.pop("spec")),
    "missing queue": lambda: _broken(4, lambda d: d["spec"].update(queue="nowhere")),
    "unknown priority class": lambda: _broken(2, lambda d: d["spec"].update(priorityClassName="nope")),
    "missing namespace": lambda: _broken(1, lambda d: d["metadata"].update(namespace="no-such-ns")),
    "two errors, the first wins": lambda: (
        _broken(5, lambda d: d["spec"].update(queue="nowhere"))[:5]
        + _broken(5, lambda d: d["metadata"].update(namespace="no-such-ns"))[5:]
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_failing_document_fails_the_same_way(monkeypatch, access, queues, case) -> None:
    got = _both(monkeypatch, access, BROKEN[case]())
    assert "error" in got, got
    assert got["error"][2].startswith("document "), got


def test_a_version_conflict_and_a_forbidden_namespace_fail_the_same_way(monkeypatch, cast, queues) -> None:
    jobs = _jobs(1)
    stale = copy.deepcopy(jobs)
    stale[2]["metadata"]["resourceVersion"] = "999"
    got = _both(monkeypatch, access_for(cast.root), stale, setup=[jobs])
    assert got["error"][0] == "Conflict"
    assert got["error"][2].startswith("document 3: ")

    foreign = copy.deepcopy(jobs)
    foreign[4]["metadata"]["namespace"] = "team-b"
    got = _both(monkeypatch, access_for(cast.alice), foreign)
    assert got["error"][0] == "Forbidden"
    assert got["error"][2].startswith("document 5: ")


def test_repeated_names_and_mixed_kinds_leave_the_same_rows(monkeypatch, access, queues) -> None:
    jobs = _jobs(1)
    again = copy.deepcopy(jobs[0])
    again["spec"]["tasks"][0]["replicas"] += 1
    priority = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hi"}, "value": 9}
    with_priority = copy.deepcopy(jobs[1])
    with_priority["metadata"]["name"] = "prio"
    with_priority["spec"]["priorityClassName"] = "hi"
    docs = [*jobs, again, priority, with_priority, *copy.deepcopy(jobs[2:4])]
    for doc in docs[-2:]:
        doc["metadata"]["name"] += "-tail"
    got = _both(monkeypatch, access, docs)
    assert [o["action"] for o in got["outcomes"]][len(jobs)] == "configured"


def test_a_job_named_twice_once_with_the_default_namespace_spelt_out_leaves_the_same_rows(
    monkeypatch, access, queues
) -> None:
    jobs = _jobs(1)[:3]
    explicit = copy.deepcopy(jobs[1])
    explicit["metadata"]["namespace"] = "team-a"  # the default namespace of the apply, named
    explicit["spec"]["tasks"][0]["replicas"] += 1
    got = _both(monkeypatch, access, [*jobs, explicit])
    assert [o["action"] for o in got["outcomes"]] == ["created", "created", "created", "configured"]


def _queries(access: Any, jobs: int) -> int:
    docs = [builders.job_manifest(f"j{i}", queue="ml-training") for i in range(jobs)]
    with CaptureQueriesContext(connection) as ctx, transaction.atomic():
        apply_documents(access, docs, default_namespace="team-a")
        transaction.set_rollback(True)
    return len(ctx.captured_queries)


def test_a_bulk_apply_takes_as_many_queries_for_40_jobs_as_for_5(access, queues) -> None:
    # 40: Django splits SQLite's inserts by its 999-parameter limit, so more jobs take a few more inserts there.
    assert _queries(access, 40) == _queries(access, 5) <= 20


def test_the_controller_is_told_about_a_batch_in_one_call(monkeypatch, cast, queues, client_for) -> None:
    calls: list[list[int]] = []
    monkeypatch.setattr(dispatch, "request_sync", lambda ids, urgent=False: calls.append(sorted(ids)))
    docs = [builders.job_manifest(f"j{i}", queue="ml-training") for i in range(30)]
    client = client_for(cast.alice, "token")
    watching = informer.Informer(cursor=log.head()[0])
    response = post_yaml(client, "/api/v1/apply", builders.to_yaml(*docs))
    assert response.status_code == 200, response.json()
    watching.step()  # the controllers' informer reads the batch from the log
    assert calls == [sorted(Job.objects.values_list("pk", flat=True))]


def test_the_api_names_the_failing_document_of_a_bulk_apply(cast, queues, client_for) -> None:
    docs = [builders.job_manifest(f"j{i}", queue="ml-training") for i in range(30)]
    docs[17]["spec"]["tasks"][0]["replicas"] = -1
    response = post_yaml(client_for(cast.alice, "token"), "/api/v1/apply", builders.to_yaml(*docs))
    body = response.json()
    assert response.status_code in (400, 422), body
    assert body["kind"] == "Status", body
    assert body["message"].startswith('document 18: Job.batch.volcano.sh "j17" is invalid'), body
    assert any(c["field"].startswith("spec.tasks[0]") for c in body["details"]["causes"]), body
    assert not Job.objects.exists()
    assert not AuditEntry.objects.filter(kind="Job").exists()


def test_one_job_is_applied_in_its_own_transaction_without_lookups_of_what_it_creates(access, queues) -> None:
    doc = builders.job_manifest("solo", queue="ml-training", tasks=[builders.task("a"), builders.task("b")])
    with CaptureQueriesContext(connection) as ctx:
        outcomes = apply_documents(access, [doc], default_namespace="team-a")
    assert [o.action for o in outcomes] == ["created"]
    statements = [q["sql"] for q in ctx.captured_queries]
    # The test's own transaction turns the service's transaction into the one savepoint.
    assert sum(s.startswith("SAVEPOINT") for s in statements) == 1, statements
    assert not [s for s in statements if s.startswith("SELECT") and ('"jobs_task"' in s or '"jobs_podgroup"' in s)]
    assert sum(s.startswith('INSERT INTO "jobs_task"') for s in statements) == 1
    assert Task.objects.filter(job__name="solo").count() == 2
    assert PodGroup.objects.filter(job__name="solo").count() == 1
