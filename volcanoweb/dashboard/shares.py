"""Queue shares for the pages and the what-if: the scheduler's own proportion water-filling.

The numbers come from :func:`scheduler.proportion.water_fill`, the function the proportion plugin
runs when a session opens, so a preview of a weight, guarantee or capability change computes exactly
what the scheduler would. This module only converts between the pages' resource maps (scheduler
units, keyed by resource name) and the scheduler's vectors (cpu, memory, pods, then the other
resources in name order), with the plugin's conventions: a capability of 0 or none is unlimited,
and Σ guarantees counts every queue.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.proportion import QueueInput, water_fill

#: The scheduler's fixed leading dimensions (``scheduler.vec``: index 2, pods, is ignored by "is empty").
LEADING = ("cpu", "memory", "pods")


@dataclass
class QueueDemand:
    """One queue's input: weight, optional capability, guarantee, and request (None: unbounded)."""

    name: str
    weight: int
    capability: Mapping[str, float] = field(default_factory=dict)
    guarantee: Mapping[str, float] = field(default_factory=dict)
    request: Mapping[str, float] | None = None


def dimensions(total: Iterable[str]) -> tuple[str, ...]:
    """Return the scheduler's dimension order for a cluster with these resources."""
    return (*LEADING, *sorted(set(total) - set(LEADING)))


def deserved_shares(
    total: Mapping[str, float],
    queues: Sequence[QueueDemand],
    total_guarantee: Mapping[str, float] | None = None,
) -> dict[str, dict[str, float]]:
    """Return each queue's deserved resources (the keys of ``total``) by the scheduler's water-filling.

    ``total_guarantee`` is Σ guarantees of every queue, also those without demand (the scheduler
    counts all); by default the guarantees of ``queues``.
    """
    dims = dimensions(total)

    def vector(values: Mapping[str, float], default: float = 0.0) -> list[float]:
        return [float(values.get(d, default)) for d in dims]

    if total_guarantee is None:
        total_guarantee = {d: sum(float(q.guarantee.get(d, 0)) for q in queues) for d in dims}
    inputs = [
        QueueInput(
            q.name,
            q.weight,
            request=[math.inf] * len(dims) if q.request is None else vector(q.request),
            guarantee=vector(q.guarantee),
            capability=[float(c) if c > 0 else math.inf for c in vector(q.capability)],
        )
        for q in queues
    ]
    shares = water_fill(vector(total), vector(total_guarantee), inputs)
    return {
        name: {d: x for d, x in zip(dims, share.deserved, strict=True) if d in total} for name, share in shares.items()
    }
