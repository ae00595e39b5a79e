"""Celery tasks of the clusters app (beat runs ``sync_backend`` periodically)."""

from __future__ import annotations

from celery import shared_task

from volcanoweb.clusters import services


@shared_task(name="volcanoweb.clusters.tasks.sync_backend", ignore_result=True)
def sync_backend() -> int:
    """Advance the simulated kubelet, mirror cluster events into the database; return the event count."""
    return services.sync_from_backend().events


@shared_task(name="volcanoweb.clusters.tasks.record_node_usage", ignore_result=True)
def record_node_usage() -> int:
    """Read the backend's node metrics into the Node rows (the usage and rescheduling plugins read them)."""
    return services.record_node_usage()
