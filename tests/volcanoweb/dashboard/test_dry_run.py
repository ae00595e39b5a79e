"""The Submit dry run gives the scheduler's own verdict: one simulated cycle on the live snapshot."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.volcanoweb import builders
from tests.volcanoweb.dashboard.test_runtime import _job_doc, sim  # noqa: F401  (the fixture)
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Job
from volcanoweb.runtime import services as runtime_services
from volcanoweb.scheduling.services import run_cycle

pytestmark = pytest.mark.django_db


def _dry_run(client: Any, name: str, queue: str) -> str:
    manifest = yaml.safe_dump(_job_doc(name, queue, replicas=1, cpu="1"))
    return client.post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"}).content.decode()


def test_a_queue_at_its_capability_is_not_fits_now(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    builders.make_queue("small", tenant="team-a", capability={"cpu": "2", "memory": "8Gi"})
    client = login(cast.alice)
    first = _dry_run(client, "probe", "small")
    assert "Would be admitted and placed now: 1 of 1 pods" in first  # an empty queue with room
    from tests.volcanoweb.dashboard.test_runtime import submit

    job = submit("filler", "small", replicas=2, cpu="1")  # takes the whole capability
    run_cycle()
    runtime_services.on_podgroups_changed([job.pk])
    cluster_services.sync_from_backend()
    run_cycle()
    cluster_services.sync_from_backend()
    html = _dry_run(client, "late", "small")
    assert "fits the cluster now" not in html
    assert "placed now" not in html
    assert "Would be" in html
    assert "stay Pending" in html or "but wait" in html
    assert 'data-source="scheduler"' in html or "simulated cycle" in html
    assert not Job.objects.filter(name__in=("probe", "late")).exists()  # a dry run stores nothing


def test_a_gang_no_node_can_hold_is_can_never_run(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    """The sim's nodes have 8 CPUs: a pod asking 10 can never run, and the dry run says so (the enqueue gate's
    verdict in the simulated cycle), not "would be admitted but wait"."""
    builders.make_queue("roomy", tenant="team-a")
    cluster_services.sync_from_backend()
    manifest = yaml.safe_dump(_job_doc("too-wide", "roomy", replicas=1, cpu="10"))
    html = login(cast.alice).post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"}).content.decode()
    assert "Can never run: 0 of the 1 pods the gang needs fit any node" in html
    assert "each pod asks 10 CPU, the largest node it may use has 8 CPU" in html
    assert "but wait" not in html


def test_under_a_configuration_without_the_gate_it_is_still_can_never_run(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    """Volcano's own configuration admits the 10-CPU pod on 8-CPU nodes ("would be admitted but wait"); the dry
    run still says it can never run, with the node shape that decides."""
    from scheduler.config import DEFAULT_CONFIG_YAML
    from volcanoweb.scheduling import services as scheduling_services

    scheduling_services.save_config(builders.SYSTEM, DEFAULT_CONFIG_YAML, comment="Volcano's default")
    builders.make_queue("roomy", tenant="team-a")
    cluster_services.sync_from_backend()
    manifest = yaml.safe_dump(_job_doc("too-wide", "roomy", replicas=1, cpu="10"))
    html = login(cast.alice).post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"}).content.decode()
    assert "Can never run: each pod of task worker asks 10 CPU (the largest node has 8)" in html
    assert "but wait" not in html


def _admitted_blocker(namespace: str, queue: str) -> None:
    """Under Volcano's configuration (no enqueue gate): a 10-CPU pod on the sim's 8-CPU nodes, admitted by a cycle
    (Inqueue), holding 10 CPU of the cluster's admission room (32 CPU x overcommit 1.2 = 38.4) for ever."""
    from scheduler.config import DEFAULT_CONFIG_YAML
    from volcanoweb.jobs import services as job_services
    from volcanoweb.jobs.models import PodGroup
    from volcanoweb.scheduling import services as scheduling_services

    scheduling_services.save_config(builders.SYSTEM, DEFAULT_CONFIG_YAML, comment="Volcano's default")
    job_services.apply_job(builders.SYSTEM, _job_doc("blocker", queue, replicas=1, cpu="10"), namespace)
    job = Job.objects.get(namespace=namespace, name="blocker")
    runtime_services.on_job_submitted(job.pk)
    cluster_services.sync_from_backend()
    run_cycle()
    assert PodGroup.objects.get(job=job).phase == "Inqueue"


def test_a_dry_run_the_overcommit_refuses_names_the_blocker_and_the_sum(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    """The dry run said "Would be stored but stay Pending: resource in cluster is overused" with no figure; it
    says what the job's page says: the admitted job that can never run is the blocker, and the sum that decided."""
    builders.make_queue("roomy", tenant="team-a")
    _admitted_blocker("team-a", "roomy")
    manifest = yaml.safe_dump(_job_doc("wide", "roomy", replicas=15, cpu="2"))  # 10 + 30 > 38.4
    html = login(cast.alice).post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"}).content.decode()
    assert "Would wait: blocked by team-a/blocker: it holds 10 CPU, 1 GiB of admission room and can never run" in html
    assert "10 admitted (inqueue) + 30 requested = 40 CPU &gt; 38.4 CPU admissible" in html
    assert "stay Pending" not in html


def test_another_tenants_blocker_is_not_named_in_the_dry_run(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    builders.make_queue("roomy", tenant="team-a")
    builders.make_queue("theirs", tenant="team-b")
    _admitted_blocker("team-b", "theirs")
    manifest = yaml.safe_dump(_job_doc("wide", "roomy", replicas=15, cpu="2"))
    html = login(cast.alice).post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"}).content.decode()
    assert "Would wait: blocked by a job of another tenant that holds admission room and can never run" in html
    assert "team-b" not in html
    assert "/blocker" not in html  # the job's name is not said either


def test_a_gang_above_its_queues_real_capability_can_never_run_there(sim: Any, cast: Any, login: Any) -> None:  # noqa: F811
    """Another queue's guarantee reserves half of the sim's 32 CPU: a 20-CPU gang is never admitted in a queue
    without one (proportion's real capability). The dry run says so with the comparison, and names only the
    queues the caller may see."""
    builders.make_queue("roomy", tenant="team-a")
    builders.make_queue("theirs", tenant="team-b", guarantee={"cpu": "16"})
    manifest = yaml.safe_dump(_job_doc("wide", "roomy", replicas=10, cpu="2"))
    html = login(cast.alice).post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"}).content.decode()
    assert (
        "Can never run in queue roomy: 20 CPU needed &gt; 16 CPU the queue can ever get (32 in the cluster \u2212 16 "
        "that other queues&#x27; guarantees reserve: queues of other tenants 16)"
    ) in html
    assert "theirs" not in html
    admin = login(cast.root).post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"}).content.decode()
    assert "guarantees reserve: theirs 16)" in admin  # a platform admin sees every queue
    fits = yaml.safe_dump(_job_doc("narrow", "roomy", replicas=8, cpu="2"))
    html = login(cast.alice).post("/submit/validate/", {"manifest": fits, "namespace": "team-a"}).content.decode()
    assert "Can never run" not in html
