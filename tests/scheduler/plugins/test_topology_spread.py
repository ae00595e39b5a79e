"""Pod topology spread constraints: DoNotSchedule filters (predicates), ScheduleAnyway scores
(nodeorder), pods placed earlier in the session count, manifest errors name the field."""

from __future__ import annotations

import pytest

from scheduler import parse_config, run_cycle
from scheduler.decode import ManifestError, load_manifests, snapshot_from_manifests

CONF = parse_config(
    'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
    "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]\n"
)


def _node(name: str, zone: str) -> str:
    return f"""---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{zone: {zone}}}}}
status: {{allocatable: {{cpu: "16", memory: 32Gi, pods: "50"}}}}
"""


def _pods(group: str, n: int, when: str, skew: int = 1) -> str:
    text = f"""---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {group}, namespace: default}}
spec: {{minMember: {n}}}
status: {{phase: Inqueue}}
"""
    for i in range(n):
        text += f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {group}-{i}, namespace: default, labels: {{app: {group}}},
           annotations: {{scheduling.k8s.io/group-name: {group}}}}}
spec:
  topologySpreadConstraints:
  - {{maxSkew: {skew}, topologyKey: zone, whenUnsatisfiable: {when}, labelSelector: {{matchLabels: {{app: {group}}}}}}}
  containers: [{{name: c, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
"""
    return text


def _zones(binds: dict[str, str]) -> list[int]:
    zone = {"a1": "z1", "a2": "z1", "b1": "z2", "c1": "z3"}
    counts = {"z1": 0, "z2": 0, "z3": 0}
    for node in binds.values():
        counts[zone[node]] += 1
    return sorted(counts.values())


NODES = _node("a1", "z1") + _node("a2", "z1") + _node("b1", "z2") + _node("c1", "z3")


@pytest.mark.parametrize("when", ["DoNotSchedule", "ScheduleAnyway"])
def test_a_gang_spreads_evenly_over_zones(when: str) -> None:
    # Without the constraint least-requested scoring alone would also spread over nodes, not zones:
    # zone z1 has two nodes.
    binds = run_cycle(snapshot_from_manifests(load_manifests(NODES + _pods("web", 6, when))), CONF).binds
    assert len(binds) == 6
    assert _zones(binds) == [2, 2, 2]


def test_do_not_schedule_refuses_a_node_without_the_key_and_beyond_the_skew() -> None:
    text = _node("a1", "z1") + _node("b1", "z2") + _pods("web", 4, "DoNotSchedule")
    text += """---
apiVersion: v1
kind: Node
metadata: {name: nokey}
status: {allocatable: {cpu: "16", memory: 32Gi, pods: "50"}}
"""
    binds = run_cycle(snapshot_from_manifests(load_manifests(text)), CONF).binds
    assert "nokey" not in binds.values()
    assert sorted(binds.values()) == ["a1", "a1", "b1", "b1"]


def test_a_bad_constraint_names_the_field() -> None:
    with pytest.raises(ManifestError) as err:
        snapshot_from_manifests(load_manifests(_pods("web", 1, "Sometimes")))
    assert err.value.field == "spec.topologySpreadConstraints[0].whenUnsatisfiable"
