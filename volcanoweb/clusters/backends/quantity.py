"""Quantity helpers for the cluster backends: sums and display of Kubernetes quantities.

Parsing is the scheduling core's (``scheduler.quantity``), which is pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from scheduler.quantity import parse_quantity

__all__ = ["add_resources", "format_quantity", "parse_quantity"]

_BINARY = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def format_quantity(value: Decimal, binary: bool = False) -> str:
    """Render a Decimal as a quantity string ("0.5" → "500m"; binary: 2**30 → "1Gi")."""
    if value == value.to_integral_value():
        number = int(value)
        if binary and number:
            for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
                if number % _BINARY[suffix] == 0:
                    return f"{number // _BINARY[suffix]}{suffix}"
        return str(number)
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return str(value.normalize())


def add_resources(items: Iterable[Mapping[str, str]]) -> dict[str, Decimal]:
    """Sum resource dicts (name → quantity string) into name → Decimal."""
    total: dict[str, Decimal] = {}
    for item in items:
        for name, quantity in item.items():
            total[name] = total.get(name, Decimal(0)) + parse_quantity(quantity)
    return total
