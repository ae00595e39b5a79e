"""The one Go-duration parser (``scheduler.quantity.parse_duration``): every valid and invalid input.

Its users: LifecyclePolicy timeouts (admission and the job controller), the sla plugin's waiting time,
``@every`` schedules, and the sim cluster's ``sim.volcanoweb.io/duration`` annotation (``plain_seconds``).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.quantity import parse_duration, parse_window

VALID = [
    ("0", 0.0),
    ("0s", 0.0),
    ("3m", 180.0),
    ("90s", 90.0),
    ("1m30s", 90.0),
    ("1h2m3s4ms", 3723.004),
    ("1.5h", 5400.0),
    (".5s", 0.5),
    ("1.s", 1.0),
    ("300ms", 0.3),
    ("2us", 2e-6),
    ("2µs", 2e-6),
    ("7ns", 7e-9),
    ("+5m", 300.0),
    ("-5m", -300.0),
    (" 10m ", 600.0),
]

INVALID: list[Any] = ["", " ", "3", "1d", "m3", "1h 2m", "5 minutes", "h", "1.5", "-", "--1s", "1s2", "soon", None, 5]


@pytest.mark.parametrize(("text", "seconds"), VALID)
def test_valid_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert parse_duration(text, plain_seconds=True) == pytest.approx(seconds)


@pytest.mark.parametrize("text", INVALID)
def test_invalid_go_durations_raise_never_zero(text: Any) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(("text", "seconds"), [("12", 12.0), ("2.5", 2.5), (" 30 ", 30.0)])
def test_plain_seconds_only_when_asked(text: str, seconds: float) -> None:
    assert parse_duration(text, plain_seconds=True) == seconds
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["nan", "inf", "5 minutes", "1d"])
def test_plain_seconds_still_refuses_the_rest(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text, plain_seconds=True)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("7d", 604800.0), ("0.5d", 43200.0)],
)
def test_a_window_takes_seconds_go_durations_and_days(text: str, seconds: float) -> None:
    assert parse_window(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "0", "-5m", "7w", "1d2h", "inf", "nan", "5 m"])
def test_a_window_refuses_what_is_not_a_positive_duration(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_window(text)
