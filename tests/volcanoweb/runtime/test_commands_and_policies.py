"""User commands and lifecycle policies: events, actions, exit codes, ``*``, precedence, timeouts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.volcanoweb import builders
from tests.volcanoweb.runtime.harness import World
from volcanoweb.jobs.models import Command, PodGroup
from volcanoweb.runtime import policies as P
from volcanoweb.runtime import services

pytestmark = pytest.mark.django_db


def two_tasks(name: str = "pj", *, task_policies: list | None = None, **spec: object) -> dict:
    worker = builders.task("worker", 2)
    if task_policies is not None:
        worker["policies"] = task_policies
    return builders.job_manifest(name, queue="ml-training", tasks=[builders.task("ps", 1), worker], **spec)


def test_abort_then_resume(world: World) -> None:
    job = world.schedule(world.apply(two_tasks()))
    command = world.command(job, "abort")
    job = world.reload(job)
    assert job.phase == "Aborted"
    assert world.sim.list_pods() == []
    command.refresh_from_db()
    assert command.consumed_at is not None
    assert command.result == "executed AbortJob"
    world.command(job, "resume")
    job = world.reload(job)
    assert (job.phase, job.status["retryCount"]) == ("Pending", 1)
    job = world.schedule(job)
    assert job.phase == "Running"


def test_commands_are_consumed_once(world: World) -> None:
    job = world.schedule(world.apply(two_tasks()))
    world.command(job, "restart")
    services.sync_job(job.pk)
    services.sync_job(job.pk)
    job = world.reload(job)
    assert job.status["retryCount"] == 1
    assert Command.objects.filter(job=job, consumed_at__isnull=True).count() == 0


@pytest.mark.parametrize(
    ("action", "final"),
    [("terminate", "Terminated"), ("complete", "Completed"), ("restart", "Restarting")],
)
def test_job_commands(world: World, action: str, final: str) -> None:
    job = world.schedule(world.apply(two_tasks()))
    world.command(job, action)
    job = world.reload(job)
    assert job.phase == final
    if action == "restart":
        assert job.status["retryCount"] == 1


def test_restarting_job_cannot_be_aborted_until_back_in_pending(world: World) -> None:
    job = world.schedule(world.apply(two_tasks(maxRetry=5)))
    world.command(job, "restart")
    assert world.reload(job).phase == "Restarting"
    world.command(job, "abort")  # KillJob(None) with the R-rule: the pods are gone, so back to Pending, not Aborted
    assert world.reload(job).phase == "Pending"


def test_task_policy_restart_task_keeps_the_podgroup(world: World) -> None:
    job = world.schedule(world.apply(two_tasks(task_policies=[{"event": "PodFailed", "action": "RestartTask"}])))
    old_ps = world.pods(job)["pj-ps-0"].uid
    world.fail(job, "pj-worker-0")
    job = world.reload(job)
    assert job.status["retryCount"] == 1
    assert job.status["version"] == 0
    assert PodGroup.objects.filter(job=job).exists()
    assert world.pods(job)["pj-ps-0"].uid == old_ps
    assert set(world.pods(job)) == {"pj-ps-0", "pj-worker-0", "pj-worker-1"}
    assert job.phase == "Pending"
    world.bind(job)
    assert world.reload(job).phase == "Running"


def test_restart_pod_kills_only_that_pod(world: World) -> None:
    job = world.schedule(world.apply(two_tasks(policies=[{"event": "PodFailed", "action": "RestartPod"}])))
    before = {name: pod.uid for name, pod in world.pods(job).items()}
    world.fail(job, "pj-worker-1")
    after = {name: pod.uid for name, pod in world.pods(job).items()}
    assert after["pj-worker-0"] == before["pj-worker-0"]
    assert after["pj-worker-1"] != before["pj-worker-1"]
    assert world.reload(job).status["retryCount"] == 1


def test_task_policy_wins_over_job_policy(world: World) -> None:
    doc = two_tasks(
        task_policies=[{"event": "PodFailed", "action": "AbortJob"}],
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
    )
    job = world.schedule(world.apply(doc))
    world.fail(job, "pj-worker-0")
    assert world.reload(job).phase == "Aborted"
    job = world.apply(
        two_tasks(
            "other",
            task_policies=[{"event": "PodFailed", "action": "AbortJob"}],
            policies=[{"event": "PodFailed", "action": "RestartJob"}],
        )
    )
    job = world.schedule(job)
    world.fail(job, "other-ps-0")  # ps has no task policy: the job policy applies
    assert world.reload(job).phase == "Restarting"


def test_exit_code_policy_matches_only_its_code(world: World) -> None:
    job = world.schedule(world.apply(two_tasks(policies=[{"exitCode": 3, "action": "TerminateJob"}])))
    world.fail(job, "pj-worker-0", exit_code=1)
    assert world.reload(job).phase == "Running"
    world.fail(job, "pj-worker-1", exit_code=3)
    assert world.reload(job).phase == "Terminated"


def test_wildcard_policy_matches_pod_evicted(world: World) -> None:
    job = world.schedule(world.apply(two_tasks(policies=[{"event": "*", "action": "TerminateJob"}])))
    world.evict(job, "pj-ps-0")
    assert world.reload(job).phase == "Terminated"


def test_no_policy_failed_pod_restarts_nothing(world: World) -> None:
    job = world.schedule(world.apply(two_tasks()))
    world.fail(job, "pj-ps-0", exit_code=137)
    job = world.reload(job)
    assert (job.phase, job.status["retryCount"], job.status["failed"]) == ("Running", 0, 1)


def test_task_completed_with_complete_job(world: World) -> None:
    doc = two_tasks(task_policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])
    doc["spec"]["tasks"][1]["template"]["metadata"] = {"annotations": {"sim.volcanoweb.io/duration": "10s"}}
    job = world.schedule(world.apply(doc))
    world.advance(10)
    job = world.reload(job)
    assert job.phase == "Completed"
    assert [p.name for p in world.sim.list_pods()] == ["pj-worker-0", "pj-worker-1"]  # ps killed, workers kept


def test_unknown_podgroup_phase_fires_the_unknown_event(world: World) -> None:
    job = world.schedule(world.apply(two_tasks(policies=[{"event": "Unknown", "action": "AbortJob"}])))
    PodGroup.objects.filter(job=job).update(phase="Unknown")
    services.on_podgroups_changed([job.pk])
    assert world.reload(job).phase == "Aborted"


def test_pod_pending_policy_fires_after_its_timeout(world: World) -> None:
    policies = [{"event": "PodPending", "action": "AbortJob", "timeout": "60s"}]
    job = world.apply(two_tasks(policies=policies))
    world.admit(job)
    assert world.reload(job).phase == "Pending"
    services.resync_controllers(now=timezone.now() + timedelta(seconds=61))
    assert world.reload(job).phase == "Aborted"


def test_pod_pending_timer_is_cancelled_when_the_pod_runs(world: World) -> None:
    policies = [{"event": "PodPending", "action": "AbortJob", "timeout": "60s"}]
    job = world.schedule(world.apply(two_tasks(policies=policies)))
    services.resync_controllers(now=timezone.now() + timedelta(seconds=61))
    assert world.reload(job).phase == "Running"


def test_stale_pod_events_of_an_older_version_only_sync() -> None:
    spec = {"policies": [{"event": "PodFailed", "action": "RestartJob"}], "tasks": []}
    old = P.Request(event="PodFailed", job_version=0, pod_name="x")
    assert P.resolve(spec, 1, "uid", old) == ("SyncJob", 0.0)
    assert P.resolve(spec, 0, "uid", old) == ("RestartJob", 0.0)
    other_uid = P.Request(event="PodFailed", job_uid="other")
    assert P.resolve(spec, 0, "uid", other_uid) == ("SyncJob", 0.0)


def test_resolution_rules() -> None:
    spec = {
        "policies": [{"event": "*", "action": "AbortJob"}],
        "tasks": [
            {
                "name": "t",
                "policies": [
                    {"exitCode": 137, "action": "RestartTask"},
                    {"events": ["PodPending"], "action": "RestartPod"},
                ],
            }
        ],
    }
    assert P.resolve(spec, 0, "", P.Request(event="PodFailed", exit_code=137, task_name="t")) == ("RestartTask", 0)
    assert P.resolve(spec, 0, "", P.Request(event="PodFailed", exit_code=1, task_name="t")) == ("AbortJob", 0)
    assert P.resolve(spec, 0, "", P.Request(event="PodPending", task_name="t")) == ("SyncJob", 0)  # no timeout
    assert P.resolve(spec, 0, "", P.Request(event="OutOfSync")) == ("SyncJob", 0)
    assert P.resolve(spec, 0, "", P.Request(event="PodRunning")) == ("SyncJob", 0)
    assert P.resolve(spec, 0, "", P.Request(event="CommandIssued", action="ResumeJob")) == ("ResumeJob", 0)
    assert P.timeout_seconds({"timeout": "1m30s"}) == 90.0
    assert P.timeout_seconds({}) == 0.0
    with pytest.raises(ValueError, match="invalid duration"):
        P.timeout_seconds({"timeout": "soon"})  # admission refuses it; never a silent 0
