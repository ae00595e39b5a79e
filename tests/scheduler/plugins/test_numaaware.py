"""The numa-aware plugin and its NUMA algorithms (``scheduler/numa.py``).

Volcano's tests as tables: policy/policy_{best_effort,restricted,single_numa_node,none}_test.go (the policy's
best hint over the providers' hints, NUMA nodes 0 and 1), provider/cpumanager/cpu_mng_test.go (Test_GetTopologyHints,
Test_Allocate over its 8-CPU, 2-socket layout). numaaware_test.go's TestNuma_OnSessionClose* check what Volcano's
scheduler cache records for the resource exporter at close (``UnassignedNumaPods``), which has no counterpart here:
the core reports decisions, and the product has no exporter. The scenarios after them are ours, through manifests
(the ``volcanoweb.io/numa-topology`` node annotation, the ``volcano.sh/numa-topology-policy`` pod annotation).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import ConfigError
from scheduler.decode import ManifestError, load_manifests, snapshot_from_manifests
from scheduler.hardware import guaranteed_cpus, numa_layout, parse_numa_annotation
from scheduler.numa import CpuInfo, Hint, admit, allocate_cpus, cpu_hints
from scheduler.plugins.numaaware import normalize_reverse
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.snapshot import Snapshot

POLICY_CASES = [
    (
        "best-effort",
        "test-1",
        [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), False), ((0,), True)]}],
        ((0,), True),
    ),
    (
        "best-effort",
        "test-2",
        [{"cpu": [((0, 1), False), ((1,), True)]}, {"gpu": [((0, 1), False), ((1,), True)]}],
        ((1,), True),
    ),
    (
        "best-effort",
        "test-3",
        [
            {"cpu": [((0, 1), False), ((0,), True), ((1,), True)]},
            {"gpu": [((0, 1), False), ((0,), True), ((1,), True)]},
        ],
        ((0,), True),
    ),
    (
        "best-effort",
        "test-4",
        [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), False), ((1,), True)]}],
        ((0,), False),
    ),
    ("best-effort", "test-5", [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), True)]}], ((0,), True)),
    ("best-effort", "test-6", [{"cpu": [((0, 1), True)]}, {"gpu": [((0, 1), True)]}], ((0, 1), True)),
    (
        "restricted",
        "test-1",
        [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), False), ((0,), True)]}],
        ((0,), True),
    ),
    (
        "restricted",
        "test-2",
        [{"cpu": [((0, 1), False), ((1,), True)]}, {"gpu": [((0, 1), False), ((1,), True)]}],
        ((1,), True),
    ),
    (
        "restricted",
        "test-3",
        [
            {"cpu": [((0, 1), False), ((0,), True), ((1,), True)]},
            {"gpu": [((0, 1), False), ((0,), True), ((1,), True)]},
        ],
        ((0,), True),
    ),
    (
        "restricted",
        "test-4",
        [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), False), ((1,), True)]}],
        ((0,), False),
    ),
    ("restricted", "test-5", [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), True)]}], ((0,), True)),
    ("restricted", "test-6", [{"cpu": [((0, 1), True)]}, {"gpu": [((0, 1), True)]}], ((0, 1), True)),
    (
        "single-numa-node",
        "test-1",
        [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), False), ((0,), True)]}],
        ((0,), True),
    ),
    (
        "single-numa-node",
        "test-2",
        [{"cpu": [((0, 1), False), ((1,), True)]}, {"gpu": [((0, 1), False), ((1,), True)]}],
        ((1,), True),
    ),
    (
        "single-numa-node",
        "test-3",
        [
            {"cpu": [((0, 1), False), ((0,), True), ((1,), True)]},
            {"gpu": [((0, 1), False), ((0,), True), ((1,), True)]},
        ],
        ((0,), True),
    ),
    (
        "single-numa-node",
        "test-4",
        [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), False), ((1,), True)]}],
        ((0, 1), False),
    ),
    (
        "single-numa-node",
        "test-5",
        [{"cpu": [((0, 1), False), ((0,), True)]}, {"gpu": [((0, 1), True)]}],
        ((0, 1), False),
    ),
]


def _hints(provider: dict[str, Any]) -> dict[str, list[Hint] | None]:
    return {k: [Hint(frozenset(m), p) for m, p in v] for k, v in provider.items()}


@pytest.mark.parametrize(
    ("policy", "name", "providers", "want"),
    POLICY_CASES,
    ids=[f"Test_{c[0].replace('-', '_')}_predicate:{c[1]}" for c in POLICY_CASES],
)
def test_policy_best_hint(policy: str, name: str, providers: list[dict[str, Any]], want: tuple[Any, bool]) -> None:
    best, _ = admit(policy, [0, 1], [_hints(p) for p in providers])
    assert best == Hint(frozenset(want[0]), want[1])


def test_policy_none_admits_without_a_hint() -> None:
    """policy_none_test.go Test_none_predicate test-1."""
    assert admit("none", [0, 1], []) == (Hint(None, False), True)


# cpu_mng_test.go's numaInfo: CPUs 0-3 on NUMA node 0 / socket 0 (cores 0, 1), 4-7 on node 1 / socket 1 (cores 2, 3).
DETAILS = {c: CpuInfo(n, s, k) for c, n, s, k in numa_layout(2, 1, 2, 2)}
ALL = frozenset(range(8))

HINT_CASES = [
    ("test-1", 4, ALL, [((0,), True), ((1,), True), ((0, 1), False)]),
    ("test-2", 4, frozenset(range(1, 8)), [((1,), True), ((0, 1), False)]),
    ("test-3", 5, ALL, [((0, 1), True)]),
    ("test-4", 8, ALL, [((0, 1), True)]),
    ("test-5", 9, ALL, []),
    ("test-6", 4, frozenset({2, 3, 4, 5}), [((0, 1), False)]),
]


@pytest.mark.parametrize(
    ("name", "request_cpus", "free", "want"), HINT_CASES, ids=[f"Test_GetTopologyHints:{c[0]}" for c in HINT_CASES]
)
def test_get_topology_hints(name: str, request_cpus: int, free: frozenset[int], want: list[Any]) -> None:
    assert cpu_hints(free, DETAILS, request_cpus) == [Hint(frozenset(m), p) for m, p in want]


ALLOCATE_CASES = [
    ("test-1", 4, ALL, (0,), {0, 1, 2, 3}),
    ("test-2", 4, frozenset(range(1, 8)), (1,), {4, 5, 6, 7}),
    ("test-3", 5, ALL, (0, 1), {0, 1, 2, 3, 4}),
    ("test-4", 5, frozenset(range(1, 8)), (0, 1), {1, 4, 5, 6, 7}),
    ("test-5", 8, frozenset(range(1, 8)), (0, 1), set()),
]


@pytest.mark.parametrize(
    ("name", "request_cpus", "free", "numa", "want"),
    ALLOCATE_CASES,
    ids=[f"Test_Allocate:{c[0]}" for c in ALLOCATE_CASES],
)
def test_allocate(name: str, request_cpus: int, free: frozenset[int], numa: tuple[int, ...], want: set[int]) -> None:
    assert allocate_cpus(DETAILS, free, request_cpus, Hint(frozenset(numa), True)) == frozenset(want)


def test_the_layout_matches_the_go_tests_numbering() -> None:
    assert numa_layout(2, 1, 2, 2)[:3] == ((0, 0, 0, 0), (1, 0, 0, 0), (2, 0, 0, 1))


@pytest.mark.parametrize(("counts", "want"), [([0, 0], [100, 100]), ([1, 2, 2], [50, 0, 0]), ([1, 1], [0, 0])])
def test_normalize_score_reversed(counts: list[int], want: list[int]) -> None:
    assert normalize_reverse(counts) == want


def _container(cpu: str, mem: str = "1Gi", limits: bool = True) -> dict[str, Any]:
    res: dict[str, Any] = {"requests": {"cpu": cpu, "memory": mem}}
    if limits:
        res["limits"] = {"cpu": cpu, "memory": mem}
    return {"name": "c", "resources": res}


@pytest.mark.parametrize(
    ("containers", "want"),
    [
        ([_container("2"), _container("500m")], (2000, 500)),
        ([_container("2"), _container("1", limits=False)], ()),
        ([{"name": "c", "resources": {"limits": {"cpu": "3", "memory": "1Gi"}}}], (3000,)),
        ([{"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}}], ()),
    ],
)
def test_guaranteed_qos(containers: list[dict[str, Any]], want: tuple[int, ...]) -> None:
    assert guaranteed_cpus(containers, []) == want


def _node(name: str, policy: str, **layout: Any) -> str:
    topo = {
        "cpuManagerPolicy": "static",
        "topologyManagerPolicy": policy,
        "sockets": 2,
        "coresPerNuma": 2,
        "threadsPerCore": 2,
        **layout,
    }
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "annotations": {"volcanoweb.io/numa-topology": json.dumps(topo)}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "10"}},
        }
    )


def _pod(name: str, cpus: list[str], policy: str = "", node: str = "") -> str:
    ann = {"scheduling.k8s.io/group-name": f"pg-{name}"}
    if policy:
        ann["volcano.sh/numa-topology-policy"] = policy
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [_container(c) for c in cpus]}
    if node:
        spec["nodeName"] = node
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "uid": name, "annotations": ann},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": f"pg-{name}"},
        "spec": {"minMember": 1, "queue": "default"},
        "status": {"phase": "Running" if node else "Inqueue"},
    }
    return json.dumps(pod) + "\n---\n" + json.dumps(pg)


def _snapshot(*docs: str) -> Snapshot:
    return snapshot_from_manifests(load_manifests("\n---\n".join(docs)))


CONF = """
actions: allocate
tiers:
- plugins:
  - name: numa-aware
"""


def _reasons(snap: Snapshot, pod: str) -> dict[str, str]:
    session = Session(snap, parse_config(CONF), default_registry())
    task = next(t for j in session.jobs.values() for t in j.tasks.values() if t.task.name == pod)
    out = dict.fromkeys(session.nodes.names, "")
    for f in session.filters(task):
        for i, n in enumerate(session.nodes.names):
            if not f.passed[i] and not out[n]:
                out[n] = f.reason_at(i)
    return out


SCENARIOS = [
    (
        "single-numa-node: 3 CPUs fit one NUMA node of 4, 5 do not",
        [_node("n1", "single-numa-node")],
        [_pod("p", ["3"], "single-numa-node")],
        {"n1": ""},
    ),
    (
        "single-numa-node: a container larger than a NUMA node is refused",
        [_node("n1", "single-numa-node")],
        [_pod("p", ["5"], "single-numa-node")],
        {"n1": "container 0 cannot be assigned by numa"},
    ),
    (
        "best-effort admits a container spanning both NUMA nodes",
        [_node("n1", "best-effort")],
        [_pod("p", ["5"], "best-effort")],
        {"n1": ""},
    ),
    (
        "the pod's policy must be the node's",
        [_node("n1", "restricted")],
        [_pod("p", ["2"], "single-numa-node")],
        {"n1": "task topology policy[single-numa-node] is different with node[restricted]"},
    ),
    (
        "restricted: running pods pinned one per NUMA node leave 1 free CPU on each, too few for 2 on one",
        [_node("n1", "restricted")],
        [_pod("old", ["3"], node="n1"), _pod("old2", ["3"], node="n1"), _pod("p", ["2"], "restricted")],
        {"n1": "container 0 cannot be assigned by numa"},
    ),
    (
        "restricted: running pods are pinned as the node's policy admits them, so a NUMA node stays free",
        [_node("n1", "restricted")],
        [_pod("old", ["2"], node="n1"), _pod("old2", ["2"], node="n1"), _pod("p", ["3"], "restricted")],
        {"n1": ""},
    ),
    (
        "a pod without a policy is checked by the node's policy",
        [_node("n1", "single-numa-node")],
        [_pod("p", ["5"])],
        {"n1": "container 0 cannot be assigned by numa"},
    ),
]


@pytest.mark.parametrize(("name", "nodes", "pods", "want"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_predicate(name: str, nodes: list[str], pods: list[str], want: dict[str, str]) -> None:
    assert _reasons(_snapshot(*nodes, *pods), "p") == want


def test_a_node_without_numa_information_fails_a_pod_with_a_policy() -> None:
    plain = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n0"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "10"}},
        }
    )
    assert _reasons(_snapshot(plain, _pod("p", ["1"], "best-effort")), "p") == {"n0": "numa info is empty"}


def test_the_score_prefers_fewer_numa_nodes() -> None:
    """Two best-effort nodes; n1's exporter reports 3 free CPUs per NUMA node, so a 4-CPU pod spans both there
    and one on n2: n1 scores 100 - 100 * 2 / 2 = 0, n2 100 - 100 * 1 / 2 = 50, and the pod goes to n2."""
    snap = _snapshot(
        _node("n1", "best-effort", allocatable=[1, 2, 3, 5, 6, 7]),
        _node("n2", "best-effort"),
        _pod("p", ["4"], "best-effort"),
    )
    session = Session(snap, parse_config(CONF), default_registry())
    task = next(t for j in session.jobs.values() for t in j.tasks.values() if t.task.name == "p")
    session.filters(task)
    assert list(session.node_scores(task, np.array([0, 1], dtype=np.intp))) == [0.0, 50.0]
    assert run_cycle(snap, parse_config(CONF)).binds == {"default/p": "n2"}


def test_pods_of_one_session_take_their_cpus() -> None:
    """single-numa-node, one node of two 4-CPU NUMA nodes: two 3-CPU pods take one NUMA node each; a 2-CPU pod then
    finds the 2 free CPUs on different NUMA nodes (the node's cpu total would still take it)."""
    pods = [_pod(f"p{i}", [c], "single-numa-node") for i, c in enumerate(("3", "3", "2"))]
    result = run_cycle(_snapshot(_node("n1", "single-numa-node"), *pods), parse_config(CONF))
    assert sorted(result.binds) == ["default/p0", "default/p1"]
    assert "cannot be assigned by numa" in result.unschedulable["default/pg-p2"].message


def test_bad_topology_annotations_name_the_key() -> None:
    with pytest.raises(ValueError, match="topologyManagerPolicy"):
        parse_numa_annotation('{"topologyManagerPolicy": "strict"}')
    with pytest.raises(ValueError, match="unknown key 'cores'"):
        parse_numa_annotation('{"cores": 2}')
    bad = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n", "annotations": {"volcanoweb.io/numa-topology": "{"}},
        }
    )
    with pytest.raises(ManifestError, match=r"volcanoweb\.io/numa-topology"):
        _snapshot(bad)


def test_the_weight_argument_is_an_integer() -> None:
    with pytest.raises(ConfigError, match=r"arguments\.weight"):
        parse_config(
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "numa-aware", "arguments": {"weight": "x"}}]}]}
        )
