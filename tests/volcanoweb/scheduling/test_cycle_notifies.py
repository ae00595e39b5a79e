"""The cycle and the backend mirror tell the job controller what changed, and only what matters to it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.sim import ManualClock
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster
from volcanoweb.jobs.models import Job, Pod, PodGroup
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.runtime import dispatch
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
    runtime.on_job_submitted(job.pk)  # (also run by the post-commit hook: Celery is eager in tests)
    return job


@pytest.mark.django_db(transaction=True)
def test_an_admitted_gang_gets_its_pods_from_the_cycle_that_admitted_it(cluster: Any) -> None:
    job = submit("admitted")
    assert not Pod.objects.filter(job=job).exists()
    run = run_cycle()  # enqueue: Pending -> Inqueue, then (on commit) the controller creates the pods
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert PodGroup.objects.get(job=job).phase == "Inqueue"
    assert Pod.objects.filter(job=job).count() == 2  # not only at the next periodic resync
    cluster_services.sync_from_backend()
    run = run_cycle()
    assert run is not None
    assert run.binds == 2


@pytest.mark.django_db(transaction=True)
def test_the_mirror_asks_for_a_sync_only_when_the_controller_would_see_a_change(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, clock = cluster
    job = submit("mirrored")
    run_cycle()
    asked: list[list[int]] = []
    real = dispatch.request_sync
    monkeypatch.setattr(dispatch, "request_sync", lambda ids: (asked.append(sorted(ids)), real(ids)))
    cluster_services.sync_from_backend()  # the cluster's echo of the pods the controller created
    assert asked == []
    run_cycle()  # binds; the pods' node changes, their phase does not
    cluster_services.sync_from_backend()
    assert asked == []
    clock.advance(1)
    cluster_services.sync_from_backend()  # Running
    assert asked == [[job.pk]]
    assert Job.objects.get(pk=job.pk).phase == "Running"
