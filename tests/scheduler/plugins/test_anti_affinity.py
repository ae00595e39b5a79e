"""Required inter-pod anti-affinity (predicates): within a job placed in the same session,
across topology domains, symmetric, and parsed from manifests with field errors."""

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
metadata: {{name: {name}, labels: {{zone: {zone}, kubernetes.io/hostname: {name}}}}}
status: {{allocatable: {{cpu: "8", memory: 16Gi, pods: "20"}}}}
"""


def _pod(name: str, group: str, key: str, app: str = "web", node: str = "", anti: bool = True) -> str:
    affinity = (
        f"affinity: {{podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: "
        f"[{{labelSelector: {{matchLabels: {{app: {app}}}}}, topologyKey: {key}}}]}}}}"
        if anti
        else ""
    )
    spec_node = f"nodeName: {node}" if node else ""
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {{app: {app}}},
           annotations: {{scheduling.k8s.io/group-name: {group}}}}}
spec:
  {spec_node}
  {affinity}
  containers: [{{name: c, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
status: {{phase: {"Running" if node else "Pending"}}}
"""


def _group(name: str, minimum: int) -> str:
    return f"""---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: default}}
spec: {{minMember: {minimum}}}
status: {{phase: Inqueue}}
"""


def test_pods_of_one_job_spread_over_hosts_in_the_same_session() -> None:
    text = _node("a", "z1") + _node("b", "z1") + _node("c", "z2") + _group("web", 3)
    text += "".join(_pod(f"web-{i}", "web", "kubernetes.io/hostname") for i in range(3))
    binds = run_cycle(snapshot_from_manifests(load_manifests(text)), CONF).binds
    assert sorted(binds.values()) == ["a", "b", "c"]


def test_a_zone_key_blocks_the_whole_zone_and_the_gang_waits() -> None:
    text = _node("a", "z1") + _node("b", "z1") + _node("c", "z2") + _group("web", 3)
    text += "".join(_pod(f"web-{i}", "web", "zone") for i in range(3))
    result = run_cycle(snapshot_from_manifests(load_manifests(text)), CONF)
    assert result.binds == {}  # two zones for three pods: the gang is not ready
    reason = result.unschedulable["default/web"]
    assert "node(s) didn't match pod anti-affinity rules" in reason.message


def test_an_existing_pods_term_repels_the_newcomer_symmetry() -> None:
    base = _node("a", "z1") + _group("old", 1) + _group("new", 1)
    base += _pod("old-0", "old", "kubernetes.io/hostname", node="a")  # its term selects app=web
    web = base + _pod("new-0", "new", "kubernetes.io/hostname", anti=False)  # no term of its own
    assert run_cycle(snapshot_from_manifests(load_manifests(web)), CONF).binds == {}
    db = base + _pod("new-0", "new", "kubernetes.io/hostname", app="db", anti=False)
    assert run_cycle(snapshot_from_manifests(load_manifests(db)), CONF).binds == {"default/new-0": "a"}


def test_switching_the_predicate_off_ignores_the_terms() -> None:
    text = _node("a", "z1") + _group("web", 2)
    text += "".join(_pod(f"web-{i}", "web", "kubernetes.io/hostname") for i in range(2))
    snap = snapshot_from_manifests(load_manifests(text))
    assert run_cycle(snap, CONF).binds == {}
    off = parse_config(
        'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
        "- plugins: [{name: predicates, arguments: {predicate.PodAffinityEnable: false}}, {name: proportion}]\n"
    )
    assert len(run_cycle(snap, off).binds) == 2


def test_a_term_without_topology_key_names_the_field() -> None:
    text = _group("web", 1) + _pod("web-0", "web", '""')
    with pytest.raises(ManifestError) as err:
        snapshot_from_manifests(load_manifests(text))
    assert (
        err.value.field == "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"
    )
