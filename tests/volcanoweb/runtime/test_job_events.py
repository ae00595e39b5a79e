"""A finished job tells its story in events (issue 29, item 4): pod exits (exit code, reason, restarts), the
lifecycle policy that fired and what it did, and the final phase change."""

from __future__ import annotations

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.runtime.harness import World
from volcanoweb.jobs.models import Event

pytestmark = pytest.mark.django_db


def _events(name: str) -> list[tuple[str, str, str]]:
    return [
        (e.type, e.reason, e.message)
        for e in Event.objects.filter(involved_kind="Job", involved_name=name).order_by("first_timestamp", "pk")
    ]


def test_a_pod_that_exits_1_and_fails_the_job_leaves_events(world: World) -> None:
    job = world.schedule(world.apply(builders.job_manifest("one", queue="ml-training", tasks=[builders.task("w", 1)])))
    world.fail(job, "one-w-0", exit_code=1)
    world.advance(5)
    job = world.reload(job)
    assert job.phase == "Failed"
    events = _events("one")
    assert ("Warning", "PodFailed", "pod one-w-0 of task w exited with code 1, 0 restarts") in [
        (t, r, m.replace(" (Error)", "")) for t, r, m in events
    ]
    final = [e for e in events if e[1] == "JobFailed"]
    assert len(final) == 1
    assert final[0][0] == "Warning"
    assert final[0][2].startswith("job Running → Failed: 1 failed; retries 0 of ")


def test_the_policy_that_fired_is_named_with_what_it_did(world: World) -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    manifest = builders.job_manifest("pol", queue="ml-training", tasks=[builders.task("w", 2)], policies=policies)
    job = world.schedule(world.apply(manifest))
    world.fail(job, "pol-w-1", exit_code=3)
    messages = [m for _t, r, m in _events("pol") if r == "ExecuteAction"]
    assert "Start to execute action RestartJob (job policy (event PodFailed) on pod pol-w-1)" in messages
    assert any(
        m.startswith("pod pol-w-1 of task w exited with code 3") for _t, r, m in _events("pol") if r == "PodFailed"
    )


def test_a_task_policy_on_an_exit_code_is_named(world: World) -> None:
    task = builders.task("w", 1, policies=[{"exitCode": 7, "action": "AbortJob"}])
    job = world.schedule(world.apply(builders.job_manifest("code", queue="ml-training", tasks=[task])))
    world.fail(job, "code-w-0", exit_code=7)
    messages = [m for _t, r, m in _events("code") if r == "ExecuteAction"]
    assert "Start to execute action AbortJob (policy of task w (exitCode 7) on pod code-w-0)" in messages
    world.advance(5)
    assert world.reload(job).phase == "Aborted"
    assert [r for _t, r, _m in _events("code") if r.startswith("Job")] == ["JobAborted"]


def test_a_completed_job_records_its_completion(world: World) -> None:
    job = world.schedule(world.apply(builders.job_manifest("ok", queue="ml-training", tasks=[builders.task("w", 2)])))
    world.advance(60)
    assert world.reload(job).phase == "Completed"
    final = [(t, m) for t, r, m in _events("ok") if r == "JobCompleted"]
    assert final == [("Normal", "job Running → Completed: 2 succeeded; retries 0 of 3")]
