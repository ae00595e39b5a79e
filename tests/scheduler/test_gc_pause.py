"""The cyclic garbage collector is paused only while a cycle runs: run_cycle (with or without a
SessionCache) and SessionCache.prime leave it as they found it, also when the cycle raises."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import replace
from typing import ClassVar

import pytest

from scheduler import SessionCache, run_cycle
from scheduler.config import DEFAULT_CONFIG
from scheduler.framework import Action
from scheduler.gc_pause import GcPause
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.testing import make_job, make_node, make_snapshot

SNAPSHOT = make_snapshot(nodes=[make_node("n1")], jobs=[make_job("a", replicas=2)])


class _Probe(Action):
    """Records whether the collector was on while the action ran; raises when told to."""

    name = "probe"
    seen: ClassVar[list[bool]] = []
    fail: ClassVar[bool] = False

    def execute(self, session: Session) -> None:
        _Probe.seen.append(gc.isenabled())
        if _Probe.fail:
            raise RuntimeError("probe failed")


REGISTRY = default_registry().with_action(_Probe)
CONFIG = replace(DEFAULT_CONFIG, actions=(*DEFAULT_CONFIG.actions, "probe"))


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    _Probe.seen.clear()
    _Probe.fail = False
    gc.enable()
    yield
    gc.enable()  # never leave the test process without its collector


@pytest.mark.parametrize("cached", [False, True])
def test_the_collector_is_off_during_the_cycle_and_on_again_after_it(cached: bool) -> None:
    cache = SessionCache() if cached else None
    result = run_cycle(SNAPSHOT, CONFIG, REGISTRY, cache=cache)
    assert _Probe.seen == [False]
    assert gc.isenabled()
    assert set(result.binds) == {"default/a-0", "default/a-1"}


@pytest.mark.parametrize("cached", [False, True])
def test_the_collector_is_on_again_after_a_cycle_that_raises(cached: bool) -> None:
    _Probe.fail = True
    with pytest.raises(RuntimeError, match="probe failed"):
        run_cycle(SNAPSHOT, CONFIG, REGISTRY, cache=SessionCache() if cached else None)
    assert _Probe.seen == [False]
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    run_cycle(SNAPSHOT, CONFIG, REGISTRY)
    assert not gc.isenabled()
    _Probe.fail = True
    with pytest.raises(RuntimeError):
        run_cycle(SNAPSHOT, CONFIG, REGISTRY)
    assert not gc.isenabled()


def test_prime_leaves_the_collector_on() -> None:
    cache = SessionCache()
    cache.prime(SNAPSHOT)
    assert gc.isenabled()
    assert cache.misses == 1


def test_overlapping_pauses_end_with_the_collector_on() -> None:
    # Two cycles of two threads, interleaved as the scheduler may run them: the second finds the
    # collector already off and leaves it alone; the first, ending before it, turns it on.
    first, second = GcPause(), GcPause()
    first.__enter__()
    second.__enter__()
    assert not gc.isenabled()
    first.__exit__(None, None, None)
    assert gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()
