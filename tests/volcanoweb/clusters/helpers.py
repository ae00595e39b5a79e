"""Helpers shared by the clusters and scheduling tests: a manual-clock sim and gangs of pods as rows."""

from __future__ import annotations

from typing import Any

from volcanoweb.clusters.backends.base import GROUP_NAME_ANNOTATION
from volcanoweb.clusters.backends.sim import ManualClock
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.tenancy.models import Tenant

GiB = 1024**3


def make_sim(pool: str = "cpu:4x8c32Gi", duration: float = 60.0) -> tuple[DatabaseSimCluster, ManualClock]:
    """Return a database-backed sim on a manual clock."""
    clock = ManualClock(0.0)
    return DatabaseSimCluster(pool, default_duration=duration, clock=clock), clock


def pod_spec(cpu: str = "1", memory: str = "1Gi", **extra: Any) -> dict[str, Any]:
    """Return a Kubernetes pod spec with one container requesting ``cpu``/``memory``."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    return {"schedulerName": "volcano", "containers": [container], **extra}


def make_gang(
    name: str,
    replicas: int,
    *,
    namespace: str = "team-a",
    tenant: Tenant | None = None,
    queue: str = "default",
    min_member: int | None = None,
    cpu: int = 1000,
    memory: int = GiB,
    phase: str = "Pending",
    min_resources: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> tuple[PodGroup, list[Pod]]:
    """Create a PodGroup and its pods as database rows (pods not yet in the cluster)."""
    group = PodGroup.objects.create(
        namespace=namespace,
        name=name,
        tenant=tenant,
        queue_name=queue,
        min_member=replicas if min_member is None else min_member,
        min_resources=min_resources,
        phase=phase,
        spec={"minMember": replicas if min_member is None else min_member, "queue": queue},
        status={"phase": phase},
    )
    pods = []
    for i in range(replicas):
        cpu_text = f"{cpu}m"
        pods.append(
            Pod.objects.create(
                namespace=namespace,
                name=f"{name}-{i}",
                tenant=tenant,
                group_name=name,
                podgroup=group,
                scheduler_name="volcano",
                annotations={GROUP_NAME_ANNOTATION: name, **(annotations or {})},
                requests={"cpu": cpu, "memory": memory},
                spec=pod_spec(cpu_text, str(memory)),
            )
        )
    return group, pods
