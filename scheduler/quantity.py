"""Kubernetes resource quantities: parsing to exact integers and formatting for display."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

__all__ = [
    "BYTE_RESOURCES",
    "SLA_ANNOTATION",
    "QuantityError",
    "format_quantity",
    "parse_cpu",
    "parse_duration",
    "parse_memory",
    "parse_quantity",
    "parse_resource",
]


class QuantityError(ValueError):
    """A value is not a valid Kubernetes quantity (or not valid for its resource)."""


_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

_QUANTITY_RE = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)$"
)

#: Resources measured in bytes (besides ``memory``); ``hugepages-*`` is handled by prefix.
BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


def parse_quantity(value: str | int | float) -> Decimal:
    """Return the exact value of a Kubernetes quantity such as ``"1.5Gi"``, ``"250m"`` or ``"1e3"``.

    Accepts every suffix Kubernetes accepts (``n u m k M G T P E Ki Mi Gi Ti Pi Ei``), decimal
    exponents (``1e3``, ``1E-2``), an optional sign, and plain ints/floats (as YAML gives them).
    Raises :class:`QuantityError` naming the bad value otherwise.
    """
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}: expected a number or a quantity string")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}: not a finite number")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(
            f"invalid quantity {value!r}: expected a number or a quantity string, got {type(value).__name__}"
        )
    text = value.strip()
    match = _QUANTITY_RE.match(text)
    if match is None:
        raise QuantityError(f"invalid quantity {value!r}: expected <number><suffix> such as 500m, 2, 1.5Gi or 1e3")
    try:
        number = Decimal(match["number"])
    except InvalidOperation as exc:  # pragma: no cover - the regex only admits valid numbers
        raise QuantityError(f"invalid quantity {value!r}") from exc
    suffix = match["suffix"]
    if suffix in _BINARY:
        number *= Decimal(1024) ** _BINARY[suffix]
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        exponent = int(suffix[1:])
        if abs(exponent) > 100:
            raise QuantityError(f"invalid quantity {value!r}: exponent out of range")
        number = number.scaleb(exponent)
    else:
        number = number.scaleb(_DECIMAL[suffix])
    return -number if match["sign"] == "-" else number


def _ceil(amount: Decimal) -> int:
    return int(amount.to_integral_value(rounding="ROUND_CEILING"))


def parse_cpu(value: str | int | float) -> int:
    """Return a cpu quantity in millicores, rounding up like Kubernetes (``"0.1m"`` → 1)."""
    return _ceil(parse_quantity(value) * 1000)


def parse_memory(value: str | int | float) -> int:
    """Return a byte quantity in bytes, rounding up fractional bytes like Kubernetes."""
    return _ceil(parse_quantity(value))


def is_byte_resource(name: str) -> bool:
    """Return whether the resource ``name`` is measured in bytes."""
    return name in BYTE_RESOURCES or name.startswith("hugepages-")


def parse_resource(name: str, value: str | int | float) -> int:
    """Return ``value`` of resource ``name`` as a non-negative integer in the scheduler's unit.

    * ``cpu`` → millicores (rounded up);
    * ``memory``, ``ephemeral-storage``, ``storage``, ``hugepages-*`` → bytes (rounded up);
    * ``pods`` and every other (scalar / extended) resource such as ``nvidia.com/gpu`` → whole
      units. Kubernetes only admits whole numbers for extended resources; a fractional value
      (possible in a Queue's capability) is rounded **up** to the next whole unit. Volcano keeps
      scalars in milli-units internally; with whole units every comparison is exact, which is
      what Volcano's 0.1-milli tolerance approximates (see docs/scheduler.md).
    """
    if not isinstance(name, str) or not name:
        raise QuantityError(f"invalid resource name {name!r}")
    amount = parse_quantity(value)
    if amount < 0:
        raise QuantityError(f"invalid quantity {value!r} for {name}: must not be negative")
    if name == "cpu":
        return _ceil(amount * 1000)
    return _ceil(amount)


_BINARY_DISPLAY = (("Ei", 1024**6), ("Pi", 1024**5), ("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024))
_DECIMAL_DISPLAY = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def format_quantity(name: str, amount: int) -> str:
    """Return a Kubernetes-style display string for ``amount`` of resource ``name``.

    ``format_quantity("cpu", 1500) == "1500m"``, ``format_quantity("cpu", 2000) == "2"``,
    ``format_quantity("memory", 4 * 1024**3) == "4Gi"``, ``format_quantity("nvidia.com/gpu", 2)
    == "2"``. Every output parses back to the same amount with :func:`parse_resource`.
    """
    if name == "cpu":
        if amount % 1000 == 0:
            return str(amount // 1000)
        return f"{amount}m"
    if is_byte_resource(name) and amount != 0:
        for suffix, size in _BINARY_DISPLAY:
            if amount % size == 0:
                return f"{amount // size}{suffix}"
        for suffix, size in _DECIMAL_DISPLAY:
            if amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)


#: The PodGroup annotation (and sla plugin argument) holding a job's SLA waiting time.
SLA_ANNOTATION = "sla-waiting-time"

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str, *, plain_seconds: bool = False) -> float:
    """Return Go's ``time.ParseDuration(text)`` in seconds; raise ValueError if invalid.

    The one duration parser of the project: policy timeouts, the SLA waiting time, ``@every``
    schedules and the sim cluster's duration annotation all use it. ``plain_seconds`` also accepts a
    bare number of seconds (``"12"``), which Go does not; only the sim annotation allows it.
    """
    if not isinstance(text, str):
        raise ValueError(f"invalid duration {text!r}: expected a string such as 1h2m3s")
    s = text.strip()
    if plain_seconds:
        try:
            seconds = float(s)
        except ValueError:
            pass
        else:
            if math.isfinite(seconds):
                return seconds
            raise ValueError(f"invalid duration {text!r}")
    sign = 1.0
    if s[:1] in ("+", "-"):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    pos, total = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r} (expected e.g. 1h2m3s, units ns us ms s m h)")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def duration_problem(value: object) -> str | None:
    """Why ``value`` is not a Go duration (an ``ArgSpec`` check), or None when it is one."""
    try:
        parse_duration(str(value))
    except ValueError as exc:
        return str(exc)
    return None


_DAYS = re.compile(r"^(\d+(?:\.\d+)?)d$")


def parse_window(text: str) -> float:
    """Return the seconds of a time window as the dashboards and the insights API take it: a plain number of
    seconds (``90``), a Go duration (``5m``, ``1h30m``) or days (``7d``); positive. Raise ValueError if not."""
    s = text.strip() if isinstance(text, str) else ""
    days = _DAYS.match(s)
    try:
        seconds = float(days[1]) * 86400 if days else parse_duration(s, plain_seconds=True)
    except ValueError:
        raise ValueError(
            f"invalid duration {text!r}: expected seconds or a duration such as 30s, 5m, 1h or 7d"
        ) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"invalid duration {text!r}: must be positive")
    return seconds
