"""Celery tasks, embedded-mode loops and beat entries of the workflow controllers."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.utils import timezone

from volcanoweb.celery import app
from volcanoweb.serve import loops
from volcanoweb.workflows import tasks
from volcanoweb.workflows.models import CronJob

from .conftest import cookbook_14, make_cronjob, owned_jobs
from .test_jobflow_controller import DIAMOND, make_flow


@pytest.mark.django_db
def test_tick_cronjobs_is_idempotent(namespace: object) -> None:
    # Created a day ago with "* * * * *": a start time is always due at the real current time.
    cronjob = make_cronjob(
        cookbook_14(),
        created=timezone.now() - timezone.timedelta(days=1),
        schedule="* * * * *",
        concurrencyPolicy="Forbid",
    )
    first = tasks.tick_cronjobs.delay().get()
    second = tasks.tick_cronjobs.delay([cronjob.pk]).get()
    assert len(first["created"]) == 1
    assert second["created"] == []
    assert len(owned_jobs(cronjob)) == 1
    assert tasks.tick_cronjobs.delay([cronjob.pk + 1000]).get()["failed"] == []  # unknown ids are skipped


@pytest.mark.django_db
def test_sync_jobflows_task(namespace: object) -> None:
    flow = make_flow(DIAMOND)
    result = tasks.sync_jobflows.delay().get()
    assert result["created"] == ["diamond-a"]
    assert tasks.sync_jobflows.delay([flow.pk]).get()["created"] == []


@pytest.mark.django_db
def test_one_bad_cronjob_does_not_stop_the_others(namespace: object, monkeypatch: pytest.MonkeyPatch) -> None:
    make_cronjob(cookbook_14(), created=timezone.now())
    calls: list[int] = []

    def boom(cronjob_id: int, now: object) -> None:
        calls.append(cronjob_id)
        raise RuntimeError("boom")

    monkeypatch.setattr(tasks.cronjob, "sync_cronjob", boom)
    result = tasks.run_cronjobs()
    assert result["failed"] == calls == list(CronJob.objects.values_list("pk", flat=True))


def test_loops_and_beat_entries() -> None:
    by_name = {loop.name: loop for loop in loops.periodic_loops()}
    assert by_name["cronjob-tick"].func.name == tasks.tick_cronjobs.name
    assert by_name["jobflow-sync"].func.name == tasks.sync_jobflows.name
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks
