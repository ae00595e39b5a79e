"""Fixtures for the CronJob/JobFlow controller tests: a tenant namespace, an open queue, a settable clock."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from volcanoweb.jobs.models import Job, JobPhase
from volcanoweb.manifests import render
from volcanoweb.queues import services as queues
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.tenancy.models import Namespace, Tenant
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.models import CronJob, JobFlow

NAMESPACE = "reports"
COOKBOOK_14 = Path(__file__).resolve().parents[3] / "volcanoweb/demo/cookbook/14-cronjob-daily-report.yaml"


@pytest.fixture
def namespace(db: None) -> Namespace:
    """A tenant namespace with the queue cookbook 14 submits to (``data-processing``) and a ``default`` queue."""
    tenant = Tenant.objects.create(name="analytics")
    ns = Namespace.objects.create(name=NAMESPACE, tenant=tenant)
    queues.apply_queue(
        SYSTEM,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "data-processing"},
            "spec": {"weight": 1},
        },
    )
    return ns


def cookbook_14() -> dict[str, Any]:
    """Return cookbook 14 (the daily-report CronJob) as a document."""
    return yaml.safe_load(COOKBOOK_14.read_text())


def make_cronjob(doc: dict[str, Any], created: datetime, **spec: Any) -> CronJob:
    """Apply a CronJob (with spec overrides) and pretend it was created at ``created``."""
    doc = copy.deepcopy(doc)
    doc["spec"].update(spec)
    workflows.apply_cronjob(SYSTEM, doc, NAMESPACE, mode="create")
    cronjob = CronJob.objects.get(namespace=NAMESPACE, name=doc["metadata"]["name"])
    CronJob.objects.filter(pk=cronjob.pk).update(created_at=created)
    cronjob.refresh_from_db()
    return cronjob


def set_phase(job: Job | str, phase: JobPhase, now: datetime) -> Job:
    """Move a job to ``phase`` as the runtime would (phase column and status.state), at ``now``."""
    row = Job.objects.get(namespace=NAMESPACE, name=job) if isinstance(job, str) else job
    status = dict(row.status or {})
    status["state"] = {"phase": phase.value, "lastTransitionTime": render.timestamp(now)}
    Job.objects.filter(pk=row.pk).update(phase=phase.value, status=status)
    row.refresh_from_db()
    return row


def owned_jobs(owner: CronJob | JobFlow) -> list[Job]:
    """Return the jobs controlled by a CronJob/JobFlow, oldest first."""
    return list(Job.objects.filter(controller_uid=owner.uid).order_by("created_at", "name"))


def utc(*args: int) -> datetime:
    """Return a UTC datetime."""
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def ticks(start: datetime, end: datetime, step: timedelta) -> Iterator[datetime]:
    """Yield start, start+step, ... up to end (inclusive)."""
    moment = start
    while moment <= end:
        yield moment
        moment += step
