"""Small resource-vector helpers over the session's dimension order (cpu, memory, pods, scalars).

Vectors are plain lists/tuples of numbers; index 0 is cpu (millicores), 1 memory (bytes),
2 pods, then scalar resources in sorted name order. ``math.inf`` marks an unlimited dimension.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

EPS = 0.1  # Volcano's minResource tolerance, in the units above
CPU, MEMORY, PODS = 0, 1, 2

Vec = list[float]
RVec = Sequence[float]


def zeros(n: int) -> Vec:
    """Return a zero vector of length ``n``."""
    return [0.0] * n


def add(a: RVec, b: RVec) -> Vec:
    """Return ``a + b``."""
    return [x + y for x, y in zip(a, b, strict=True)]


def sub(a: RVec, b: RVec) -> Vec:
    """Return ``a - b``."""
    return [x - y for x, y in zip(a, b, strict=True)]


def iadd(acc: Vec, b: RVec) -> None:
    """Add ``b`` into ``acc`` in place."""
    for i, y in enumerate(b):
        if y:
            acc[i] += y


def isub(acc: Vec, b: RVec) -> None:
    """Subtract ``b`` from ``acc`` in place."""
    for i, y in enumerate(b):
        if y:
            acc[i] -= y


def le(a: RVec, b: RVec) -> bool:
    """Volcano ``LessEqual``: every dimension of a ≤ b's, within EPS."""
    return all(x < y or abs(x - y) < EPS for x, y in zip(a, b, strict=True))


def le_on(a: RVec, b: RVec, dims: RVec) -> bool:
    """Return whether a ≤ b on the dimensions where ``dims`` > 0, pods excluded (strict)."""
    return all(x <= y for i, (x, y, d) in enumerate(zip(a, b, dims, strict=True)) if d > 0 and i != PODS)


def fits(req: RVec, avail: RVec) -> bool:
    """Return whether a pod's request fits ``avail`` on every dimension it requests, pods
    included (Volcano's node-side ``LessEqual``: each pod requests one of the node's pod slots)."""
    return all(x <= y for x, y in zip(req, avail, strict=True) if x > 0)


def add_le_on(a: RVec, b: RVec, limit: RVec) -> bool:
    """``le_on(add(a, b), limit, b)`` without building the sum: ``a + b ≤ limit`` on the
    dimensions where ``b`` > 0, pods excluded (the same float operations)."""
    return all(a[i] + y <= limit[i] for i, y in enumerate(b) if y > 0 and i != PODS)


def failing_on(a: RVec, b: RVec, dims: RVec) -> list[int]:
    """Return the dimension indices (pods excluded) where ``dims`` > 0 and a > b."""
    return [i for i, (x, y, d) in enumerate(zip(a, b, dims, strict=True)) if d > 0 and i != PODS and x > y]


def exceeded(a: RVec, b: RVec) -> Vec:
    """Volcano ``ExceededPart``: per dimension ``max(a - b, 0)``."""
    return [x - y if x > y else 0.0 for x, y in zip(a, b, strict=True)]


def vmin(a: RVec, b: RVec) -> Vec:
    """Per-dimension minimum."""
    return [x if x < y else y for x, y in zip(a, b, strict=True)]


def vmax(a: RVec, b: RVec) -> Vec:
    """Per-dimension maximum."""
    return [x if x > y else y for x, y in zip(a, b, strict=True)]


def is_empty(a: RVec) -> bool:
    """Volcano ``IsEmpty``: every dimension except pods is below EPS."""
    return all(x < EPS for i, x in enumerate(a) if i != PODS)


def share(alloc: float, total: float) -> float:
    """Volcano ``Share``: alloc/total, 0 when both are 0, 1 when only total is 0."""
    if total == 0:
        return 0.0 if alloc == 0 else 1.0
    return alloc / total


def dominant_share(alloc: RVec, total: RVec) -> float:
    """Return max over dimensions of ``share(alloc, total)`` for dimensions present in total."""
    best = 0.0
    for x, t in zip(alloc, total, strict=True):
        if t >= EPS:
            s = x / t
            if s > best:
                best = s
    return best


#: Sums of whole numbers below this magnitude are exact in floating point, in any order.
EXACT_LIMIT = float(2**53)


def whole(a: RVec) -> bool:
    """Whether every element is a whole number in ``[0, 2**53)``."""
    return not a or (min(a) >= 0 and max(a) < EXACT_LIMIT and all(map(float.is_integer, map(float, a))))


def below_exact_limit(vectors: Iterable[RVec]) -> bool:
    """Whether every element of every vector is below ``2**53``.

    For sums of whole, non-negative numbers this makes every partial sum exact: keeping such a sum
    up to date by subtracting and adding parts then gives the same float as summing afresh in any
    order (``SessionCache`` relies on it)."""
    return all(not a or max(a) < EXACT_LIMIT for a in vectors)
