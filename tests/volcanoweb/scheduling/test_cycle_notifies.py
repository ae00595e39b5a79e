"""The job controller learns from the change log what the cycle and the backend mirror changed, and only what
matters to it (the controllers' informer, runtime.informer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.sim import ManualClock
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster
from volcanoweb.feed import log
from volcanoweb.jobs.models import Job, Pod, PodGroup
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.runtime import informer
from volcanoweb.runtime import services as runtime
from volcanoweb.scheduling.models import RunStatus
from volcanoweb.scheduling.services import run_cycle


@pytest.fixture
def cluster(db: Any, cast: Any) -> Iterator[tuple[DatabaseSimCluster, ManualClock]]:
    """A 4-node sim whose pods start 1 s after their bind (so a bind and a start are two changes)."""
    ensure_builtin_queues()  # a transactional test case flushes the migrations' rows
    clock = ManualClock(0.0)
    backend = DatabaseSimCluster("cpu:4x8c32Gi", startup_delay=1.0, clock=clock)
    previous = backend_module.set_backend(backend)
    cluster_services.sync_from_backend()
    yield backend, clock
    backend_module.set_backend(previous)


def submit(name: str) -> Job:
    job = builders.make_job("team-a", name, tasks=[builders.task("w", 2)])
    runtime.on_job_submitted(job.pk)
    return job


@pytest.mark.django_db(transaction=True)
def test_an_admitted_gang_gets_its_pods_from_the_cycle_that_admitted_it(cluster: Any) -> None:
    job = submit("admitted")
    watching = informer.Informer(cursor=log.head(wait=True)[0])
    assert not Pod.objects.filter(job=job).exists()
    run = run_cycle()  # enqueue: Pending -> Inqueue
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert PodGroup.objects.get(job=job).phase == "Inqueue"
    assert watching.step().urgent == {job.pk}  # the admission, read from the log (Celery is eager in tests)
    assert Pod.objects.filter(job=job).count() == 2  # not only at the next periodic resync
    cluster_services.sync_from_backend()
    run = run_cycle()
    assert run is not None
    assert run.binds == 2


@pytest.mark.django_db(transaction=True)
def test_the_mirror_asks_for_a_sync_only_when_the_controller_would_see_a_change(cluster: Any) -> None:
    _, clock = cluster
    job = submit("mirrored")
    watching = informer.Informer(cursor=log.head(wait=True)[0])
    run_cycle()
    assert watching.step().urgent == {job.pk}  # admitted: its pods are created
    cluster_services.sync_from_backend()  # the cluster's echo of the pods the controller created
    assert not watching.step()
    run_cycle()  # binds
    watching.step()  # (the PodGroup's phase the cycle wrote)
    cluster_services.sync_from_backend()  # the pods' node changes, their phase does not
    assert not watching.step()
    clock.advance(1)
    cluster_services.sync_from_backend()  # Running
    assert watching.step().jobs == {job.pk}
    assert Job.objects.get(pk=job.pk).phase == "Running"
