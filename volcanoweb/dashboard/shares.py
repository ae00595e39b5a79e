"""What-if for queue shares: Volcano's proportion water-filling as a small pure function.

The scheduler core computes deserved shares inside ``scheduler.plugins.shares.ProportionPlugin``
(bound to a Session), and does not expose the computation on its own; this mirrors the same
steps so the dashboard can preview a weight, guarantee or capability change before it is saved:

* ``real capability = min(capability, total - Σ guarantees + own guarantee)``;
* repeat: give every unsatisfied queue ``weight / Σ weights`` of what remains, clamp to
  ``min(real capability, request)`` and ``max(guarantee)``; a queue is satisfied once its request
  fits or its share stops changing; stop when nothing remains or nothing moved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

EPS = 1e-9


@dataclass
class QueueDemand:
    """One queue's input: weight, optional capability, guarantee, and request (None: unbounded)."""

    name: str
    weight: int
    capability: Mapping[str, float] = field(default_factory=dict)
    guarantee: Mapping[str, float] = field(default_factory=dict)
    request: Mapping[str, float] | None = None


def deserved_shares(total: Mapping[str, float], queues: Sequence[QueueDemand]) -> dict[str, dict[str, float]]:
    """Return each queue's deserved resources (same keys as ``total``) by weighted water-filling."""
    dims = list(total)
    tot = [float(total[d]) for d in dims]
    guarantee_sum = [sum(float(q.guarantee.get(d, 0)) for q in queues) for d in dims]
    state: dict[str, dict[str, list[float]]] = {}
    for q in queues:
        g = [float(q.guarantee.get(d, 0)) for d in dims]
        real = [max(t - gs, 0.0) + gi for t, gs, gi in zip(tot, guarantee_sum, g, strict=True)]
        if q.capability:
            real = [min(r, float(q.capability[d])) if d in q.capability else r for r, d in zip(real, dims, strict=True)]
        req = [math.inf] * len(dims) if q.request is None else [float(q.request.get(d, 0)) for d in dims]
        state[q.name] = {"deserved": [0.0] * len(dims), "real": real, "request": req, "guarantee": g}
    remaining = list(tot)
    met: set[str] = set()
    for _ in range(1000):
        total_weight = sum(q.weight for q in queues if q.name not in met)
        if total_weight <= 0:
            break
        old_remaining = list(remaining)
        inc = [0.0] * len(dims)
        dec = [0.0] * len(dims)
        for q in queues:
            if q.name in met:
                continue
            s = state[q.name]
            old = list(s["deserved"])
            ratio = q.weight / total_weight
            new = [x + r * ratio for x, r in zip(old, remaining, strict=True)]
            new = [min(x, c, rq) for x, c, rq in zip(new, s["real"], s["request"], strict=True)]
            new = [max(x, g) for x, g in zip(new, s["guarantee"], strict=True)]
            s["deserved"] = new
            if all(rq <= x + EPS for rq, x in zip(s["request"], new, strict=True)) or new == old:
                met.add(q.name)
            for i, (n, o) in enumerate(zip(new, old, strict=True)):
                inc[i] += max(n - o, 0.0)
                dec[i] += max(o - n, 0.0)
        remaining = [max(r + d - i, 0.0) for r, d, i in zip(remaining, dec, inc, strict=True)]
        if all(r <= EPS for r in remaining) or remaining == old_remaining:
            break
    return {name: dict(zip(dims, s["deserved"], strict=True)) for name, s in state.items()}
