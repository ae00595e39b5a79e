"""Volcano's proportion water-filling (deserved shares between queues) as one pure function.

:class:`scheduler.plugins.shares.ProportionPlugin` calls :func:`water_fill` when a session opens; the
web dashboard calls it too, for its queue shares and the what-if preview of a queue edit, so both
always compute the same numbers. Vectors are in a session's dimension order (``vec``: index 2 is
pods, which :func:`vec.is_empty` ignores); ``math.inf`` marks an unlimited dimension.

Steps (Volcano's ``proportion`` plugin, ``OnSessionOpen``):

* ``real capability = min(capability, total - Σ guarantees + own guarantee)``;
* repeat: give every queue not yet met ``weight / Σ weights of those`` of what remains, clamped to
  ``min(real capability, request)`` and at least its guarantee; a queue is met once its request fits
  (within ``vec.EPS``) or its share stopped changing; stop when nothing remains or nothing moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler import vec

__all__ = ["QueueInput", "QueueShare", "water_fill"]


@dataclass(frozen=True)
class QueueInput:
    """One queue's input to :func:`water_fill`.

    ``request`` is Σ requests of its jobs (``inf`` for "would take anything"), ``capability`` is
    ``inf`` where unlimited; ``guarantee`` is 0 where none.
    """

    name: str
    weight: int
    request: Sequence[float]
    guarantee: Sequence[float]
    capability: Sequence[float]


@dataclass
class QueueShare:
    """One queue's result: its real capability and its deserved resources."""

    real_capability: list[float]
    deserved: list[float]


def water_fill(
    total: Sequence[float], total_guarantee: Sequence[float], queues: Sequence[QueueInput]
) -> dict[str, QueueShare]:
    """Return every queue's real capability and deserved share (by name, in the order of ``queues``).

    ``total`` is the cluster's allocatable, ``total_guarantee`` Σ guarantees of *all* queues (also
    those not in ``queues``, as the plugin counts every queue of the session). Queue order matters
    only through float rounding; the plugin passes its queues in the order it first saw their jobs.
    """
    headroom = vec.exceeded(total, total_guarantee)
    out = {
        q.name: QueueShare(vec.vmin(vec.add(headroom, q.guarantee), q.capability), [0.0] * len(total)) for q in queues
    }
    remaining = list(total)
    met: set[str] = set()
    while True:
        total_weight = sum(q.weight for q in queues if q.name not in met)
        if total_weight == 0:
            break
        old_remaining = list(remaining)
        inc = [0.0] * len(remaining)
        dec = [0.0] * len(remaining)
        for q in queues:
            if q.name in met:
                continue
            share = out[q.name]
            old = share.deserved
            ratio = q.weight / total_weight
            d = [x + r * ratio for x, r in zip(old, remaining, strict=True)]
            d = vec.vmin(d, share.real_capability)
            d = vec.vmin(d, q.request)
            d = vec.vmax(d, q.guarantee)
            share.deserved = d
            if vec.le(q.request, d) or d == old:
                met.add(q.name)
            vec.iadd(inc, vec.exceeded(d, old))
            vec.iadd(dec, vec.exceeded(old, d))
        remaining = vec.exceeded(vec.add(remaining, dec), inc)
        if vec.is_empty(remaining) or remaining == old_remaining:
            break
    return out
