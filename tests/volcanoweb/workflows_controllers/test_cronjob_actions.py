"""CronJob suspend / resume / run now (the workflow services) and their effect on the controller."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.builders import task
from tests.volcanoweb.conftest import Cast
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.errors import ApiError
from volcanoweb.jobs.models import Event, Job, JobPhase
from volcanoweb.tenancy.access import SYSTEM, access_for
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.controllers.cronjob import SCHEDULED_TIMESTAMP_ANNOTATION, sync_cronjob
from volcanoweb.workflows.cron import job_name_suffix
from volcanoweb.workflows.models import CronJob

from .conftest import owned_jobs, set_phase, utc

pytestmark = pytest.mark.django_db
NS = "team-a"


def hourly(name: str = "hourly", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": name, "annotations": {"owner": "reports"}},
        "spec": {
            "schedule": "0 * * * *",
            "jobTemplate": {"metadata": {"labels": {"app": "report"}}, "spec": {"queue": "qa", "tasks": [task()]}},
            **spec,
        },
    }


@pytest.fixture
def cronjob(cast: Cast) -> CronJob:
    builders.make_queue("qa", tenant="team-a")
    workflows.apply_cronjob(SYSTEM, hourly(), NS, mode="create")
    CronJob.objects.filter(name="hourly").update(created_at=utc(2026, 1, 1, 0, 0))
    return CronJob.objects.get(namespace=NS, name="hourly")


def sync_hours(cronjob: CronJob, hours: range) -> list[str]:
    created: list[str] = []
    for hour in hours:
        result = sync_cronjob(cronjob.pk, utc(2026, 1, 1, hour, 0) + timedelta(seconds=5))
        assert result is not None
        created += result.created
    return created


def test_suspend_stops_the_controller_and_resume_lets_it_run(cronjob: CronJob, cast: Cast) -> None:
    alice = access_for(cast.alice)
    assert sync_hours(cronjob, range(1, 2)) == [f"hourly-{job_name_suffix(utc(2026, 1, 1, 1, 0))}"]
    outcome = workflows.suspend_cronjob(alice, NS, "hourly")
    assert outcome.action == "configured"
    assert outcome.object["spec"]["suspend"] is True
    cronjob.refresh_from_db()
    assert cronjob.suspend is True
    assert sync_hours(cronjob, range(2, 6)) == []  # nothing while suspended
    assert workflows.suspend_cronjob(alice, NS, "hourly").action == "unchanged"

    assert workflows.resume_cronjob(alice, NS, "hourly").action == "configured"
    cronjob.refresh_from_db()
    assert cronjob.suspend is False
    assert cronjob.spec["suspend"] is False
    created = sync_hours(cronjob, range(6, 8))
    assert len(created) == 2  # 06:00 (the latest start time; 02:00-05:00 are not back-filled), then 07:00
    assert workflows.resume_cronjob(alice, NS, "hourly").action == "unchanged"
    actions = list(
        AuditEntry.objects.filter(kind="CronJob", object_key=f"{NS}/hourly").values_list("action", flat=True)
    )
    assert actions.count("suspend") == 1
    assert actions.count("resume") == 1


def test_run_now_creates_exactly_one_owned_job(cronjob: CronJob, cast: Cast) -> None:
    job = workflows.run_cronjob_now(access_for(cast.bob), NS, "hourly", now=utc(2026, 1, 1, 0, 30))
    assert job.name.startswith("hourly-manual-")
    assert len(job.name) == len("hourly-manual-") + 5
    assert owned_jobs(cronjob) == [job]
    assert job.controller_uid == cronjob.uid
    assert job.annotations[workflows.MANUAL_INSTANTIATE_ANNOTATION] == "manual"
    assert SCHEDULED_TIMESTAMP_ANNOTATION not in job.annotations
    assert job.labels == {"app": "report"}
    assert job.created_by == cast.bob
    cronjob.refresh_from_db()
    assert [ref["name"] for ref in cronjob.status["active"]] == [job.name]
    assert cronjob.last_schedule_time is None  # the schedule is untouched
    assert Event.objects.filter(involved_kind="CronJob", involved_name="hourly", reason="SuccessfulCreate").exists()
    assert AuditEntry.objects.filter(kind="CronJob", action="run", message__contains=job.name).count() == 1

    # The controller keeps it as active (no "orphan" adoption) and lists it in the history once finished.
    result = sync_cronjob(cronjob.pk, utc(2026, 1, 1, 0, 31))
    assert result is not None
    assert "OrphanedJob" not in result.events
    assert result.created == []
    set_phase(job, JobPhase.COMPLETED, utc(2026, 1, 1, 0, 40))
    sync_cronjob(cronjob.pk, utc(2026, 1, 1, 0, 41))
    cronjob.refresh_from_db()
    assert "active" not in cronjob.status
    assert cronjob.status["lastSuccessfulTime"].startswith("2026-01-01T00:40")


def test_run_now_ignores_suspend_and_forbid(cast: Cast) -> None:
    builders.make_queue("qa", tenant="team-a")
    workflows.apply_cronjob(SYSTEM, hourly("strict", concurrencyPolicy="Forbid", suspend=True), NS, mode="create")
    alice = access_for(cast.alice)
    first = workflows.run_cronjob_now(alice, NS, "strict")
    second = workflows.run_cronjob_now(alice, NS, "strict")
    assert first.name != second.name
    assert Job.objects.filter(controller_uid=CronJob.objects.get(name="strict").uid).count() == 2


def test_manual_names_fit_in_63_characters() -> None:
    name = workflows.manual_job_name("x" * 52)
    assert len(name) == 63
    assert name.startswith("x" * 50 + "-manual-")


@pytest.mark.parametrize(
    ("user", "code"),
    [("victor", 403), ("charlie", 403)],
)
def test_viewers_and_other_tenants_are_refused(cronjob: CronJob, cast: Cast, user: str, code: int) -> None:
    access = access_for(getattr(cast, user))
    for call in (workflows.suspend_cronjob, workflows.resume_cronjob, workflows.run_cronjob_now):
        with pytest.raises(ApiError) as info:
            call(access, NS, "hourly")
        assert info.value.code == code
    assert owned_jobs(cronjob) == []
    cronjob.refresh_from_db()
    assert cronjob.suspend is False


def test_missing_cronjob_is_404(cronjob: CronJob, cast: Cast) -> None:
    with pytest.raises(ApiError) as info:
        workflows.run_cronjob_now(access_for(cast.alice), NS, "nope")
    assert info.value.code == 404
