"""TaskFailed (a task's container restarts exhaust maxRetry) and RestartPartition, on the simulated cluster."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.runtime.harness import World
from volcanoweb.jobs.models import PodGroup
from volcanoweb.runtime.podbuild import PARTITION_ID

pytestmark = pytest.mark.django_db


def restarting_task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    """A task whose pods restart their container in place on failure (restartPolicy OnFailure)."""
    task = builders.task(name, replicas, **extra)
    task["template"]["spec"]["restartPolicy"] = "OnFailure"
    return task


def test_container_restarts_exhausting_max_retry_fire_task_failed(world: World) -> None:
    worker = restarting_task("worker", 2, maxRetry=2, policies=[{"event": "TaskFailed", "action": "AbortJob"}])
    job = world.schedule(world.apply(builders.job_manifest("tf", queue="ml-training", tasks=[worker])))
    world.crash(job, "tf-worker-0", exit_code=1)
    job = world.reload(job)
    pods = world.pods(job)
    assert pods["tf-worker-0"].phase == "Running"  # restarted in place, not failed
    assert pods["tf-worker-0"].status["restartCount"] == 1
    assert job.phase == "Running"  # one restart of the task's budget of two: nothing happens
    world.crash(job, "tf-worker-1", exit_code=1)  # Σ restarts over the task's live pods = 2 = maxRetry
    job = world.reload(job)
    assert job.phase in ("Aborting", "Aborted")
    world.advance(1)
    assert world.reload(job).phase == "Aborted"
    assert world.sim.list_pods() == []


def test_restarts_of_another_task_do_not_count(world: World) -> None:
    policy = [{"event": "TaskFailed", "action": "AbortJob"}]
    tasks = [restarting_task("ps", 1, maxRetry=1, policies=policy), restarting_task("worker", 2, maxRetry=3)]
    job = world.schedule(world.apply(builders.job_manifest("tf2", queue="ml-training", tasks=tasks)))
    world.crash(job, "tf2-worker-0")
    world.crash(job, "tf2-worker-1")
    assert world.reload(job).phase == "Running"  # worker: 2 of 3; ps untouched
    world.crash(job, "tf2-ps-0")  # ps: 1 of 1
    assert world.reload(job).phase in ("Aborting", "Aborted")


def test_restart_partition_kills_only_the_failed_pods_partition(world: World) -> None:
    worker = builders.task(
        "worker",
        4,
        partitionPolicy={"totalPartitions": 2, "partitionSize": 2},
        policies=[{"event": "PodFailed", "action": "RestartPartition"}],
    )
    job = world.schedule(world.apply(builders.job_manifest("part", queue="ml-training", tasks=[worker])))
    before = world.pods(job)
    assert {name: pod.labels[PARTITION_ID] for name, pod in before.items()} == {
        "part-worker-0": "0",
        "part-worker-1": "0",
        "part-worker-2": "1",
        "part-worker-3": "1",
    }
    world.fail(job, "part-worker-3", exit_code=1)
    job = world.reload(job)
    assert job.status["retryCount"] == 1
    assert PodGroup.objects.filter(job=job).exists()  # KillTarget keeps the PodGroup
    after = world.pods(job)
    assert after["part-worker-0"].uid == before["part-worker-0"].uid
    assert after["part-worker-1"].uid == before["part-worker-1"].uid
    assert after["part-worker-2"].uid != before["part-worker-2"].uid  # the other pod of partition 1
    assert after["part-worker-3"].uid != before["part-worker-3"].uid
    world.bind(job)
    assert world.reload(job).phase == "Running"
