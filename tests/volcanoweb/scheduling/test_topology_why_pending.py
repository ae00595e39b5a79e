"""Why a topology gang is pending, end to end on the database-backed sim: a pool declares racks of two nodes under
one spine (Volcano's label discovery makes them HyperNodes), a gang with a hard topology of tier 1 needs more GPUs
than any rack has, and the job's why-pending panel names the tier that failed and the one highestTierAllowed
forbids; the same gang allowed tier 2 is placed on the spine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import make_sim
from tests.volcanoweb.scheduling.cycling import cycle_and_sync
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Job, Pod
from volcanoweb.runtime import services as runtime
from volcanoweb.scheduling import services as scheduling_services
from volcanoweb.tenancy.access import SYSTEM

CONFIG = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: network-topology-aware
"""


@pytest.fixture
def racks(db: Any) -> Iterator[Any]:
    """Four 2-GPU nodes in racks of two (gpu-rack-0, gpu-rack-1) under one spine (gpu-spine-0)."""
    backend, _clock = make_sim("gpu:4x16c64Gi2gpu{rack=2;spine=2}")
    previous = backend_module.set_backend(backend)
    yield backend
    backend_module.set_backend(previous)


def _submit(name: str, highest: int) -> Job:
    task = builders.task("worker", 3, cpu="1")
    container = task["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["nvidia.com/gpu"] = "2"
    container["resources"]["limits"] = {"nvidia.com/gpu": "2"}
    doc = builders.job_manifest(
        name,
        namespace="team-a",
        queue="default",
        tasks=[task],
        minAvailable=3,
        networkTopology={"mode": "hard", "highestTierAllowed": highest},
    )
    job_services.apply_job(SYSTEM, doc)
    job = Job.objects.get(namespace="team-a", name=name)
    runtime.on_job_submitted(job.pk)
    return job


def test_why_pending_names_the_tier_that_failed_and_the_one_not_allowed(racks: Any, cast: Any) -> None:
    scheduling_services.save_config(SYSTEM, CONFIG)
    cluster_services.sync_from_backend()
    _submit("ring", highest=1)
    for _ in range(3):
        cycle_and_sync()
    assert not Pod.objects.filter(namespace="team-a", node_name__gt="").exists()
    client = Client()
    client.force_login(cast.alice)
    html = client.get("/jobs/team-a/ring/?fragment=status").content.decode()
    assert "No network domain its topology allows fits the gang" in html
    # No rack has the gang's 6 GPUs free, so the search tried none (Volcano's gradient drops them first).
    assert "no HyperNode of tier 1 or lower has 3 cpu, 3Gi memory, 6 nvidia.com/gpu free for the gang" in html
    assert "tier 2 is not allowed by highestTierAllowed (1)" in html

    _submit("spine", highest=2)  # the same gang, allowed a spine
    for _ in range(2):
        cycle_and_sync()
    placed = Pod.objects.filter(namespace="team-a", name__startswith="spine-", node_name__gt="")
    assert placed.count() == 3
    assert len({p.node_name for p in placed}) >= 2  # across both racks of the spine
    assert not Pod.objects.filter(namespace="team-a", name__startswith="ring-", node_name__gt="").exists()
