"""CronJob controller with a controllable clock; job phases are driven by hand, as the runtime would.

Deviations from Volcano: docs/controllers.md, "CronJob controller".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from volcanoweb.jobs.models import Event, Job, JobPhase
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.controllers.cronjob import SCHEDULED_TIMESTAMP_ANNOTATION, sync_cronjob
from volcanoweb.workflows.cron import job_name_suffix
from volcanoweb.workflows.models import CronJob

from .conftest import cookbook_14, make_cronjob, owned_jobs, set_phase, ticks, utc

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


class Runtime:
    """A stand-in for the job controller: Pending → Running at once, then finishes after ``run_for``."""

    def __init__(self, cronjob: CronJob, run_for: timedelta = HOUR, outcome: Callable[[Job], JobPhase] | None = None):
        self.cronjob = cronjob
        self.run_for = run_for
        self.outcome = outcome or (lambda job: JobPhase.COMPLETED)
        self.started: dict[str, datetime] = {}

    def step(self, now: datetime) -> None:
        for job in owned_jobs(self.cronjob):
            if job.phase == JobPhase.PENDING:
                set_phase(job, JobPhase.RUNNING, now)
                self.started[job.name] = now
            elif job.phase == JobPhase.RUNNING and now - self.started.get(job.name, now) >= self.run_for:
                set_phase(job, self.outcome(job), now)


def reasons(cronjob: CronJob) -> list[str]:
    return list(
        Event.objects.filter(involved_kind="CronJob", involved_name=cronjob.name).values_list("reason", flat=True)
    )


def run(
    cronjob: CronJob,
    start: datetime,
    end: datetime,
    step: timedelta,
    runtime: Runtime | None = None,
    check: Callable[[datetime], None] | None = None,
) -> list[tuple[datetime, str]]:
    """Tick the controller from start to end; return (tick time, job name) for every job it created."""
    created: list[tuple[datetime, str]] = []
    for now in ticks(start, end, step):
        result = sync_cronjob(cronjob.pk, now)
        assert result is not None
        created.extend((now, name) for name in result.created)
        if runtime is not None:
            runtime.step(now)
        if check is not None:
            check(now)
    return created


def scheduled_local(job: Job, zone: str) -> datetime:
    return datetime.fromisoformat(job.annotations[SCHEDULED_TIMESTAMP_ANNOTATION]).astimezone(ZoneInfo(zone))


def test_cookbook_14_runs_once_a_day_at_two(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0))
    created = run(cronjob, utc(2026, 1, 1, 0, 0), utc(2026, 1, 6, 0, 0), timedelta(minutes=30), Runtime(cronjob))
    days = [utc(2026, 1, d, 2, 0) for d in range(1, 6)]
    assert [name for _, name in created] == [f"daily-report-{job_name_suffix(d)}" for d in days]
    assert [tick for tick, _ in created] == days  # each at the first tick at or after 02:00
    job = Job.objects.get(name=f"daily-report-{job_name_suffix(days[0])}")
    assert job.controller_uid == cronjob.uid
    assert job.owner_references[0]["kind"] == "CronJob"
    assert job.owner_references[0]["controller"] is True
    assert job.queue_name == "data-processing"
    assert job.spec["tasks"][0]["name"] == "report"
    assert scheduled_local(job, "UTC").hour == 2
    cronjob.refresh_from_db()
    assert cronjob.last_schedule_time == days[-1]
    assert cronjob.status["lastScheduleTime"] == "2026-01-05T02:00:00Z"
    assert cronjob.status["lastSuccessfulTime"] == "2026-01-05T03:00:00Z"  # finished one hour after its start
    assert "active" not in cronjob.status  # the last run finished
    assert reasons(cronjob).count("SuccessfulCreate") == 5


@pytest.mark.parametrize(
    ("zone", "schedule", "start", "expected_local"),
    [
        # spring-forward: 02:00 does not exist on 03-08, the run happens once at 03:00 EDT
        (
            "America/New_York",
            "0 2 * * *",
            utc(2026, 3, 6, 12),
            ["03-07 02:00", "03-08 03:00", "03-09 02:00", "03-10 02:00"],
        ),
        # fall-back: 01:00-02:00 repeats on 11-01, 02:00 EST happens once
        (
            "America/New_York",
            "0 2 * * *",
            utc(2026, 10, 30, 12),
            ["10-31 02:00", "11-01 02:00", "11-02 02:00", "11-03 02:00"],
        ),
        # Riga falls back 04:00 → 03:00 on 10-25: 03:30 happens twice on the wall clock, runs once
        (
            "Europe/Riga",
            "30 3 * * *",
            utc(2026, 10, 23, 12),
            ["10-24 03:30", "10-25 03:30", "10-26 03:30", "10-27 03:30"],
        ),
        # Riga springs forward 03:00 → 04:00 on 03-29: 03:30 does not exist, runs once at 04:00
        (
            "Europe/Riga",
            "30 3 * * *",
            utc(2026, 3, 27, 12),
            ["03-28 03:30", "03-29 04:00", "03-30 03:30", "03-31 03:30"],
        ),
    ],
)
def test_one_run_per_day_across_dst(
    namespace: object, zone: str, schedule: str, start: datetime, expected_local: list[str]
) -> None:
    cronjob = make_cronjob(cookbook_14(), created=start, timeZone=zone, schedule=schedule)
    created = run(cronjob, start, start + timedelta(days=4), timedelta(minutes=30), Runtime(cronjob))
    jobs = [Job.objects.get(name=name) for _, name in created]
    assert [scheduled_local(job, zone).strftime("%m-%d %H:%M") for job in jobs] == expected_local
    for (tick, _), job in zip(created, jobs, strict=True):
        # created at the first tick at or after its start (compare instants: ambiguous local times never compare equal)
        assert tick == datetime.fromisoformat(job.annotations[SCHEDULED_TIMESTAMP_ANNOTATION])
    assert len({job.name for job in jobs}) == 4


def test_forbid_never_runs_two_at_once(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0))
    assert cronjob.concurrency_policy == "Forbid"

    def at_most_one(now: datetime) -> None:
        assert sum(job.phase not in ("Completed", "Failed", "Terminated") for job in owned_jobs(cronjob)) <= 1

    # The first run hangs for three days.
    created = run(
        cronjob,
        utc(2026, 1, 1, 0),
        utc(2026, 1, 4, 0),
        timedelta(minutes=30),
        Runtime(cronjob, run_for=timedelta(days=5)),
        at_most_one,
    )
    assert len(created) == 1
    assert "ForbidConcurrent" in reasons(cronjob)
    set_phase(created[0][1], JobPhase.COMPLETED, utc(2026, 1, 4, 0))
    # Kubernetes semantics: the most recent missed start (01-03 02:00) runs once the blocker finished.
    later = run(
        cronjob, utc(2026, 1, 4, 0, 10), utc(2026, 1, 4, 1, 50), timedelta(minutes=20), Runtime(cronjob), at_most_one
    )
    assert [name for _, name in later] == [f"daily-report-{job_name_suffix(utc(2026, 1, 3, 2))}"]


def test_replace_replaces_the_running_job(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0), concurrencyPolicy="Replace")
    first = run(
        cronjob,
        utc(2026, 1, 1, 1, 50),
        utc(2026, 1, 1, 2, 10),
        timedelta(minutes=10),
        Runtime(cronjob, run_for=timedelta(days=5)),
    )
    assert len(first) == 1
    first_name = first[0][1]
    assert Job.objects.get(name=first_name).phase == JobPhase.RUNNING
    result = sync_cronjob(cronjob.pk, utc(2026, 1, 2, 2, 0, 5))
    assert result is not None
    assert result.deleted == [first_name]
    assert result.created == [f"daily-report-{job_name_suffix(utc(2026, 1, 2, 2))}"]
    assert not Job.objects.filter(name=first_name).exists()
    assert [job.name for job in owned_jobs(cronjob)] == result.created
    cronjob.refresh_from_db()
    assert [ref["name"] for ref in cronjob.status["active"]] == result.created
    assert "ReplaceConcurrent" in reasons(cronjob)


def test_allow_runs_concurrently(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0), concurrencyPolicy="Allow")
    run(
        cronjob, utc(2026, 1, 1, 0), utc(2026, 1, 3, 3), timedelta(hours=1), Runtime(cronjob, run_for=timedelta(days=5))
    )
    assert [job.phase for job in owned_jobs(cronjob)] == [JobPhase.RUNNING] * 3
    cronjob.refresh_from_db()
    assert len(cronjob.status["active"]) == 3


def test_history_keeps_seven_successful_and_three_failed(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0))
    assert (cronjob.successful_jobs_history_limit, cronjob.failed_jobs_history_limit) == (7, 3)
    failing_days = {2, 5, 8, 11, 13}

    def outcome(job: Job) -> JobPhase:
        return JobPhase.FAILED if scheduled_local(job, "UTC").day in failing_days else JobPhase.COMPLETED

    run(cronjob, utc(2026, 1, 1, 0), utc(2026, 1, 16, 0), timedelta(hours=2), Runtime(cronjob, outcome=outcome))
    sync_cronjob(cronjob.pk, utc(2026, 1, 16, 0, 30))  # clean-up after the last run finished
    jobs = owned_jobs(cronjob)
    succeeded = [scheduled_local(j, "UTC").day for j in jobs if j.phase == JobPhase.COMPLETED]
    failed = [scheduled_local(j, "UTC").day for j in jobs if j.phase == JobPhase.FAILED]
    assert succeeded == [6, 7, 9, 10, 12, 14, 15]  # the 7 newest of 10 successes
    assert failed == [8, 11, 13]  # the 3 newest of 5 failures
    assert reasons(cronjob).count("SuccessfulDelete") == 5


def test_suspended_creates_nothing_then_one_catch_up_on_resume(namespace: object) -> None:
    doc = cookbook_14()
    cronjob = make_cronjob(doc, created=utc(2026, 1, 1, 0, 0), suspend=True)
    assert run(cronjob, utc(2026, 1, 1, 0), utc(2026, 1, 4, 12), timedelta(hours=1)) == []
    assert owned_jobs(cronjob) == []
    doc["spec"]["suspend"] = False
    workflows.apply_cronjob(SYSTEM, doc, "reports")
    created = run(cronjob, utc(2026, 1, 4, 12), utc(2026, 1, 4, 23), timedelta(hours=1))
    assert [name for _, name in created] == [f"daily-report-{job_name_suffix(utc(2026, 1, 4, 2))}"]


def test_exactly_one_catch_up_run_after_downtime(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0))
    runtime = Runtime(cronjob)
    run(cronjob, utc(2026, 1, 1, 0), utc(2026, 1, 1, 4), timedelta(hours=1), runtime)
    assert len(owned_jobs(cronjob)) == 1
    # The controller is down from 01-01 04:00 to 01-05 10:00: four start times were missed.
    created = run(cronjob, utc(2026, 1, 5, 10), utc(2026, 1, 6, 1), timedelta(minutes=30), runtime)
    assert [name for _, name in created] == [f"daily-report-{job_name_suffix(utc(2026, 1, 5, 2))}"]
    assert "TooManyMissedTimes" not in reasons(cronjob)
    nxt = run(cronjob, utc(2026, 1, 6, 1, 30), utc(2026, 1, 6, 3), timedelta(minutes=30), runtime)
    assert [name for _, name in nxt] == [f"daily-report-{job_name_suffix(utc(2026, 1, 6, 2))}"]


def test_too_many_missed_start_times_warns_and_runs_once(namespace: object) -> None:
    cronjob = make_cronjob(
        cookbook_14(), created=utc(2026, 1, 1, 0, 0), schedule="*/5 * * * *", concurrencyPolicy="Allow"
    )
    result = sync_cronjob(cronjob.pk, utc(2026, 1, 2, 0, 2))
    assert result is not None
    assert result.created == [f"daily-report-{job_name_suffix(utc(2026, 1, 2, 0, 0))}"]
    event = Event.objects.get(involved_name="daily-report", reason="TooManyMissedTimes")
    assert event.type == "Warning"
    assert "too many missed start times" in event.message


def test_starting_deadline_skips_runs_that_are_too_late(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0), startingDeadlineSeconds=3600)
    # Down over 02:00 and back at 03:30: 90 minutes late, beyond the one-hour deadline: no run.
    assert run(cronjob, utc(2026, 1, 1, 3, 30), utc(2026, 1, 2, 1, 30), timedelta(minutes=30)) == []
    # Back at 02:50 the next day: 50 minutes late, within the deadline: it runs.
    created = run(cronjob, utc(2026, 1, 2, 2, 50), utc(2026, 1, 2, 4), timedelta(minutes=30))
    assert [name for _, name in created] == [f"daily-report-{job_name_suffix(utc(2026, 1, 2, 2))}"]


def test_sync_is_idempotent_at_the_same_instant(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0), concurrencyPolicy="Allow")
    now = utc(2026, 1, 1, 2, 0, 30)
    first = sync_cronjob(cronjob.pk, now)
    again = sync_cronjob(cronjob.pk, now)
    assert first is not None
    assert again is not None
    assert len(first.created) == 1
    assert again.created == []
    assert len(owned_jobs(cronjob)) == 1


def test_deleted_active_job_is_dropped_from_status(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0))
    result = sync_cronjob(cronjob.pk, utc(2026, 1, 1, 2, 1))
    assert result is not None
    assert result.created
    Job.objects.filter(name=result.created[0]).delete()
    sync_cronjob(cronjob.pk, utc(2026, 1, 1, 2, 2))
    cronjob.refresh_from_db()
    assert "active" not in cronjob.status
    assert "StaleReference" in reasons(cronjob)


def test_naive_now_is_rejected(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0))
    with pytest.raises(ValueError, match="timezone-aware"):
        sync_cronjob(cronjob.pk, datetime(2026, 1, 1, 2, 0))  # noqa: DTZ001


def test_unusable_stored_time_zone_is_a_warning_event(namespace: object) -> None:
    cronjob = make_cronjob(cookbook_14(), created=utc(2026, 1, 1, 0, 0))
    CronJob.objects.filter(pk=cronjob.pk).update(time_zone="Nowhere/Atlantis")  # e.g. tzdata changed under us
    result = sync_cronjob(cronjob.pk, utc(2026, 1, 1, 2, 1))
    assert result is not None
    assert result.created == []
    assert result.events == ["InvalidTimeZone"]
