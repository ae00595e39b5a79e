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
