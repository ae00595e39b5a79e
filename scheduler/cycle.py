"""run_cycle: one scheduling cycle as a pure function of its inputs."""

from __future__ import annotations

from collections.abc import Callable

from scheduler.cache import SessionCache
from scheduler.config import DEFAULT_CONFIG, ConfigError
from scheduler.config_types import SchedulerConfig
from scheduler.gc_pause import GcPause
from scheduler.registry import Registry, default_registry
from scheduler.result import CycleResult
from scheduler.session import Session
from scheduler.snapshot import Snapshot

__all__ = ["run_cycle"]


def run_cycle(
    snapshot: Snapshot,
    config: SchedulerConfig = DEFAULT_CONFIG,
    registry: Registry | None = None,
    timer: Callable[[], float] | None = None,
    cache: SessionCache | None = None,
) -> CycleResult:
    """Open a session over ``snapshot``, run the configured actions, close it.

    The result depends only on the arguments: ties are broken by name/uid, nothing reads the
    clock or a random source. ``timer`` (e.g. ``time.perf_counter``) is only used to fill
    ``CycleResult.timings`` (keys ``open``, each action name, ``close``); it never influences a
    decision. Raises :class:`ConfigError` if the config names an action or plugin missing
    from ``registry``. ``cache`` (a :class:`SessionCache` kept by the caller between cycles)
    only saves work: the result is the same with or without it.
    """
    reg = registry if registry is not None else default_registry()
    for i, name in enumerate(config.actions):
        if name not in reg.actions:
            raise ConfigError(f"actions[{i}]", f"failed to find Action {name}")
    for ti, tier in enumerate(config.tiers):
        for pi, opt in enumerate(tier.plugins):
            if opt.name not in reg.plugins:
                raise ConfigError(f"tiers[{ti}].plugins[{pi}].name", f"unknown plugin {opt.name!r}")
    with GcPause():  # the cycle's work only (see gc_pause.py)
        return _cycle(snapshot, config, reg, timer, cache)


def _cycle(
    snapshot: Snapshot,
    config: SchedulerConfig,
    reg: Registry,
    timer: Callable[[], float] | None,
    cache: SessionCache | None,
) -> CycleResult:
    timings: dict[str, float] = {}
    start = timer() if timer else 0.0
    if cache is None:
        return _run(Session(snapshot, config, reg), config, reg, timer, timings, start, None)
    try:
        session = cache.open(snapshot, config, reg)
        return _run(session, config, reg, timer, timings, start, cache)
    except BaseException:
        cache.clear()
        raise


def _run(
    session: Session,
    config: SchedulerConfig,
    reg: Registry,
    timer: Callable[[], float] | None,
    timings: dict[str, float],
    start: float,
    cache: SessionCache | None,
) -> CycleResult:
    if timer:
        now = timer()
        timings["open"] = now - start
        start = now
    for name in config.actions:
        action = reg.actions[name](config.action_args.get(name, {}))
        action.execute(session)
        if timer:
            now = timer()
            timings[name] = now - start
            start = now
    result = session.close(timings)
    if cache is not None:
        cache.release(session)  # part of close: rolls the cached state back
    if timer:
        timings["close"] = timer() - start
    return result
