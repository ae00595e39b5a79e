"""The scheduler's messages as the cluster's users read them (PodGroup conditions and events, which
``kubectl describe`` shows): the core prints resource vectors in its own units (``{'cpu': 10000}``:
millicores, bytes, counts, as Volcano prints its resource lists); here they become Kubernetes quantities
(``10 cpu``, ``32Gi memory``, ``8 nvidia.com/gpu``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from scheduler.quantity import format_quantity

__all__ = ["readable", "rewrite_vectors"]

_VECTOR = re.compile(r"\{'[\w./-]+': -?[\d.e+]+(?:, '[\w./-]+': -?[\d.e+]+)*\}")


def rewrite_vectors(message: str, render: Callable[[dict[str, Any]], str]) -> str:
    """``message`` with each resource vector the core printed replaced by ``render(vector)``."""

    def one(match: re.Match[str]) -> str:
        try:
            values = ast.literal_eval(match.group(0))
        except (ValueError, SyntaxError):
            return match.group(0)
        return render(values) if isinstance(values, dict) else match.group(0)

    return _VECTOR.sub(one, message or "")


def _quantities(values: dict[str, Any]) -> str:
    parts = [
        f"{format_quantity(name, int(amount))} {name}"
        for name, amount in values.items()
        if isinstance(amount, int | float) and not isinstance(amount, bool) and name != "pods"
    ]
    return " and ".join(parts) if parts else "nothing"


def readable(message: str) -> str:
    """``message`` with each resource vector written in Kubernetes quantities."""
    return rewrite_vectors(message, _quantities)
