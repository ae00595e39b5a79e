"""Celery tasks of the scheduling app (beat runs ``run_cycle`` every SCHEDULE_PERIOD)."""

from __future__ import annotations

from celery import shared_task

from volcanoweb.scheduling import services


@shared_task(name="volcanoweb.scheduling.tasks.run_cycle", ignore_result=True)
def run_cycle() -> int | None:
    """Run one scheduling cycle unless another worker holds the claim; return the run id."""
    run = services.run_cycle()
    return run.pk if run is not None else None
