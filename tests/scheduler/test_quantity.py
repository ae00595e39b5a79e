"""Kubernetes quantity parsing and formatting."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scheduler.quantity import (
    QuantityError,
    format_quantity,
    parse_cpu,
    parse_memory,
    parse_quantity,
    parse_resource,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Decimal(1)),
        ("250m", Decimal("0.25")),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+2", Decimal(2)),
        ("-2", Decimal(-2)),
        ("100n", Decimal("1E-7")),
        ("3u", Decimal("3E-6")),
        ("2k", Decimal(2000)),
        ("2M", Decimal(2_000_000)),
        ("1G", Decimal(10**9)),
        ("1T", Decimal(10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),
        ("1Ki", Decimal(1024)),
        ("1Mi", Decimal(1024**2)),
        ("1.5Gi", Decimal(3 * 1024**3 // 2)),
        ("1Ti", Decimal(1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("12e-3", Decimal("0.012")),
        ("1e+2", Decimal(100)),
        (3, Decimal(3)),
        (0.5, Decimal("0.5")),
    ],
)
def test_it_parses_every_suffix_and_exponent(text: str | int | float, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "1Kb", "1 Gi", "Gi", "1e", "--1", "1ki", True, None, [1]])
def test_it_rejects_bad_quantities_naming_the_value(bad: object) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(bad)  # type: ignore[arg-type]


def test_cpu_rounds_up_to_millicores() -> None:
    assert parse_cpu("0.1m") == 1
    assert parse_cpu("1.0001") == 1001
    assert parse_cpu("2") == 2000
    assert parse_cpu("250m") == 250


def test_memory_is_bytes_rounded_up() -> None:
    assert parse_memory("1Gi") == 1024**3
    assert parse_memory("1.5") == 2
    assert parse_memory("128974848") == 128974848
    assert parse_memory("129e6") == 129_000_000


def test_resource_units() -> None:
    assert parse_resource("cpu", "1.5") == 1500
    assert parse_resource("memory", "4Gi") == 4 * 1024**3
    assert parse_resource("ephemeral-storage", "1Ki") == 1024
    assert parse_resource("nvidia.com/gpu", "2") == 2
    assert parse_resource("nvidia.com/gpu", "0.5") == 1  # whole units, rounded up
    assert parse_resource("pods", 110) == 110


def test_negative_resources_are_rejected_with_the_name() -> None:
    with pytest.raises(QuantityError, match="cpu"):
        parse_resource("cpu", "-1")


@pytest.mark.parametrize(
    ("name", "amount", "text"),
    [
        ("cpu", 1500, "1500m"),
        ("cpu", 2000, "2"),
        ("memory", 4 * 1024**3, "4Gi"),
        ("memory", 1536 * 1024**2, "1536Mi"),
        ("memory", 2_000_000, "2M"),
        ("memory", 1001, "1001"),
        ("nvidia.com/gpu", 2, "2"),
        ("memory", 0, "0"),
    ],
)
def test_format_quantity_round_trips(name: str, amount: int, text: str) -> None:
    assert format_quantity(name, amount) == text
    assert parse_resource(name, text) == amount
