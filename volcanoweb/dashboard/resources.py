"""Resource amounts for display: Kubernetes quantity strings to numbers in the units people read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.quantity import QuantityError, parse_resource

CPU, MEMORY, GPU = "cpu", "memory", "nvidia.com/gpu"
#: The resources every page shows, in order, with their label and display unit.
MAIN_RESOURCES = ((CPU, "CPU", "cores"), (MEMORY, "Memory", "GiB"), (GPU, "GPU", "GPUs"))
GIB = 1024**3


def to_units(name: str, amount: float) -> float:
    """Convert the scheduler's integer unit (millicores, bytes, counts) to cores / GiB / counts."""
    if name == CPU:
        return amount / 1000
    if name in (MEMORY, "ephemeral-storage"):
        return amount / GIB
    return float(amount)


def parse_map(values: Mapping[str, Any] | None) -> dict[str, int]:
    """Parse ``{"cpu": "4", "memory": "16Gi"}`` to scheduler integers; bad entries are skipped."""
    out: dict[str, int] = {}
    for name, value in (values or {}).items():
        try:
            out[name] = parse_resource(name, value)
        except (QuantityError, TypeError, ValueError):
            continue
    return out


def add_into(total: dict[str, float], values: Mapping[str, float]) -> None:
    """Add ``values`` into ``total`` in place."""
    for name, amount in values.items():
        total[name] = total.get(name, 0) + amount


def sum_maps(maps: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Return the sum of resource maps."""
    total: dict[str, float] = {}
    for item in maps:
        add_into(total, item)
    return total


def fmt(name: str, amount: float | None) -> str:
    """Format an amount in scheduler units for people: "4.5", "16", "0.25"; "\u2013" when unknown."""
    if amount is None or isinstance(amount, bool) or not isinstance(amount, int | float):
        return "\u2013"
    value = to_units(name, amount)
    if value == int(value):
        return f"{int(value):,}"
    if value < 10:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    text = f"{value:,.1f}"
    return text[:-2] if text.endswith(".0") else text  # 1535.9999 GiB is 1,536, not 1,536.0


#: Resources measured in scheduler units that are not counts of whole devices (the others are: a pod asks
#: whole GPUs, so a queue's share of them is usable only as whole ones).
DIVISIBLE = frozenset((CPU, MEMORY, "ephemeral-storage"))


def usable(name: str, amount: float | None) -> float | None:
    """A deserved share as it can be used: whole devices for a resource pods ask in whole units (4.27 GPU
    deserved lets a queue run 4 GPUs: a fifth would exceed it), the amount itself for CPU and memory."""
    if amount is None or name in DIVISIBLE:
        return amount
    return float(int(to_units(name, amount) + 1e-9))


def percent(part: float | None, whole: float | None) -> int:
    """Return ``part / whole`` as a whole percentage clamped to 0..100 (0 when whole is 0)."""
    if not whole or part is None:
        return 0
    return max(0, min(100, round(100 * part / whole)))
