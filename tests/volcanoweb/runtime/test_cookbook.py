"""The cookbook jobs 01, 02, 03, 07, 08, 09 and 10 run to their documented end states on the simulator."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.volcanoweb import builders
from tests.volcanoweb.runtime.harness import World
from volcanoweb.jobs.models import Job, Pod
from volcanoweb.runtime import services

pytestmark = pytest.mark.django_db
DURATION = "sim.volcanoweb.io/duration"


def with_task_duration(filename: str, task: str, seconds: int) -> dict:
    """A cookbook job whose ``task`` pods run ``seconds`` in the simulator (others: the default 60 s)."""
    doc = builders.cookbook_documents(filename)[0]
    for entry in doc["spec"]["tasks"]:
        if entry["name"] == task:
            entry["template"].setdefault("metadata", {}).setdefault("annotations", {})[DURATION] = f"{seconds}s"
    return doc


def test_01_pytorch_gang_restarts_when_a_worker_is_evicted(world: World) -> None:
    job = world.schedule(world.cookbook("01-pytorch-distributed.yaml"))
    assert (job.phase, job.status["running"]) == ("Running", 4)
    world.evict(job, "pytorch-distributed-worker-2")
    job = world.reload(job)
    assert (job.phase, job.status["retryCount"]) == ("Restarting", 1)
    job = world.schedule(job)
    assert (job.phase, job.status["running"]) == ("Running", 4)
    world.advance(60)
    assert world.reload(job).phase == "Completed"


def test_02_tensorflow_ps_completes_when_its_workers_complete(world: World) -> None:
    job = world.schedule(world.apply(with_task_duration("02-tensorflow-ps.yaml", "worker", 30)))
    assert job.phase == "Running"
    world.advance(30)
    job = world.reload(job)
    assert job.phase == "Completed"
    assert job.status["succeeded"] == 4
    assert "tensorflow-ps-ps-0" not in {p.name for p in world.sim.list_pods()}


def test_03_horovod_master_completion_completes_the_job(world: World) -> None:
    job = world.schedule(world.apply(with_task_duration("03-horovod-mpi.yaml", "mpimaster", 20)))
    data = world.sim.config_maps[("team-a", "horovod-job-svc")]["data"]
    assert data["mpiworker.host"] == "\n".join(f"horovod-job-mpiworker-{i}.horovod-job" for i in range(4))
    world.advance(20)
    job = world.reload(job)
    assert job.phase == "Completed"
    remaining = [(p.name, p.phase) for p in world.sim.list_pods()]
    assert remaining == [("horovod-job-mpimaster-0", "Succeeded")]  # the workers (sshd -D) were killed


def test_07_ci_build_batch_is_deleted_after_its_ttl(world: World) -> None:
    job = world.schedule(world.cookbook("07-ci-build-batch.yaml"))
    world.advance(60)
    job = world.reload(job)
    assert job.phase == "Completed"
    finished = timezone.now()
    assert services.gc_finished_jobs(now=finished + timedelta(seconds=3500)) == []
    assert services.gc_finished_jobs(now=finished + timedelta(seconds=3700)) == ["team-a/ci-build-batch"]
    assert not Job.objects.filter(pk=job.pk).exists()
    assert not Pod.objects.filter(namespace="team-a", name__startswith="ci-build-batch").exists()
    assert world.sim.list_pods() == []


def test_07_retained_finished_pods_are_removed_from_the_cluster_with_the_job(world: World) -> None:
    job = world.schedule(world.cookbook("07-ci-build-batch.yaml"))
    world.advance(60)
    assert len(world.sim.list_pods()) == 10  # Succeeded pods stay until the job goes
    services.gc_finished_jobs(now=timezone.now() + timedelta(hours=2))
    assert world.sim.list_pods() == []
    assert not Job.objects.filter(pk=job.pk).exists()


def test_08_ci_pipeline_runs_lint_then_unit_test_then_build_image(world: World) -> None:
    job = world.cookbook("08-ci-pipeline.yaml")
    world.admit(job)
    assert sorted(world.pods(job)) == ["ci-pipeline-lint-0"]
    world.bind(job)  # lint running and ready
    assert sorted(world.pods(job)) == ["ci-pipeline-lint-0", *(f"ci-pipeline-unit-test-{i}" for i in range(3))]
    world.bind(job, ["ci-pipeline-unit-test-0", "ci-pipeline-unit-test-1"])
    assert "ci-pipeline-build-image-0" not in world.pods(job)  # 2 of 3 ready < minAvailable 3
    world.bind(job)
    assert "ci-pipeline-build-image-0" in world.pods(job)
    world.bind(job)
    world.advance(60)
    job = world.reload(job)
    assert job.phase == "Completed"
    created = {p.name: p.created_at for p in world.sim.list_pods()}
    assert created["ci-pipeline-lint-0"] <= created["ci-pipeline-unit-test-0"] <= created["ci-pipeline-build-image-0"]


def test_09_genome_exit_code_137_restarts_the_job(world: World) -> None:
    job = world.schedule(world.cookbook("09-genome-analysis.yaml"))
    assert job.phase == "Running"
    world.fail(job, "genome-analysis-compute-3", exit_code=137)
    job = world.reload(job)
    assert (job.phase, job.status["retryCount"]) == ("Restarting", 1)
    job = world.schedule(job)
    assert (job.phase, job.status["retryCount"]) == ("Running", 1)
    world.advance(60)
    assert world.reload(job).phase == "Completed"


def test_09_genome_other_exit_codes_do_not_restart(world: World) -> None:
    job = world.schedule(world.cookbook("09-genome-analysis.yaml"))
    world.fail(job, "genome-analysis-compute-3", exit_code=1)
    job = world.reload(job)
    assert (job.phase, job.status["retryCount"]) == ("Running", 0)


def test_10_weather_simulation_hosts_and_master_completion(world: World) -> None:
    job = world.schedule(world.apply(with_task_duration("10-weather-simulation-mpi.yaml", "master", 30)))
    assert job.status["running"] == 16
    data = world.sim.config_maps[("team-a", "weather-simulation-svc")]["data"]
    assert data["worker.host"].split("\n") == [f"weather-simulation-worker-{i}.weather-simulation" for i in range(15)]
    assert data["VC_WORKER_NUM"] == "15"
    world.advance(30)
    assert world.reload(job).phase == "Completed"


def test_09_exit_code_137_restarts_even_when_the_other_pods_finish_in_the_same_batch(world: World) -> None:
    """Seen on the stack: pod 3 is killed (137) and the 7 others succeed before one mirror pass.

    The job must restart (Volcano handles pod 3's PodFailed event first), not fail on a sync of
    the batch's final counts run ahead of the policy action.
    """
    job = world.schedule(world.cookbook("09-genome-analysis.yaml"))
    world.sim.advance(59)
    world.sim.fail_pod(job.namespace, "genome-analysis-compute-3", 137)
    world.sim.advance(1)  # the 7 others succeed
    world.mirror()
    job = world.reload(job)
    assert (job.phase, job.status["retryCount"]) == ("Restarting", 1)
