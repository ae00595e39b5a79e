"""Celery tasks of insights (beat runs ``prune`` every INSIGHTS_PRUNE_PERIOD)."""

from __future__ import annotations

from celery import shared_task

from volcanoweb.insights import services


@shared_task(name="volcanoweb.insights.tasks.prune", ignore_result=True)
def prune() -> dict[str, int]:
    """Delete queue history, cycle inputs and closed timeline entries older than their retention."""
    return services.prune()
