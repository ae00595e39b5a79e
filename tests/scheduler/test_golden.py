"""Equivalence: seeded random workloads give exactly the decisions pinned before the
performance work (see ``golden_workloads.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scheduler.golden_workloads import CONFIGS, SEEDS, load, outcome

_GOLDEN: dict[str, Any] = {}


def _golden() -> dict[str, Any]:
    if not _GOLDEN:
        _GOLDEN.update(load())
    return _GOLDEN


@pytest.mark.parametrize("seed", list(SEEDS))
def test_random_workload_matches_golden(seed: int) -> None:
    golden = _golden()
    for name in CONFIGS:
        got = outcome(seed, name)
        want = golden[f"{seed}/{name}"]
        for cycle, (g, w) in enumerate(zip(got, want, strict=True)):
            for field in sorted(w):
                assert g[field] == w[field], f"seed {seed}, config {name}, cycle {cycle}: {field} differs"
