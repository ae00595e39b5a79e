"""Minimal Kubernetes resource quantity parsing for the cluster backends.

The backends only need quantities to add up pod requests and check them
against node allocatable (the simulator's kubelet admission). The scheduling
core has its own, richer parser; this one is kept local so the backends stay
importable on their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation

_BINARY = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


def parse_quantity(value: str | int | float | Decimal) -> Decimal:
    """Return the numeric value of a Kubernetes quantity ("500m", "4Gi", "2")."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int | float):
        return Decimal(str(value))
    text = value.strip()
    if not text:
        raise ValueError("empty quantity")
    suffix = text[-2:]
    if suffix in _BINARY:
        return _number(text[:-2], value) * _BINARY[suffix]
    if text[-1] in _DECIMAL and text[-1] != "":
        return _number(text[:-1], value) * _DECIMAL[text[-1]]
    return _number(text, value)


def _number(text: str, original: object) -> Decimal:
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"invalid quantity {original!r}") from None
    if not number.is_finite():
        raise ValueError(f"invalid quantity {original!r}")
    return number


def format_quantity(value: Decimal) -> str:
    """Render a Decimal back as a plain quantity string ("0.5" → "500m")."""
    if value == value.to_integral_value():
        return str(int(value))
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
