"""The product feeds the core's Volcano-fidelity inputs: a Volcano Job submitted through the job
service, scheduled by the product's cycle on the database-backed sim.

* required pod anti-affinity on ``kubernetes.io/hostname`` puts the job's pods on distinct nodes
  (the same job without it is packed onto one node by binpack);
* a PodGroup with the ``sla-waiting-time`` annotation, refused by its queue's capability, is
  admitted (Inqueue) by the sla plugin once the cycle's clock is past its waiting time.
"""

from __future__ import annotations

from typing import Any

from tests.volcanoweb import builders
from tests.volcanoweb.scheduling.cycling import cycle_and_sync
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Job, Pod, PodGroup
from volcanoweb.runtime import services as runtime
from volcanoweb.scheduling import services as scheduling_services
from volcanoweb.tenancy.access import SYSTEM

PACKING = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: binpack
"""

SLA = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: sla
  - name: gang
- plugins:
  - name: proportion
  - name: predicates
"""

ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}
        ]
    }
}


def _submit(
    name: str,
    replicas: int,
    *,
    queue: str = "default",
    affinity: Any = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> None:
    """Submit a Volcano Job (one task ``web`` of 1-CPU pods labelled app=web) through the job service."""
    task = builders.task("web", replicas, cpu="1")
    task["template"]["metadata"] = {"labels": {"app": "web"}}
    if affinity is not None:
        task["template"]["spec"]["affinity"] = affinity
    doc = builders.job_manifest(name, namespace="team-a", queue=queue, tasks=[task], **spec)
    if annotations:
        doc["metadata"]["annotations"] = annotations
    job_services.apply_job(SYSTEM, doc)
    runtime.on_job_submitted(Job.objects.get(namespace="team-a", name=name).pk)


def _nodes(job: str) -> list[str]:
    return sorted(
        Pod.objects.filter(namespace="team-a", name__startswith=f"{job}-").values_list("node_name", flat=True)
    )


def test_required_anti_affinity_on_hostname_spreads_a_jobs_pods(sim: Any, cast: Any) -> None:
    scheduling_services.save_config(SYSTEM, PACKING)
    cluster_services.sync_from_backend()
    _submit("packed", 3)
    for _ in range(3):
        cycle_and_sync()
    packed = _nodes("packed")
    assert all(packed)
    assert len(set(packed)) == 1  # binpack packs the three 1-CPU pods onto one 8-CPU node

    _submit("spread", 3, affinity=ANTI_AFFINITY)
    for _ in range(3):
        cycle_and_sync()
    spread = _nodes("spread")
    assert all(spread)
    assert len(set(spread)) == 3  # one pod per node: each pod's term selects its siblings (app=web)
    assert set(spread).isdisjoint(packed)  # the packed pods carry app=web too: their node is excluded


def test_anti_affinity_leaves_pods_pending_when_nodes_run_out(sim: Any, cast: Any) -> None:
    scheduling_services.save_config(SYSTEM, PACKING)
    cluster_services.sync_from_backend()
    _submit("many", 5, affinity=ANTI_AFFINITY, minAvailable=4)  # 4 sim nodes
    for _ in range(3):
        cycle_and_sync()
    nodes = _nodes("many")
    placed = [n for n in nodes if n]
    assert len(placed) == 4
    assert len(set(placed)) == 4


def test_sla_waiting_time_admits_a_podgroup_once_it_has_waited(sim: Any, cast: Any) -> None:
    scheduling_services.save_config(SYSTEM, SLA)
    builders.make_queue("tiny", capability={"cpu": "1", "memory": "64Gi"}, allowed=("team-a",))
    cluster_services.sync_from_backend()
    _submit("late", 2, queue="tiny")  # 2 CPUs: the queue's capability (1 CPU) refuses to enqueue it
    _submit("urgent", 2, queue="tiny", annotations={"sla-waiting-time": "1m"})
    groups = {g.name.split("-")[0]: g for g in PodGroup.objects.filter(namespace="team-a")}
    created = groups["urgent"].created_at.timestamp()
    assert groups["urgent"].annotations["sla-waiting-time"] == "1m"

    cycle_and_sync(now=created + 59)
    assert _phases() == {"late": "Pending", "urgent": "Pending"}

    cycle_and_sync(now=created + 61)
    assert _phases() == {"late": "Pending", "urgent": "Inqueue"}  # only the job with a waiting time
    cycle_and_sync(now=created + 62)
    assert len([n for n in _nodes("urgent") if n]) == 0  # admitted, yet the queue's capability still binds


def _phases() -> dict[str, str]:
    return {name.split("-")[0]: phase for name, phase in PodGroup.objects.values_list("name", "phase")}
