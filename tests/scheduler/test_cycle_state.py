"""The cycle state: plugins keep nothing of a cycle; the framework keeps each plugin's state.

A plugin is built once (``build_plugin``) and from then on refuses any attribute; ``open`` returns
its state, which the session keeps in its ``CycleState`` under the plugin's name and binds into the
plugin's methods (``BoundPlugin``). A session kept by a ``SessionCache`` keeps its plugins across
cycles and gives each cycle new states.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from scheduler import advance, run_cycle
from scheduler.cache import SessionCache
from scheduler.config import parse_config
from scheduler.cycle_state import BoundPlugin, CycleState, PluginState
from scheduler.framework import AllocateHandler, JobOrder, Plugin, build_plugin
from scheduler.plugins import BUILTIN_PLUGINS
from scheduler.plugins.binpack import BinpackPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.registry import RegistryError, default_registry, signature_problem
from scheduler.session import Session
from tests.scheduler.golden_workloads import CONFIGS, build

#: Every built-in plugin in one configuration (two tiers, as Volcano's), with the actions that call them all.
EVERY_PLUGIN = parse_config(
    'actions: "enqueue, allocate, backfill, reclaim, preempt, shuffle"\ntiers:\n'
    "- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: drf}, {name: predicates},"
    " {name: proportion}, {name: sla}, {name: resourcequota}, {name: pdb}, {name: enqueuegate}, {name: cdp},"
    " {name: tdm}, {name: rescheduling}, {name: task-topology}, {name: extender}]\n"
    "- plugins: [{name: overcommit}, {name: nodeorder}, {name: binpack}, {name: nodegroup},"
    " {name: network-topology-aware}, {name: resource-strategy-fit}, {name: usage}, {name: deviceshare},"
    " {name: numa-aware}]\n"
)


def _instances(ssn: Session) -> dict[str, dict[str, Any]]:
    """Every plugin's attributes, copied deeply (what a cycle must leave as it found them)."""
    return {p.name: copy.deepcopy(vars(p.plugin)) for tier in ssn.tiers for p in tier}


def test_every_builtin_plugin_is_in_the_configuration_that_checks_them() -> None:
    configured = {p.name for t in EVERY_PLUGIN.tiers for p in t.plugins}
    assert configured == {cls.name for cls in BUILTIN_PLUGINS} - {"capacity"}  # capacity replaces proportion


@pytest.mark.parametrize("config", [*sorted(CONFIGS), "every-plugin"])
def test_cycles_leave_every_plugin_as_built_and_keep_their_states_in_the_cycle_state(config: str) -> None:
    conf = EVERY_PLUGIN if config == "every-plugin" else CONFIGS[config]
    registry = default_registry()
    cache = SessionCache()
    snap = build(5)
    seen: dict[str, Plugin] = {}
    states: dict[str, list[Any]] = {}
    for _ in range(4):
        ssn = cache.open(snap, conf, registry)
        before = _instances(ssn)
        for tier in ssn.tiers:
            for p in tier:
                assert isinstance(p, BoundPlugin)
                # The same plugin object every cycle of the kept session; a state of this cycle.
                assert seen.setdefault(p.name, p.plugin) is p.plugin
                assert ssn.cycle_state.read(p.name) is p.state
                assert p.state.session is ssn
                states.setdefault(p.name, []).append(p.state)
        cache.release(ssn)
        result = run_cycle(snap, conf, cache=cache)
        after = cache._session
        assert after is not None
        assert _instances(after) == before, "a cycle changed a plugin's attributes"
        snap = advance(snap, result)
    assert len(seen) == sum(len(t.plugins) for t in conf.tiers)
    # Each cycle's state is a state of its own: shared values (SharedState) are copied with the new session.
    for name, kept in states.items():
        assert len({id(s) for s in kept}) == len(kept), name


def test_a_built_plugin_refuses_an_attribute_and_says_where_it_belongs() -> None:
    plugin = build_plugin(BinpackPlugin, {"binpack.weight": 3})
    with pytest.raises(
        AttributeError, match=r"plugin 'binpack' keeps nothing of a cycle: 'weights' belongs in its state"
    ):
        plugin.weights = {0: 1.0}  # type: ignore[attr-defined]
    assert plugin.args["binpack.weight"] == 3
    assert not hasattr(plugin, "weights")


def test_a_plugins_methods_take_its_state_and_the_bound_plugin_passes_it() -> None:
    ssn = Session(build(3), CONFIGS["binpack-preempt"], default_registry())
    bound = ssn.plugin("binpack")
    task = next(iter(ssn.tasks.values()))
    nodes = np.arange(len(ssn.nodes))
    direct = bound.plugin.node_order(bound.state, task, nodes)
    assert list(bound.node_order(task, nodes)) == list(direct)
    assert bound.node_order is bound.node_order  # bound once per cycle, then kept
    assert bound.args is bound.plugin.args  # the framework's attributes are not bound


def test_a_flag_the_state_sets_for_a_cycle_overrides_the_plugins() -> None:
    plugin = build_plugin(PredicatesPlugin, {})
    assert PredicatesPlugin.node_local_filters
    state = PluginState(None)  # type: ignore[arg-type]
    state.node_local_filters = False
    state.failures_repeatable = False
    bound = BoundPlugin(plugin, state)
    assert bound.node_local_filters is False
    assert bound.failures_repeatable is False
    plain = BoundPlugin(plugin, PluginState(None))  # type: ignore[arg-type]
    assert plain.node_local_filters is True
    assert plain.failures_repeatable is PredicatesPlugin.failures_repeatable


def test_the_cycle_state_names_a_missing_key() -> None:
    cs = CycleState()
    cs.write("gang", 1)
    assert cs.read("gang") == 1
    assert "gang" in cs
    assert list(cs) == ["gang"]
    assert len(cs) == 1
    with pytest.raises(KeyError, match="no cycle state for 'drf'"):
        cs.read("drf")


def test_every_builtin_plugin_takes_its_state_where_its_capabilities_pass_it() -> None:
    assert {cls.name: signature_problem(cls) for cls in BUILTIN_PLUGINS} == {cls.name: None for cls in BUILTIN_PLUGINS}


class _Stateless(Plugin, JobOrder, AllocateHandler):
    """A plugin written for plugins that kept their state: no ``st`` in ``job_order``."""

    name = "stateless"

    def job_order(self, a: Any, b: Any) -> int:  # type: ignore[override]
        return 0

    def on_allocate(self, st: Any, task: Any) -> None:
        return None

    def on_deallocate(self, st: Any, *rest: Any) -> None:
        return None


def test_registering_a_plugin_without_the_state_argument_names_the_method() -> None:
    with pytest.raises(
        RegistryError,
        match=r"plugin 'stateless': _Stateless\.job_order takes 2 argument\(s\), the capability JobOrder passes 3: "
        r"a plugin method takes its cycle state first \(ADR 0033\)",
    ):
        default_registry().with_plugin(_Stateless)
