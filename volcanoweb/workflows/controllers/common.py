"""What the CronJob and JobFlow controllers share: a sync's result, events, owner references, job deletion."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from volcanoweb.core.errors import ApiError
from volcanoweb.jobs import services as jobs_service
from volcanoweb.jobs.models import Job
from volcanoweb.tenancy.access import SYSTEM


@dataclass
class SyncResult:
    """What one sync did: jobs created and deleted, event reasons recorded, and when to sync next."""

    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    next_run: datetime | None = None
    phase: str | None = None


def parse_time(value: Any) -> datetime | None:
    """A status timestamp as an aware datetime (UTC when it names no zone); None when unset or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def event(result: SyncResult, obj: Any, kind: str, type_: str, reason: str, message: str, source: str) -> None:
    """Record an event on the CronJob or JobFlow and note its reason in the sync's result."""
    jobs_service.record_event(obj, kind, type_, reason, message, source=source)
    result.events.append(reason)


def delete_job(job: Job) -> bool:
    """Delete a job as the system; return False if it was already gone."""
    try:
        jobs_service.delete_job(SYSTEM, job.namespace, job.name)
    except ApiError as exc:
        if exc.code == 404:
            return False
        raise
    return True
