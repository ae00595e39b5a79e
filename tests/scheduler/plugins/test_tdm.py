"""The tdm plugin: Volcano's Test_parseRevocableZone as a table (its other tests are data in
``volcano_cases/tdm.yaml``), and a preempt cycle with a revocable node."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import ConfigError
from scheduler.decode import load_manifests, snapshot_from_manifests
from scheduler.plugins.tdm import parse_revocable_zone

ZONES = [
    ("00:00_01:00", 0, True),
    ("00:00-01:00", 60 * 60, False),
    ("0:00-23:59", 23 * 60 * 60 + 59 * 60, False),
    ("0:00", 0, True),
    ("1:00-0:00", 23 * 60 * 60, False),
    ("1:0-0:0", 0, True),
    ("   1:00-0:00    ", 23 * 60 * 60, False),
    ("23:59-23:59", 24 * 60 * 60, False),
    ("63:59-23:59", 0, True),
]


@pytest.mark.parametrize(
    ("raw", "delta", "error"), ZONES, ids=[f"Test_parseRevocableZone:case {i}" for i in range(len(ZONES))]
)
def test_parse_revocable_zone(raw: str, delta: int, error: bool) -> None:
    """Test_parseRevocableZone: the window's length (0 and an error for a bad format)."""
    try:
        start, end = parse_revocable_zone(raw, 1_700_000_000.0)
    except ValueError:
        assert error
        return
    assert not error
    assert end - start == delta


def test_a_bad_zone_argument_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"tdm\.revocable-zone\.rz1"):
        parse_config("actions: allocate\ntiers: [{plugins: [{name: tdm, arguments: {tdm.revocable-zone.rz1: '9-5'}}]}]")


STATE = """
apiVersion: v1
kind: Node
metadata: {name: lent, labels: {volcano.sh/revocable-zone: rz1}}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: elastic, namespace: ns}
spec: {minMember: 1}
status: {phase: Inqueue}
---
apiVersion: v1
kind: Pod
metadata:
  name: elastic-0
  namespace: ns
  annotations: {scheduling.k8s.io/group-name: elastic, volcano.sh/revocable-zone: '*'}
spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: '1'}}}]}
status: {phase: Pending}
"""


@pytest.mark.parametrize(("window", "bound"), [("0:00-0:00", True), ("0:00-0:01", False)])
def test_a_revocable_node_takes_zone_pods_only_while_its_window_is_open(window: str, bound: bool) -> None:
    snap = replace(snapshot_from_manifests(load_manifests(STATE)), now=1_700_000_000.0)  # 22:13 UTC
    conf = parse_config(
        "actions: 'enqueue, allocate'\ntiers:\n- plugins: [{name: gang}, {name: predicates},"
        f" {{name: tdm, arguments: {{tdm.revocable-zone.rz1: '{window}'}}}}]\n"
    )
    assert bool(run_cycle(snap, conf).binds) is bound
