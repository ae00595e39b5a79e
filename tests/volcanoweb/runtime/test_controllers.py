"""Queue controller, PodGroups for bare pods, minResources, deletion and the post-commit hook."""

from __future__ import annotations

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.runtime.harness import NAMESPACE, World
from volcanoweb.feed import log
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Command, Job, Pod, PodGroup
from volcanoweb.queues import services as queue_services
from volcanoweb.queues.models import Queue
from volcanoweb.runtime import informer, services
from volcanoweb.runtime.controllers.podgroup import min_resources
from volcanoweb.runtime.models import JobRecord
from volcanoweb.tenancy.access import SYSTEM

pytestmark = pytest.mark.django_db


def test_queue_closing_until_its_podgroups_are_gone(world: World) -> None:
    job = world.schedule(world.apply(builders.job_manifest("q", queue="hpc", tasks=[builders.task("w", 1)])))
    queue_services.close_queue(SYSTEM, "hpc")
    assert services.sync_queues(["hpc"]) == {"hpc": "Closing"}
    assert Queue.objects.get(name="hpc").running == 1
    world.advance(60)  # the job completes; the finished-state kill drops its PodGroup
    assert world.reload(job).phase == "Completed"
    assert services.sync_queues(["hpc"]) == {"hpc": "Closed"}
    queue = Queue.objects.get(name="hpc")
    assert (queue.state, queue.running, queue.pending) == ("Closed", 0, 0)


def test_queue_commands_and_children_closed_by_parent(world: World) -> None:
    builders.make_queue("parent")
    builders.make_queue("child", parent="parent")
    Command.objects.create(action="CloseQueue", target_kind="Queue", target_name="parent")
    states = services.sync_queues()
    assert (states["parent"], states["child"]) == ("Closed", "Closed")
    assert Queue.objects.get(name="child").annotations["volcano.sh/closed-by-parent"] == "true"
    Command.objects.create(action="OpenQueue", target_kind="Queue", target_name="parent")
    states = services.sync_queues()
    assert (states["parent"], states["child"]) == ("Open", "Open")
    assert not Command.objects.filter(consumed_at__isnull=True).exists()


def test_bare_volcano_pod_gets_its_podgroup(world: World) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "solo", "annotations": {"scheduling.volcano.sh/queue-name": "ml-training"}},
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
        },
    }
    job_services.apply_pod(SYSTEM, doc, NAMESPACE)
    assert services.group_bare_pods() == 1
    pod = Pod.objects.get(name="solo")
    podgroup = PodGroup.objects.get(name=f"podgroup-{pod.uid}")
    assert pod.group_name == podgroup.name
    assert pod.podgroup == podgroup
    assert pod.annotations["scheduling.k8s.io/group-name"] == podgroup.name
    assert (podgroup.min_member, podgroup.queue_name, podgroup.min_resources) == (
        1,
        "ml-training",
        {"cpu": "2", "memory": "1Gi"},
    )
    assert services.group_bare_pods() == 0


def test_min_resources_follows_volcano() -> None:
    def t(name: str, replicas: int, cpu: int, min_available: int | None = None, pc: str = "") -> dict:
        spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}
        if pc:
            spec["priorityClassName"] = pc
        entry = {"name": name, "replicas": replicas, "template": {"spec": spec}}
        if min_available is not None:
            entry["minAvailable"] = min_available
        return entry

    # M < T: greedy by task priority (high first)
    spec = {"minAvailable": 3, "tasks": [t("low", 4, 1), t("high", 2, 10, pc="hi")]}
    assert min_resources(spec, {"hi": 100}) == {"cpu": 21000}
    # M ≥ T: minAvailable of each task first, then the spare replicas in order
    spec = {"minAvailable": 4, "tasks": [t("a", 3, 1, 1), t("b", 3, 10, 1)]}
    assert min_resources(spec, {}) == {"cpu": 1000 + 10000 + 2000}


def test_deleting_a_job_removes_its_cluster_objects(world: World) -> None:
    job = world.schedule(world.cookbook("01-pytorch-distributed.yaml"))
    uid = job.uid
    job_services.delete_job(SYSTEM, job.namespace, job.name)
    assert services.on_job_deleted(None, job_uid=uid) == 1
    assert world.sim.list_pods() == []
    assert world.sim.secrets == {}
    assert world.sim.services == {}
    assert world.sim.config_maps == {}
    assert not JobRecord.objects.exists()


def test_a_job_with_finalizers_is_removed_after_clean_up(world: World) -> None:
    doc = builders.job_manifest("fin", queue="ml-training", tasks=[builders.task("w", 1)])
    doc["metadata"]["finalizers"] = ["example.com/keep"]
    job = world.schedule(world.apply(doc))
    job_services.delete_job(SYSTEM, job.namespace, job.name)
    assert Job.objects.filter(pk=job.pk).exists()
    services.on_job_deleted(job.pk)
    assert not Job.objects.filter(pk=job.pk).exists()
    assert world.sim.list_pods() == []


def test_resync_cleans_orphans_and_picks_up_new_jobs(world: World) -> None:
    job_services.apply_job(SYSTEM, builders.job_manifest("late", queue="ml-training"), NAMESPACE)
    job = Job.objects.get(name="late")
    PodGroup.objects.filter(job=job).update(phase="Inqueue")
    services.resync_controllers()
    assert len(world.pods(job)) == 2
    Job.objects.filter(pk=job.pk).delete()  # gone without telling the runtime
    services.resync_controllers()
    assert world.sim.list_pods() == []
    assert not JobRecord.objects.exists()


def test_the_controllers_informer_syncs_a_submitted_job(world: World) -> None:
    watching = informer.Informer(cursor=log.head()[0])
    job_services.apply_job(SYSTEM, builders.job_manifest("hooked", queue="ml-training"), NAMESPACE)
    job = Job.objects.get(name="hooked")
    PodGroup.objects.filter(job=job).update(phase="Inqueue")
    assert not world.pods(job)  # the write asked nobody: the controllers read the log
    found = watching.step()  # (Celery is eager in tests: the syncs it asks for run now)
    assert found.urgent == {job.pk}
    assert len(world.pods(job)) == 2
