"""The rescheduling plugin's lowNodeUtilization strategy with the shuffle action (Volcano has no test of it:
these scenarios are ours). Node utilisation comes from ``Node.usage`` (the ``volcanoweb.io/node-usage``
annotation in manifests)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import ConfigError
from scheduler.decode import ManifestError, load_manifests, snapshot_from_manifests
from scheduler.model import JobPhase
from scheduler.snapshot import Snapshot
from scheduler.testing import make_job, make_node, make_snapshot

CONF = """
actions: shuffle
tiers:
- plugins:
  - name: rescheduling
    arguments:
      metricsPeriod: 5m
      strategies:
      - name: lowNodeUtilization
        params:
          thresholds: {cpu: 30, memory: 30}
          targetThresholds: {cpu: 60, memory: 60}
"""


def _cluster(hot_cpu: float, cool_cpu: float, priorities: tuple[int, ...] = (4, 1, 3, 2)) -> Snapshot:
    """hot: 10 CPUs with 1-CPU pods of the given priorities; cool: another 10-CPU node."""
    hot = replace(make_node("hot", cpu="10", memory="100Gi"), usage={"5m": {"cpu": hot_cpu, "memory": 10.0}})
    cool = replace(make_node("cool", cpu="10", memory="100Gi"), usage={"5m": {"cpu": cool_cpu, "memory": 10.0}})
    jobs = [
        make_job(
            f"j{p}",
            replicas=1,
            min_available=1,
            cpu="1",
            memory="1Gi",
            running_on=["hot"],
            phase=JobPhase.RUNNING,
            priority=p,
        )
        for p in priorities
    ]
    return make_snapshot([hot, cool], jobs)


def test_pods_leave_a_hot_node_lowest_priority_first_until_it_is_under_its_target() -> None:
    """cpu 80 % > target 60 %: each 1-CPU pod is 10 %; pods leave while the node is at or above its
    target (80, 70, 60 → 50), lowest priority first."""
    result = run_cycle(_cluster(80.0, 10.0), parse_config(CONF))
    assert sorted(e.task for e in result.evictions) == ["default/j1-0", "default/j2-0", "default/j3-0"]
    assert {e.action for e in result.evictions} == {"shuffle"}


@pytest.mark.parametrize(("hot", "cool"), [(80.0, 40.0), (50.0, 10.0)], ids=["no low node", "no high node"])
def test_nothing_moves_without_a_low_and_a_high_node(hot: float, cool: float) -> None:
    assert not run_cycle(_cluster(hot, cool), parse_config(CONF)).evictions


def test_the_room_on_low_nodes_bounds_the_evictions() -> None:
    """The cool node (20 %) has 4 CPUs of room up to its 60 % target: the hot node (100 %) would give
    five pods to get under its target, but the room is used up after four."""
    result = run_cycle(_cluster(100.0, 20.0, (1, 2, 3, 4, 5, 6)), parse_config(CONF))
    assert sorted(e.task for e in result.evictions) == [f"default/j{p}-0" for p in (1, 2, 3, 4)]


def test_a_bad_strategies_argument_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="strategies"):
        parse_config("actions: shuffle\ntiers: [{plugins: [{name: rescheduling, arguments: {strategies: 3}}]}]")


NODE = """apiVersion: v1
kind: Node
metadata: {name: n1, annotations: {volcanoweb.io/node-usage: '%s'}}
status: {allocatable: {cpu: '4', memory: 8Gi}}
"""


def test_node_usage_from_the_manifest_annotation() -> None:
    snap = snapshot_from_manifests(load_manifests(NODE % '{"5m": {"cpu": 72.5, "memory": 40}}'))
    assert snap.nodes[0].usage == {"5m": {"cpu": 72.5, "memory": 40.0}}
    with pytest.raises(ManifestError, match="node-usage"):
        snapshot_from_manifests(load_manifests(NODE % "[1]"))
