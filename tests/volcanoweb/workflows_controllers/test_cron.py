"""The cronsim wrapper: validation messages, macros, time zones, DST, missed start times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from volcanoweb.workflows import cron

from .conftest import utc


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ("", "schedule is required, but got empty"),
        ("TZ=UTC 0 2 * * *", "should not contain TZ or CRON_TZ"),
        ("CRON_TZ=Europe/Riga 0 2 * * *", "should not contain TZ or CRON_TZ"),
        ("0 2 * *", "expected exactly 5 fields, found 4"),
        ("0 0 2 * * *", "expected exactly 5 fields, found 6"),
        ("61 * * * *", "minute value 61 is out of range 0-59"),
        ("0 24 * * *", "hour value 24 is out of range 0-23"),
        ("0 0 0 * *", "day-of-month value 0 is out of range 1-31"),
        ("0 0 * 13 *", "month value 13 is out of range 1-12"),
        ("0 0 * * 7", "day-of-week value 7 is out of range 0-6"),
        ("0 0 L * *", "bad day-of-month value 'L'"),
        ("*/0 * * * *", "minute step must be at least 1"),
        ("5-1 * * * *", "goes backwards"),
        ("@fortnightly", "unrecognized descriptor"),
        ("@every soon", "bad @every duration"),
    ],
)
def test_invalid_schedules_name_the_problem(schedule: str, fragment: str) -> None:
    problems = cron.schedule_errors(schedule)
    assert len(problems) == 1
    field, message = problems[0]
    assert field == "spec.schedule"
    assert fragment in message


@pytest.mark.parametrize(
    ("macro", "expression"),
    [
        ("@hourly", "0 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
    ],
)
def test_macros_expand_like_robfig(macro: str, expression: str) -> None:
    assert cron.cron_expression(macro) == expression
    assert cron.schedule_errors(macro) == []


def test_valid_forms() -> None:
    for schedule in ("0 2 * * *", "*/15 9-17 * * MON-FRI", "0 0 1,15 JAN-JUN ?", "@every 1h30m", "@every 90s"):
        assert cron.schedule_errors(schedule) == [], schedule


@pytest.mark.parametrize(
    ("zone", "fragment"),
    [
        ("", "timeZone must be nil or non-empty string, got empty string"),
        ("Local", "timeZone can't be Local"),
        ("../etc/passwd", "unknown timeZone"),
        ("Mars/Olympus_Mons", "invalid timeZone"),
    ],
)
def test_invalid_time_zones(zone: str, fragment: str) -> None:
    problems = cron.schedule_errors("0 2 * * *", zone)
    assert [field for field, _ in problems] == ["spec.timeZone"]
    assert fragment in problems[0][1]


def test_default_zone_is_the_configured_controller_zone(settings: object) -> None:
    schedule = cron.parse_schedule("0 2 * * *")
    assert schedule.zone_name == "UTC"
    assert schedule.next_after(utc(2026, 1, 1, 2, 0)) == utc(2026, 1, 2, 2, 0)
    settings.CRONJOB_DEFAULT_TIME_ZONE = "Asia/Tokyo"  # type: ignore[attr-defined]
    tokyo = cron.parse_schedule("0 2 * * *")
    assert tokyo.next_after(utc(2026, 1, 1, 0, 0)) == utc(2026, 1, 1, 17, 0)


def test_new_york_spring_forward_and_fall_back_fire_once() -> None:
    schedule = cron.parse_schedule("0 2 * * *", "America/New_York")
    spring = schedule.upcoming(utc(2026, 3, 7, 12, 0), 2)
    # 2026-03-08 02:00 does not exist: the run happens once, right after the gap (03:00 EDT).
    assert [schedule.local(t).strftime("%m-%d %H:%M %Z") for t in spring] == ["03-08 03:00 EDT", "03-09 02:00 EDT"]
    fall = schedule.upcoming(utc(2026, 10, 31, 12, 0), 2)
    assert [schedule.local(t).strftime("%m-%d %H:%M %Z") for t in fall] == ["11-01 02:00 EST", "11-02 02:00 EST"]


def test_riga_ambiguous_hour_fires_once() -> None:
    schedule = cron.parse_schedule("30 3 * * *", "Europe/Riga")
    times = schedule.upcoming(utc(2026, 10, 24, 12, 0), 3)
    assert times == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30), utc(2026, 10, 27, 1, 30)]
    spring = schedule.upcoming(utc(2026, 3, 28, 12, 0), 2)
    assert [schedule.local(t).strftime("%H:%M") for t in spring] == ["04:00", "03:30"]


def test_next_after_is_strictly_after() -> None:
    schedule = cron.parse_schedule("0 2 * * *")
    assert schedule.next_after(utc(2026, 5, 1, 2, 0)) == utc(2026, 5, 2, 2, 0)
    assert schedule.next_after(utc(2026, 5, 1, 1, 59, 59)) == utc(2026, 5, 1, 2, 0)


def test_missed_runs_returns_only_the_most_recent() -> None:
    schedule = cron.parse_schedule("0 2 * * *")
    missed = cron.missed_runs(
        schedule, created=utc(2026, 1, 1), last_scheduled=utc(2026, 1, 2, 2), now=utc(2026, 1, 5, 3)
    )
    assert missed.scheduled == utc(2026, 1, 5, 2)
    assert missed.missed == 3
    assert not missed.too_many
    assert missed.next_time == utc(2026, 1, 6, 2)


def test_missed_runs_nothing_due() -> None:
    schedule = cron.parse_schedule("0 2 * * *")
    missed = cron.missed_runs(
        schedule, created=utc(2026, 1, 1), last_scheduled=utc(2026, 1, 2, 2), now=utc(2026, 1, 3, 1)
    )
    assert missed.scheduled is None
    assert missed.next_time == utc(2026, 1, 3, 2)


def test_too_many_missed() -> None:
    schedule = cron.parse_schedule("* * * * *")
    missed = cron.missed_runs(schedule, created=utc(2026, 1, 1), last_scheduled=None, now=utc(2026, 1, 8, 0, 0, 30))
    assert missed.too_many
    assert missed.scheduled == utc(2026, 1, 8, 0, 0)


def test_starting_deadline_limits_the_window() -> None:
    schedule = cron.parse_schedule("0 * * * *")
    missed = cron.missed_runs(
        schedule,
        created=utc(2026, 1, 1),
        last_scheduled=None,
        now=utc(2026, 1, 8, 0, 30),
        starting_deadline_seconds=600,
    )
    assert missed.scheduled is None  # 00:00 is 30 minutes ago, beyond the 10-minute deadline
    recent = cron.missed_runs(
        schedule, created=utc(2026, 1, 1), last_scheduled=None, now=utc(2026, 1, 8, 0, 5), starting_deadline_seconds=600
    )
    assert recent.scheduled == utc(2026, 1, 8, 0, 0)
    assert recent.missed == 1


def test_every_schedules() -> None:
    schedule = cron.parse_schedule("@every 1h30m")
    assert schedule.every == timedelta(minutes=90)
    missed = cron.missed_runs(schedule, created=utc(2026, 1, 1), last_scheduled=None, now=utc(2026, 1, 1, 4))
    assert missed.scheduled == utc(2026, 1, 1, 3)
    assert missed.missed == 2
    assert schedule.explain() == "Every 1h30m"


def test_explain_and_next_run_times_for_the_ui() -> None:
    assert cron.explain("0 2 * * *", "Europe/Riga") == "At 02:00 every day (Europe/Riga)"
    assert cron.explain("0 2 * *").startswith("invalid: schedule is not a valid cron expression")
    times = cron.next_run_times("@daily", None, datetime(2026, 1, 1, 12, tzinfo=UTC), 3)
    assert times == [utc(2026, 1, 2), utc(2026, 1, 3), utc(2026, 1, 4)]
    assert cron.next_run_times("nonsense", None, utc(2026, 1, 1), 3) == []


def test_job_name_suffix_is_unix_minutes() -> None:
    assert cron.job_name_suffix(utc(2026, 1, 1, 2, 0)) == str(int(utc(2026, 1, 1, 2, 0).timestamp()) // 60)
