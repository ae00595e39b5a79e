"""The controllers' informer: which log entries ask the controllers for what (a table), and the informer reading
the log end to end: every writer is seen, its own echo is not a request, a compacted cursor relists."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.feed import log
from volcanoweb.feed.log import Change
from volcanoweb.feed.models import FeedHead
from volcanoweb.jobs.models import Job, Pod, PodGroup
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.runtime import dispatch, informer
from volcanoweb.runtime.informer import Reactions, reactions

JOB = {"id": 7, "phase": "Pending", "status": {}, "generation": 1, "spec": {"minAvailable": 1}}
POD = {"id": 3, "job_id": 7, "phase": "Pending", "node_name": "", "exit_code": None, "status": {}}
QUEUE = {"id": 4, "weight": 1, "state": "Open"}


def change(kind: str, kind_of_change: str, data: dict[str, Any], prev: dict[str, Any] | None = None) -> Change:
    return Change(1, kind, int(data["id"]), kind_of_change, "ns", "n", "u-1", data, prev)


def modified(kind: str, before: dict[str, Any], **after: Any) -> list[Change]:
    return [change(kind, "M", {**before, **after}, before)]


def group(phase: str, before: str, **more: Any) -> list[Change]:
    return modified("podgroups", {"id": 2, "job_id": 7, "phase": before}, phase=phase, **more)


GONE = {7: "u-1"}
BARE = {**POD, "job_id": None, "scheduler_name": "volcano", "group_name": ""}
CASES = [
    ("a job created: its pods at once", [change("jobs", "A", JOB)], Reactions(urgent={7})),
    ("its controller's status write: no request", modified("jobs", JOB, phase="Running"), Reactions()),
    ("a person's change", modified("jobs", JOB, generation=2, spec={"minAvailable": 2}), Reactions(jobs={7})),
    ("a job deleted", [change("jobs", "D", JOB)], Reactions(deleted=GONE)),
    (
        "created, deleted: the clean-up",
        [change("jobs", "A", JOB), change("jobs", "D", JOB)],
        Reactions(deleted={7: "u-1"}),
    ),
    (
        "a command for a job",
        [change("commands", "A", {"id": 1, "target_kind": "Job", "job_id": 7})],
        Reactions(jobs={7}),
    ),
    ("a command for a queue", [change("commands", "A", {"id": 1, "target_kind": "Queue"})], Reactions(queues=True)),
    ("a gang admitted", group("Inqueue", "Pending"), Reactions(urgent={7})),
    ("a gang running", group("Running", "Inqueue"), Reactions(jobs={7})),
    ("a PodGroup's conditions only", group("Pending", "Pending", status={"c": 1}), Reactions()),
    (
        "a PodGroup gone: its queue may close",
        [change("podgroups", "D", {"id": 2, "job_id": 7})],
        Reactions(queues=True),
    ),
    ("a pod the controller created: its own echo", [change("pods", "A", POD)], Reactions()),
    ("a pod bound: the controller reads no node", modified("pods", POD, node_name="n1"), Reactions()),
    ("a pod running", modified("pods", POD, phase="Running"), Reactions(jobs={7})),
    ("a pod restarted", modified("pods", POD, status={"restartCount": 1}), Reactions(jobs={7})),
    ("a pod gone", [change("pods", "D", POD)], Reactions(jobs={7})),
    ("a bare Volcano pod", [change("pods", "A", BARE)], Reactions(bare_pods=True)),
    ("another scheduler's bare pod", [change("pods", "A", {**BARE, "scheduler_name": "default"})], Reactions()),
    ("a queue created", [change("queues", "A", QUEUE)], Reactions(queues=True)),
    ("a queue's weight changed", modified("queues", QUEUE, weight=2), Reactions(queues=True)),
    ("the queue controller's state write", modified("queues", QUEUE, state="Closed"), Reactions()),
    ("a node: not the controllers'", modified("nodes", {"id": 5, "ready": True}, ready=False), Reactions()),
]


@pytest.mark.parametrize(("changes", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_what_each_change_asks_of_the_controllers(changes: list[Change], expected: Reactions) -> None:
    assert reactions(changes) == expected


@pytest.mark.django_db(transaction=True)
def test_the_informer_reads_every_writer_and_relists_past_the_compaction_point(
    cast: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ensure_builtin_queues()
    asked: list[tuple[str, tuple[Any, ...]]] = []
    monkeypatch.setattr(dispatch, "queue_task", lambda task, *args: asked.append((task, args)))
    monkeypatch.setattr(dispatch, "request_sync", lambda ids, urgent=False: asked.append(("sync", (list(ids), urgent))))
    watching = informer.Informer()
    assert not watching.step()  # a first step starts from the present and relists (a resync)
    assert asked == [(dispatch.RESYNC_TASK, ())]
    asked.clear()

    job = builders.make_job("team-a", "seen")  # a service write
    pod = Pod.objects.create(namespace="team-a", name="bare", scheduler_name="volcano", tenant=job.tenant)
    PodGroup.objects.filter(job=job).update(phase="Inqueue")  # raw SQL through the ORM: still in the log
    watching.step()
    assert ("sync", ([job.pk], True)) in asked
    assert (dispatch.GROUP_BARE_PODS_TASK, ()) in asked

    asked.clear()
    Job.objects.filter(pk=job.pk).update(phase="Running")  # the controller's own status: no request
    assert not watching.step()
    assert asked == []
    Job.objects.filter(pk=job.pk).update(labels={"team": "vision"})  # a person's change: reconcile
    assert watching.step().jobs == {job.pk}
    asked.clear()

    Pod.objects.filter(pk=pod.pk).delete()
    FeedHead.objects.filter(id=1).update(compacted=log.head(wait=True)[0])  # the log no longer reaches back
    watching.step()
    assert asked == [(dispatch.RESYNC_TASK, ())]  # what it missed, a resync finds
