"""CronJob schedules: the one place that knows the cron library (cronsim), so it can be swapped.

Kubernetes (and Volcano's CronJob controller, a copy of it) parse ``spec.schedule`` with robfig/cron's
``ParseStandard``: five fields (minute hour day-of-month month day-of-week, ``*``/``?``, lists, ranges,
steps, three-letter month and weekday names), the ``@yearly``/``@annually``/``@monthly``/``@weekly``/
``@daily``/``@midnight``/``@hourly`` macros and ``@every <duration>``. A ``TZ=``/``CRON_TZ=`` prefix is
rejected: the time zone belongs in ``spec.timeZone``. Without ``timeZone`` a schedule runs in the
controller's local time zone, which here is ``settings.CRONJOB_DEFAULT_TIME_ZONE`` (default
``settings.TIME_ZONE``).

Times are computed by cronsim, which handles daylight-saving changes as cron does: a time in the
hour skipped by spring-forward fires once, right after the gap; a time in the hour repeated by
fall-back fires once (on its first occurrence).
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from cronsim import CronSim, CronSimError
from django.conf import settings

from scheduler.quantity import parse_duration

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MAX_MISSED = 100
"""More missed start times than this gives the ``TooManyMissedTimes`` warning (Kubernetes' limit)."""

_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")),
    ("day-of-week", 0, 6, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")),
)
_TZ_PART_RE = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


class ScheduleError(ValueError):
    """A schedule or time zone that cannot be used; ``field`` is the manifest path to blame."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _check_field(index: int, text: str) -> str | None:
    """Return a message when one cron field uses syntax robfig/cron would reject (cronsim accepts more)."""
    name, low, high, names = _FIELDS[index]
    for item in text.split(","):
        range_part, _, step = item.partition("/")
        if "/" in item and not step.isdigit():
            return f"bad {name} step in {item!r}"
        if "/" in item and int(step) == 0:
            return f"{name} step must be at least 1 in {item!r}"
        if range_part in ("*", "?"):
            continue
        bounds = range_part.split("-")
        if len(bounds) > 2:
            return f"bad {name} range {range_part!r}"
        values = []
        for bound in bounds:
            upper = bound.upper()
            if upper in names:
                values.append(names.index(upper) + low)
            elif bound.isdigit():
                values.append(int(bound))
            else:
                return f"bad {name} value {bound!r}"
        for value in values:
            if not low <= value <= high:
                return f"{name} value {value} is out of range {low}-{high}"
        if len(values) == 2 and values[0] > values[1]:
            return f"{name} range {range_part!r} goes backwards"
    return None


def parse_every(text: str) -> timedelta:
    """Return the interval of an ``@every <Go duration>`` schedule, truncated to whole seconds (at least 1 s)."""
    body = text.strip()[len("@every") :].strip()
    try:
        seconds = parse_duration(body) if body[:1] not in ("", "+", "-") else -1.0
    except ValueError:
        seconds = -1.0
    if seconds < 0:
        raise ScheduleError("spec.schedule", f"schedule is not a valid cron expression: bad @every duration {body!r}")
    return timedelta(seconds=max(1, int(seconds)))


def cron_expression(schedule: str) -> str:
    """Return the five-field expression for a schedule (macros expanded); raise ScheduleError if invalid.

    ``@every`` schedules have no five-field form: use :func:`parse_schedule` for them.
    """
    text = " ".join(schedule.split())
    if not text:
        raise ScheduleError("spec.schedule", "schedule is required, but got empty")
    if "TZ" in text:
        raise ScheduleError(
            "spec.schedule", "schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field"
        )
    if text.startswith("@"):
        if text in MACROS:
            return MACROS[text]
        raise ScheduleError(
            "spec.schedule", f"schedule is not a valid cron expression: unrecognized descriptor {text!r}"
        )
    fields = text.split(" ")
    if len(fields) != 5:
        raise ScheduleError(
            "spec.schedule", f"schedule is not a valid cron expression: expected exactly 5 fields, found {len(fields)}"
        )
    for index, field in enumerate(fields):
        problem = _check_field(index, field)
        if problem:
            raise ScheduleError("spec.schedule", f"schedule is not a valid cron expression: {problem}")
    expression = text.replace("?", "*")
    try:
        CronSim(expression, datetime(2026, 1, 1, tzinfo=UTC))
    except (CronSimError, ValueError) as exc:
        raise ScheduleError("spec.schedule", f"schedule is not a valid cron expression: {exc}") from exc
    return expression


def default_time_zone_name() -> str:
    """Return the zone used by CronJobs without ``timeZone`` (Kubernetes: the controller's local time)."""
    return str(getattr(settings, "CRONJOB_DEFAULT_TIME_ZONE", None) or settings.TIME_ZONE or "UTC")


def resolve_time_zone(time_zone: str | None) -> tzinfo:
    """Return the zone for ``spec.timeZone`` (None: the default zone); raise ScheduleError as the webhook words it."""
    if time_zone is None:
        time_zone = default_time_zone_name()
        if time_zone == "UTC":
            return UTC
    elif time_zone == "":
        raise ScheduleError("spec.timeZone", "timeZone must be nil or non-empty string, got empty string")
    else:
        for part in time_zone.split("/"):
            if part in (".", "..") or part.startswith("-") or not _TZ_PART_RE.match(part):
                raise ScheduleError("spec.timeZone", f"unknown timeZone {time_zone!r}")
        if time_zone == "Local":
            raise ScheduleError(
                "spec.timeZone", "timeZone can't be Local, and must be defined in https://www.iana.org/time-zones"
            )
    try:
        return zoneinfo.ZoneInfo(time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError("spec.timeZone", f"invalid timeZone {time_zone!r}") from exc


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule in its time zone. All datetimes in and out are timezone-aware."""

    text: str
    expression: str | None
    every: timedelta | None
    zone: tzinfo
    zone_name: str

    def next_after(self, moment: datetime) -> datetime | None:
        """Return the first start time strictly after ``moment`` (in UTC), or None if there is none."""
        if self.every is not None:
            return moment.astimezone(UTC).replace(microsecond=0) + self.every
        assert self.expression is not None
        local = moment.astimezone(self.zone)
        sim = CronSim(self.expression, local)
        for _ in range(3):  # cronsim works in wall time around DST changes; never return a time at or before moment
            try:
                candidate = next(sim).astimezone(UTC)
            except StopIteration:
                return None
            if candidate > moment:
                return candidate
        return None

    def upcoming(self, moment: datetime, count: int) -> list[datetime]:
        """Return the next ``count`` start times after ``moment`` (in UTC)."""
        times: list[datetime] = []
        current = moment
        while len(times) < count:
            nxt = self.next_after(current)
            if nxt is None:
                break
            times.append(nxt)
            current = nxt
        return times

    def latest_at_or_before(self, moment: datetime) -> datetime | None:
        """Return the most recent start time at or before ``moment`` (in UTC), or None."""
        if self.every is not None:
            raise ValueError("@every schedules have no fixed grid; use missed_runs()")
        assert self.expression is not None
        local = (moment.astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1)).astimezone(self.zone)
        sim = CronSim(self.expression, local, reverse=True)
        try:
            return next(sim).astimezone(UTC)
        except StopIteration:
            return None

    def local(self, moment: datetime) -> datetime:
        """Return ``moment`` in the schedule's time zone."""
        return moment.astimezone(self.zone)

    def explain(self) -> str:
        """Return a human description, e.g. ``At 02:00 (Europe/Riga)``."""
        if self.every is not None:
            return f"Every {_format_interval(self.every)}"
        assert self.expression is not None
        text = CronSim(self.expression, datetime(2026, 1, 1, tzinfo=UTC)).explain()
        return f"{text} ({self.zone_name})"


def _format_interval(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts) or "0s"


def parse_schedule(schedule: str, time_zone: str | None = None) -> Schedule:
    """Return the :class:`Schedule` for ``spec.schedule`` and ``spec.timeZone``; raise ScheduleError if invalid."""
    if not isinstance(schedule, str):
        raise ScheduleError("spec.schedule", "schedule must be a string")
    text = " ".join(schedule.split())
    zone = resolve_time_zone(time_zone)
    zone_name = time_zone or default_time_zone_name()
    if text.startswith("@every"):
        if "TZ" in text:
            cron_expression(text)  # raises the TZ message
        return Schedule(text, None, parse_every(text), zone, zone_name)
    return Schedule(text, cron_expression(text), None, zone, zone_name)


def schedule_errors(schedule: object, time_zone: object = None) -> list[tuple[str, str]]:
    """Return ``(field, message)`` pairs for an unusable schedule/time zone (empty when both are fine)."""
    problems: list[tuple[str, str]] = []
    if not isinstance(schedule, str):
        message = "schedule is required, but got empty" if schedule is None else "schedule must be a string"
        problems.append(("spec.schedule", message))
    else:
        try:
            if " ".join(schedule.split()).startswith("@every"):
                parse_every(schedule)
            else:
                cron_expression(schedule)
        except ScheduleError as exc:
            problems.append((exc.field, exc.message))
    if time_zone is not None and not isinstance(time_zone, str):
        problems.append(("spec.timeZone", "timeZone must be a string"))
    else:
        try:
            resolve_time_zone(time_zone if isinstance(time_zone, str) or time_zone is None else None)
        except ScheduleError as exc:
            problems.append((exc.field, exc.message))
    return problems


@dataclass(frozen=True)
class MissedRuns:
    """The outcome of looking for unmet start times between ``earliest`` and ``now``.

    ``scheduled`` is the most recent start time in ``(earliest, now]`` (None: nothing is due);
    ``missed`` counts the start times in that window, but stops counting at ``MAX_MISSED + 1``;
    ``next_time`` is the first start time after ``now``.
    """

    earliest: datetime
    scheduled: datetime | None
    missed: int
    next_time: datetime | None

    @property
    def too_many(self) -> bool:
        """Return True when more than ``MAX_MISSED`` start times were missed."""
        return self.missed > MAX_MISSED


def missed_runs(
    schedule: Schedule,
    *,
    created: datetime,
    last_scheduled: datetime | None,
    now: datetime,
    starting_deadline_seconds: int | None = None,
) -> MissedRuns:
    """Return the most recent unmet start time, as Kubernetes' ``mostRecentScheduleTime`` computes it.

    The window starts at the last schedule time (or the creation time); with a starting deadline it
    never starts earlier than ``now - deadline``. Only the most recent start time is returned: missed
    runs are not back-filled.
    """
    earliest = last_scheduled or created
    if starting_deadline_seconds is not None:
        deadline = now - timedelta(seconds=starting_deadline_seconds)
        earliest = max(earliest, deadline)
    first = schedule.next_after(earliest)
    if first is None or first > now:
        return MissedRuns(earliest, None, 0, first)
    if schedule.every is not None:
        step = schedule.every.total_seconds()
        count = int((now - first).total_seconds() // step) + 1
        latest = first + schedule.every * (count - 1)
        return MissedRuns(earliest, latest, count, latest + schedule.every)
    count = 1
    latest = first
    while count <= MAX_MISSED:
        nxt = schedule.next_after(latest)
        if nxt is None or nxt > now:
            return MissedRuns(earliest, latest, count, nxt)
        latest = nxt
        count += 1
    # More than MAX_MISSED: jump straight to the most recent start time instead of walking there.
    recent = schedule.latest_at_or_before(now)
    if recent is None or recent < latest:
        recent = latest
    return MissedRuns(earliest, recent, count, schedule.next_after(now))


def job_name_suffix(scheduled: datetime) -> str:
    """Return Kubernetes' job-name suffix for a start time: unix seconds / 60."""
    return str(int(scheduled.timestamp()) // 60)


def explain(schedule: str, time_zone: str | None = None) -> str:
    """Return a human description of a schedule, or the reason it is invalid (for the UI)."""
    try:
        return parse_schedule(schedule, time_zone).explain()
    except ScheduleError as exc:
        return f"invalid: {exc.message}"


def next_run_times(schedule: str, time_zone: str | None, after: datetime, count: int = 5) -> list[datetime]:
    """Return the next ``count`` start times after ``after`` (UTC); [] for an invalid schedule (for the UI)."""
    try:
        return parse_schedule(schedule, time_zone).upcoming(after, count)
    except ScheduleError:
        return []
