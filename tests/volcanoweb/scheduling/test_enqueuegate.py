"""The product's built-in configuration runs the enqueuegate plugin: a gang no node can ever hold is kept out of
the admission room (a NeverFits condition and event with the numbers), and the jobs behind it are admitted."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import DEFAULT_CONFIG_YAML
from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Event
from volcanoweb.scheduling import services as scheduling_services
from volcanoweb.scheduling.services import run_cycle
from volcanoweb.tenancy.access import SYSTEM


@pytest.fixture
def cluster(sim: Any, cast: Any) -> Any:
    cluster_services.sync_from_backend()  # 4 nodes of 8 CPUs: 32 CPUs, 38.4 admissible with overcommit 1.2
    return sim


def _gangs(cast: Any) -> tuple[Any, Any]:
    blocker, _ = make_gang("blocker", 1, tenant=cast.team_a, cpu=10000, min_resources={"cpu": "10", "memory": "1Gi"})
    # 10 reserved by the blocker + 30 requested > 38.4: Volcano's enqueue refuses this one while the blocker waits.
    wide, _ = make_gang("wide", 4, tenant=cast.team_a, cpu=7500, min_resources={"cpu": "30", "memory": "4Gi"})
    return blocker, wide


def test_a_gang_no_node_can_hold_waits_with_its_numbers_and_the_next_is_placed(cluster: Any, cast: Any) -> None:
    blocker, wide = _gangs(cast)
    run = run_cycle()
    assert run is not None
    assert run.binds == 4
    wide.refresh_from_db()
    assert wide.phase == "Inqueue"  # admitted, its 4 pods bound
    blocker.refresh_from_db()
    assert blocker.phase == "Pending"
    condition = next(c for c in blocker.status["conditions"] if c["type"] == "Unschedulable")
    assert condition["reason"] == "NeverFits"
    assert "0 of the 1 pods the gang needs fit any node" in condition["message"]
    # as kubectl describe shows it: Kubernetes quantities, not the core's millicores
    assert "each pod asks 10 cpu, the largest node it may use has 8 cpu" in condition["message"]
    assert blocker.status["unschedulableReason"]["kind"] == "never-fits"
    assert blocker.status["unschedulableReason"]["numbers"]["holds"]["cpu"] == 10000
    event = Event.objects.get(involved_kind="PodGroup", involved_name="blocker", reason="Unschedulable")
    assert event.message == condition["message"]


def test_a_configuration_that_does_not_name_the_gate_admits_the_blocker_as_volcano_does(
    cluster: Any, cast: Any
) -> None:
    scheduling_services.save_config(SYSTEM, DEFAULT_CONFIG_YAML, comment="Volcano's default")
    blocker, wide = _gangs(cast)
    run = run_cycle()
    assert run is not None
    assert run.binds == 0
    blocker.refresh_from_db()
    wide.refresh_from_db()
    assert blocker.phase == "Inqueue"
    assert wide.phase == "Pending"
    assert wide.status["unschedulableReason"]["kind"] == "enqueue-rejected"


def test_a_volcano_job_is_judged_by_its_pod_templates_before_it_has_pods(cluster: Any, cast: Any) -> None:
    """Volcano's job controller creates the pods only once the PodGroup is admitted: the snapshot passes the
    job's pod templates, so the gate sees the 10-CPU pods on 8-CPU nodes before any pod exists."""
    from tests.volcanoweb import builders
    from volcanoweb.jobs.models import Pod, PodGroup
    from volcanoweb.runtime import services as runtime

    too_wide = builders.make_job("team-a", "too-wide", tasks=[builders.task("w", 2, cpu="10")])
    fits = builders.make_job("team-a", "fits", tasks=[builders.task("w", 2, cpu="4")])
    runtime.on_job_submitted(too_wide.pk)
    runtime.on_job_submitted(fits.pk)
    for _ in range(2):
        run_cycle()
        cluster_services.sync_from_backend()
    group = PodGroup.objects.get(job=too_wide)
    assert group.phase == "Pending"
    assert not Pod.objects.filter(job=too_wide).exists()
    assert group.status["unschedulableReason"]["kind"] == "never-fits"
    assert (
        "task w: each pod asks {'cpu': 10000}, the largest node it may use has {'cpu': 8000}"
        in (group.status["unschedulableReason"]["message"])
    )
    assert PodGroup.objects.get(job=fits).phase in ("Inqueue", "Running")


def test_the_job_page_says_the_never_fits_reason_once(cluster: Any, cast: Any) -> None:
    """The condition and events say it in Kubernetes quantities (for kubectl describe), the page in its own
    units: one line, not three."""
    from tests.volcanoweb import builders
    from volcanoweb.dashboard.diagnosis import why_pending
    from volcanoweb.jobs.models import Job
    from volcanoweb.runtime import services as runtime

    job = builders.make_job("team-a", "too-wide", tasks=[builders.task("w", 1, cpu="10")])
    runtime.on_job_submitted(job.pk)
    run_cycle()
    job = Job.objects.select_related("podgroup").get(pk=job.pk)
    events = Event.objects.filter(involved_name__in=["too-wide", job.podgroup.name], reason="Unschedulable")
    assert events.exists()
    assert all("each pod asks 10 cpu, the largest node it may use has 8 cpu" in e.message for e in events)
    lines = [f"{r.title} {r.detail}" for r in why_pending(job)]
    assert len([line for line in lines if "the largest node it may use has 8 CPU" in line]) == 1, lines
    assert not [line for line in lines if "8 cpu" in line], lines
