"""What every kind's decoder shares: the error naming document, object and field, the typed field
readers (:class:`Ctx`) and RFC 3339 times (parsed by hand: the core imports no clock module)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scheduler.quantity import QuantityError, parse_resource


class ManifestError(ValueError):
    """A manifest cannot be turned into scheduler input; names document, object and field."""

    def __init__(self, document: int, obj: str, field: str, message: str) -> None:
        self.document = document
        self.object = obj
        self.field = field
        self.detail = message
        where = f"document {document}"
        if obj:
            where += f" ({obj})"
        if field:
            where += f", field {field}"
        super().__init__(f"{where}: {message}")


class Ctx:
    """The typed readers of one object's fields: each raises a :class:`ManifestError` naming the object's
    document, the object and the field."""

    def __init__(self, index: int, obj: str) -> None:
        self.index = index
        self.obj = obj

    def error(self, field: str, message: str) -> ManifestError:
        return ManifestError(self.index, self.obj, field, message)

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(field, f"expected a mapping, got {type(value).__name__}")
        return value

    def seq(self, value: Any, field: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(field, f"expected a list, got {type(value).__name__}")
        return value

    def string(self, value: Any, field: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {value!r}")
        return value

    def integer(self, value: Any, field: str, default: int) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(field, f"expected an integer, got {value!r}")
        return value

    def boolean(self, value: Any, field: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(field, f"expected a boolean, got {value!r}")
        return value

    def resources(self, value: Any, field: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, q in self.mapping(value, field).items():
            try:
                out[str(name)] = parse_resource(str(name), q)
            except QuantityError as exc:
                raise self.error(f"{field}.{name}", str(exc)) from None
        return out

    def labels(self, value: Any, field: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v in self.mapping(value, field).items():
            if not isinstance(v, str):
                raise self.error(f"{field}.{k}", f"expected a string value, got {v!r}")
            out[str(k)] = v
        return out


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$")


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def parse_timestamp(ctx: Ctx, value: Any, field: str) -> float:
    """Return an RFC 3339 time (YAML may have parsed it already) in epoch seconds; 0 if absent.

    A time without offset is UTC. Parsed by hand: the core imports no clock module."""
    if value is None or value == "":
        return 0.0
    text = value.isoformat() if hasattr(value, "isoformat") else value
    m = _RFC3339.match(text) if isinstance(text, str) else None
    if m is None:
        raise ctx.error(field, f"expected an RFC 3339 time such as 2024-01-01T00:00:00Z, got {value!r}")
    y, mo, d, h, mi, sec = (int(m.group(i)) for i in range(1, 7))
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and sec <= 60):
        raise ctx.error(field, f"invalid time {value!r}")
    seconds = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec + float(m.group(7) or 0)
    if m.group(9):
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        seconds -= offset if m.group(9) == "+" else -offset
    return float(seconds)


def timestamp(value: Any) -> float:
    """An RFC 3339 time in seconds since the epoch (raises ManifestError, a ValueError)."""
    return parse_timestamp(Ctx(1, ""), value, "time")
