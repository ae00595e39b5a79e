"""SessionCache: reusing the opened state between cycles never changes a result."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from scheduler import advance, run_cycle
from scheduler.cache import SessionCache
from tests.scheduler.golden_workloads import CONFIGS, build


def _json(result: Any) -> dict[str, Any]:
    out: dict[str, Any] = result.to_json()
    return out


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_cached_cycles_match_uncached(seed: int) -> None:
    for name, config in CONFIGS.items():
        cache = SessionCache()
        snap = build(seed)
        for cycle in range(3):
            want = _json(run_cycle(snap, config))
            first = _json(run_cycle(snap, config, cache=cache))  # miss: opens and keeps the state
            again = _json(run_cycle(snap, config, cache=cache))  # hit: the rolled-back state
            assert first == want, f"seed {seed} {name} cycle {cycle}: miss differs"
            assert again == want, f"seed {seed} {name} cycle {cycle}: hit differs"
            snap = advance(snap, run_cycle(snap, config))
        assert cache.hits == 3
        assert cache.misses == 3


def test_cache_hits_only_on_the_same_objects() -> None:
    config = CONFIGS["default"]
    snap = build(5)
    cache = SessionCache()
    run_cycle(snap, config, cache=cache)
    same = replace(snap, tasks=tuple(snap.tasks))  # new tuple, same objects: a hit
    run_cycle(same, config, cache=cache)
    assert (cache.hits, cache.misses) == (1, 1)
    changed = replace(snap, tasks=tuple(replace(t) for t in snap.tasks))  # equal values, new objects
    assert _json(run_cycle(changed, config, cache=cache)) == _json(run_cycle(changed, config))
    assert (cache.hits, cache.misses) == (1, 2)
    other = CONFIGS["capacity"]
    assert _json(run_cycle(changed, other, cache=cache)) == _json(run_cycle(changed, other))
    assert cache.misses == 3


def test_failed_cycle_drops_the_cached_state() -> None:
    config = CONFIGS["default"]
    snap = build(7)
    cache = SessionCache()
    run_cycle(snap, config, cache=cache)

    calls = []

    def boom() -> float:  # fails in the middle of the cycle, after some actions ran
        calls.append(1)
        if len(calls) > 3:
            raise RuntimeError("timer failed")
        return 0.0

    with pytest.raises(RuntimeError):
        run_cycle(snap, config, timer=boom, cache=cache)
    assert _json(run_cycle(snap, config, cache=cache)) == _json(run_cycle(snap, config))
    assert cache.misses == 2
