"""Output helpers: aligned tables like vcctl's, JSON/YAML for scripts, describe-style dumps, ages."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

import yaml

FORMATS = ("json", "yaml")
NO_RESOURCES = "No resources found"


def write(text: str = "", stream: TextIO | None = None) -> None:
    """Write one line to stdout (or ``stream``)."""
    (stream or sys.stdout).write(text + "\n")


def emit(data: Any, fmt: str) -> None:
    """Write ``data`` as JSON or YAML."""
    if fmt == "json":
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write an aligned table (columns separated by at least two spaces), or vcctl's empty message."""
    if not rows:
        write(NO_RESOURCES)
        return
    cells = [[str(h) for h in headers], *[["" if c is None else str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        line = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row))
        write(line.rstrip())


def parse_time(value: Any) -> datetime | None:
    """Parse an RFC 3339 timestamp (None when missing or malformed)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def date(value: Any) -> str:
    """Return ``YYYY-MM-DD`` of a timestamp, as vcctl's Creation column."""
    parsed = parse_time(value)
    return parsed.strftime("%Y-%m-%d") if parsed else ""


def age(value: Any, now: datetime | None = None) -> str:
    """Return a kubectl-style age (``45s``, ``3m``, ``5h``, ``2d``) of a timestamp."""
    parsed = parse_time(value)
    if parsed is None:
        return "<unknown>"
    seconds = max(int(((now or datetime.now(UTC)) - parsed).total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def describe(data: Any, indent: int = 0) -> list[str]:
    """Return describe-style lines (``Key:  value``, nested blocks indented, lists dashed)."""
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            label = _label(str(key))
            if isinstance(value, dict | list) and value:
                lines.append(f"{pad}{label}:")
                lines.extend(describe(value, indent + 1))
            else:
                lines.append(f"{pad}{label}:  {_scalar(value)}")
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, dict | list) and item:
                sub = describe(item, indent + 1)
                lines.append(f"{pad}- {sub[0].strip()}")
                lines.extend(sub[1:])
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    else:
        lines.append(f"{pad}{_scalar(data)}")
    return lines


def _scalar(value: Any) -> str:
    if value is None or value == {} or value == []:
        return "<none>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _label(key: str) -> str:
    """``minAvailable`` → ``Min Available`` (kubectl describe style); keys with dots or slashes stay."""
    if any(char in key for char in "/.- "):
        return key
    out = ""
    for i, char in enumerate(key):
        if char.isupper() and i and not key[i - 1].isupper():
            out += " "
        out += char
    return out[:1].upper() + out[1:]


def resources_text(values: dict[str, Any] | None) -> str:
    """Return ``cpu=1,memory=1Gi`` for a resource map (``<none>`` when empty)."""
    if not values:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in values.items())
