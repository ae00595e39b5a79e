"""Celery task of the change log (beat runs ``compact`` periodically; the embedded mode's loops too)."""

from __future__ import annotations

from celery import shared_task

from volcanoweb.feed import log, vacuum


@shared_task(name="volcanoweb.feed.tasks.compact", ignore_result=True)
def compact() -> int:
    """Drop the log's entries outside the retention window, vacuum it when due (ADR 0036); return the compaction
    point."""
    point = log.compact()
    vacuum.vacuum_if_needed()
    return point
