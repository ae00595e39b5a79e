"""Volcano's job state machine end to end on the simulator (docs/controllers.md, "Job controller")."""

from __future__ import annotations

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.runtime.harness import World
from volcanoweb.jobs.models import Event, Pod, PodGroup

pytestmark = pytest.mark.django_db


def master_worker(name: str = "mw", **spec: object) -> dict:
    tasks = [builders.task("master", 1), builders.task("worker", 2)]
    return builders.job_manifest(name, queue="ml-training", tasks=tasks, **spec)


def test_no_pods_until_the_podgroup_is_admitted(world: World) -> None:
    job = world.apply(master_worker())
    assert job.phase == "Pending"
    assert Pod.objects.filter(job=job).count() == 0
    podgroup = PodGroup.objects.get(job=job)
    assert podgroup.name == f"mw-{job.uid}"
    assert (podgroup.min_member, podgroup.min_task_member) == (3, {"master": 1, "worker": 2})
    assert podgroup.min_resources == {"cpu": "3", "memory": "3Gi"}
    world.admit(job)
    assert sorted(world.pods(job)) == ["mw-master-0", "mw-worker-0", "mw-worker-1"]
    assert world.reload(job).status["pending"] == 3


def test_pods_carry_volcano_names_labels_and_annotations(world: World) -> None:
    job = world.apply(master_worker())
    world.admit(job)
    pod = world.pods(job)["mw-worker-1"]
    assert pod.labels["volcano.sh/job-name"] == "mw"
    assert pod.labels["volcano.sh/task-spec"] == "worker"
    assert pod.labels["volcano.sh/task-index"] == "1"
    assert pod.labels["volcano.sh/job-namespace"] == "team-a"
    assert pod.annotations["volcano.sh/job-version"] == "0"
    assert pod.annotations["volcano.sh/job-retry-count"] == "0"
    assert pod.annotations["volcano.sh/template-uid"] == "mw-worker"
    assert pod.annotations["scheduling.k8s.io/group-name"] == f"mw-{job.uid}"
    assert pod.annotations["volcano.sh/queue-name"] == "ml-training"
    assert pod.owner_references[0]["uid"] == str(job.uid)
    assert pod.spec["schedulerName"] == "volcano"
    assert pod.requests == {"cpu": 1000, "memory": 1024**3}
    in_sim = world.sim.get_pod("team-a", "mw-worker-1")
    assert in_sim.group_name == f"mw-{job.uid}"
    assert in_sim.owner.uid == str(job.uid)


def test_a7_running_then_failed_when_a_task_misses_its_min_available(world: World) -> None:
    job = world.schedule(world.apply(master_worker()))
    assert job.phase == "Running"
    assert job.status["running"] == 3
    world.fail(job, "mw-worker-1")
    job = world.reload(job)
    assert (job.phase, job.status["running"], job.status["failed"]) == ("Running", 2, 1)
    world.advance(60)
    job = world.reload(job)
    assert job.phase == "Failed"
    assert job.status["taskStatusCount"]["worker"]["phase"] == {"Succeeded": 1, "Failed": 1}
    assert [c["status"] for c in job.status["conditions"]][-1] == "Failed"


def test_a7_completed_when_every_pod_succeeds(world: World) -> None:
    job = world.schedule(world.apply(master_worker()))
    world.advance(60)
    job = world.reload(job)
    assert job.phase == "Completed"
    assert job.status["succeeded"] == 3
    assert not PodGroup.objects.filter(job=job).exists()  # the finished-state kill drops the PodGroup


def test_a8_restart_job_until_max_retry(world: World) -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    job = world.schedule(world.apply(master_worker(policies=policies)))
    world.fail(job, "mw-worker-0")
    job = world.reload(job)
    assert (job.phase, job.status["retryCount"], job.status["version"]) == ("Restarting", 1, 1)
    assert not Pod.objects.filter(job=job).exists()
    assert not PodGroup.objects.filter(job=job).exclude(phase="Pending").exists()
    assert Event.objects.filter(involved_name="mw", reason="ExecuteAction").exists()
    job = world.schedule(job)
    assert job.phase == "Running"
    assert world.pods(job)["mw-worker-0"].annotations["volcano.sh/job-version"] == "1"
    assert world.pods(job)["mw-worker-0"].annotations["volcano.sh/job-retry-count"] == "1"
    world.fail(job, "mw-master-0")
    job = world.schedule(world.reload(job))
    assert (job.phase, job.status["retryCount"]) == ("Running", 2)
    world.fail(job, "mw-worker-1")  # last retry: the failed pod is kept for inspection
    job = world.reload(job)
    assert (job.phase, job.status["retryCount"]) == ("Failed", 3)
    assert world.phases(job) == {"mw-worker-1": "Failed"}


def test_elastic_job_goes_back_to_pending_when_the_gang_breaks(world: World) -> None:
    tasks = [builders.task("worker", 4, minAvailable=2)]
    job = world.apply(builders.job_manifest("elastic", queue="ml-training", tasks=tasks))
    world.admit(job)
    world.bind(job, ["elastic-worker-0", "elastic-worker-1"])
    job = world.reload(job)
    assert (job.phase, job.status["running"], job.status["pending"]) == ("Running", 2, 2)
    world.evict(job, "elastic-worker-0")  # no policy: the pod is recreated, 3 pending > 4 - 2
    job = world.reload(job)
    assert (job.phase, job.status["pending"]) == ("Pending", 3)


def timed(name: str, replicas: int, seconds: int, exit_code: int = 0, **extra: object) -> dict:
    """A task whose pods run ``seconds`` in the simulator and end with ``exit_code``."""
    entry = builders.task(name, replicas, **extra)
    annotations = {"sim.volcanoweb.io/duration": f"{seconds}s", "sim.volcanoweb.io/exit-code": str(exit_code)}
    entry["template"]["metadata"] = {"annotations": annotations}
    return entry


def test_min_success_completes_the_job_and_kills_the_rest(world: World) -> None:
    tasks = [timed("fast", 2, 10), timed("slow", 1, 1000)]
    job = world.schedule(world.apply(builders.job_manifest("ms", queue="ml-training", tasks=tasks, minSuccess=2)))
    world.advance(10)
    job = world.reload(job)
    assert job.phase == "Completed"
    world.mirror()
    assert world.phases(job) == {"ms-fast-0": "Succeeded", "ms-fast-1": "Succeeded"}
    assert "ms-slow-0" not in {p.name for p in world.sim.list_pods()}


def test_min_success_not_reached_fails(world: World) -> None:
    doc = builders.job_manifest("ms2", queue="ml-training", tasks=[builders.task("worker", 2)], minSuccess=2)
    job = world.schedule(world.apply(doc))
    world.fail(job, "ms2-worker-0")
    world.advance(60)
    assert world.reload(job).phase == "Failed"


def test_ttl_after_finished_runs_on_a_fast_simulated_clock(db) -> None:
    """On a sim whose clock runs 600x, the cookbook's 1-hour TTL expires after 6 wall seconds."""
    from datetime import UTC, datetime, timedelta

    from tests.volcanoweb.clusters.helpers import make_sim
    from volcanoweb.runtime import services as runtime_services

    sim, _ = make_sim()
    sim.speed = 600.0
    job = builders.make_job(builders.make_tenant("team-a").namespaces.first().name, ttlSecondsAfterFinished=3600)
    finished = datetime(2026, 1, 1, tzinfo=UTC)
    job.phase = "Completed"
    job.status = {**job.status, "state": {"phase": "Completed", "lastTransitionTime": "2026-01-01T00:00:00Z"}}
    job.save(update_fields=["phase", "status"])
    assert runtime_services.cluster_speed(sim) == 600.0
    assert runtime_services.gc_finished_jobs(now=finished + timedelta(seconds=5), backend=sim) == []
    assert runtime_services.gc_finished_jobs(now=finished + timedelta(seconds=7), backend=sim) == ["team-a/train"]
