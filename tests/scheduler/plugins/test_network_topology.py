"""The network-topology-aware plugin through the library: Volcano's tests that build the plugin or a
session by hand (TestNew, TestReverseAndCapEvictionGradients, TestHyperNodeGradientPreFiltering,
TestHyperNodeGradientForSubJobFn_NoSubJobPolicyRespectsHardTopology, Test_initHyperNodeResourceCache,
Test_batchNodeOrderFnForNormalPods), each case named after its Go test and case. The cases that go through a
session's scores are data (``tests/scheduler/volcano_cases/network_topology_aware.yaml``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from scheduler import parse_config
from scheduler.model import HyperNode, HyperNodeMember, NetworkTopology, TaskStatus
from scheduler.plugins.network_topology import NetworkTopologyAwarePlugin, reverse_and_cap
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.snapshot import Snapshot
from scheduler.testing import make_job, make_node, make_queue, make_task
from scheduler.topology import CLUSTER_TOP

GI = 1024**3


def _plugin(arguments: dict[str, Any]) -> NetworkTopologyAwarePlugin:
    cfg = parse_config(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "network-topology-aware", "arguments": arguments}]}]}
    )
    [opt] = cfg.tiers[0].plugins
    return NetworkTopologyAwarePlugin(opt.arguments)


NEW_CASES = [
    ("build plugin with no arguments", {}, (1, 1, 1, {}, True, 0.8)),
    (
        "build plugin with customized valid arguments",
        {
            "weight": 2,
            "hypernode.binpack.cpu": 3,
            "hypernode.binpack.memory": 4,
            "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
            "hypernode.binpack.resources.nvidia.com/gpuxxx": 5,
            "hypernode.binpack.resources.example.com/foo": 6,
            "hypernode.binpack.normal-pod.enable": False,
            "hypernode.binpack.normal-pod.fading": 0,
        },
        (2, 3, 4, {"nvidia.com/gpu": 1, "example.com/foo": 6}, False, 0.0),
    ),
    (
        "build plugin with customized invalid arguments",
        {
            "weight": -1,
            "hypernode.binpack.cpu": -1,
            "hypernode.binpack.memory": -1,
            "hypernode.binpack.resources": "nvidia.com/gpuxxx, example.com/foo",
            "hypernode.binpack.resources.nvidia.com/gpu": -1,
            "hypernode.binpack.resources.example.com/foo": -1,
            "hypernode.binpack.normal-pod.enable": "a",
            "hypernode.binpack.normal-pod.fading": -1,
        },
        (1, 1, 1, {"nvidia.com/gpuxxx": 1, "example.com/foo": 1}, True, 0.8),
    ),
]


@pytest.mark.parametrize(("name", "arguments", "want"), NEW_CASES, ids=[f"TestNew:{c[0]}" for c in NEW_CASES])
def test_new(name: str, arguments: dict[str, Any], want: tuple[Any, ...]) -> None:
    """TestNew: weights (negative ones reset to 1), the extra resources, the normal-pod settings."""
    p = _plugin(arguments)
    got = (p.global_weight, p.cpu_weight, p.memory_weight, p.resource_weights, p.normal_pods, p.fading)
    assert got == want


def test_an_invalid_normal_pod_switch_loads_with_a_warning() -> None:
    """TestNew's invalid case: Volcano keeps the default for a non-boolean ``normal-pod.enable``; the
    configuration loads here too and its warnings name the argument."""
    cfg = parse_config(
        {
            "actions": "allocate",
            "tiers": [
                {
                    "plugins": [
                        {"name": "network-topology-aware", "arguments": {"hypernode.binpack.normal-pod.enable": "a"}}
                    ]
                }
            ],
        }
    )
    assert any("hypernode.binpack.normal-pod.enable" in w for w in cfg.warnings)


def test_reverse_and_cap_eviction_gradients() -> None:
    """TestReverseAndCapEvictionGradients: highest tier first, cut to 3 HyperNodes; no limit keeps all."""
    gradients = [["a", "b"], ["c", "d"]]
    assert reverse_and_cap(gradients, 3) == [["c", "d"], ["b"]]
    assert reverse_and_cap(gradients, 0) == gradients


def _prefilter_session(purpose_job: NetworkTopology) -> tuple[Session, Any]:
    """1000 nodes of 4 CPU / 8Gi in 100 tier-1 HyperNodes of 10 under one tier-2 HyperNode."""
    nodes = [make_node(f"node-{i}", cpu="4", memory="8Gi", pods=110) for i in range(1000)]
    hyper = [
        HyperNode(f"hn-1-{i}", 1, tuple(HyperNodeMember("Node", exact=f"node-{i * 10 + j}") for j in range(10)))
        for i in range(100)
    ]
    hyper.append(HyperNode("hn-2-0", 2, tuple(HyperNodeMember("HyperNode", exact=f"hn-1-{i}") for i in range(100))))
    spec = make_job("j", min_available=1, replicas=1, cpu="1")
    job = replace(spec.job, network_topology=purpose_job)
    snap = Snapshot.of(nodes, [make_queue("default")], [job], spec.tasks, hyper_nodes=hyper)
    cfg = parse_config(
        {
            "actions": "allocate",
            "tiers": [{"plugins": [{"name": "network-topology-aware", "enabledHyperNodeGradient": True}]}],
        }
    )
    session = Session(snap, cfg, default_registry())
    return session, session.jobs["default/j"]


def _res(session: Session, cpu: int, mem_gi: int) -> list[float]:
    v = [0.0] * session.ndims
    v[0], v[1] = cpu * 1000.0, float(mem_gi * GI)
    return v


PREFILTER = [
    # name, subjob, purpose, highest, min (cpu, Gi), idle, future idle, tier-1 HyperNode kept
    ("Job - idle sufficient, futureIdle sufficient", False, "allocate", 2, (20, 40), (30, 60), (35, 70), True),
    ("Job - idle sufficient, futureIdle insufficient", False, "allocate", 2, (20, 40), (30, 60), (15, 30), True),
    ("Job - idle insufficient, futureIdle sufficient", False, "allocate", 2, (20, 40), (15, 30), (30, 60), True),
    ("Job - idle insufficient, futureIdle insufficient", False, "allocate", 2, (20, 40), (15, 30), (15, 30), False),
    ("SubJob - idle sufficient, futureIdle sufficient", True, "allocate", 1, (10, 20), (20, 40), (25, 50), True),
    ("SubJob - idle sufficient, futureIdle insufficient", True, "allocate", 1, (10, 20), (20, 40), (5, 10), True),
    ("SubJob - idle insufficient, futureIdle sufficient", True, "allocate", 1, (10, 20), (5, 10), (20, 40), True),
    ("SubJob - idle insufficient, futureIdle insufficient", True, "allocate", 1, (10, 20), (5, 10), (5, 10), False),
    (
        "Evict purpose - idle insufficient, futureIdle insufficient",
        False,
        "evict",
        2,
        (20, 40),
        (15, 30),
        (15, 30),
        True,
    ),
    ("Evict purpose - allocatable insufficient", False, "evict", 2, (50, 100), (15, 30), (15, 30), False),
]


@pytest.mark.parametrize(
    ("name", "subjob", "purpose", "highest", "minimum", "idle", "future", "kept"),
    PREFILTER,
    ids=[f"TestHyperNodeGradientPreFiltering:{c[0]}" for c in PREFILTER],
)
def test_hyper_node_gradient_pre_filtering(
    name: str,
    subjob: bool,
    purpose: str,
    highest: int,
    minimum: tuple[int, int],
    idle: tuple[int, int],
    future: tuple[int, int],
    kept: bool,
) -> None:
    """TestHyperNodeGradientPreFiltering: hn-1-0's idle and future idle are overridden; it is kept
    when either covers the minimum (allocatable, 40 CPU / 80Gi, for eviction); tiers ascend."""
    session, job = _prefilter_session(NetworkTopology("hard", highest))
    plugin = session.plugin("network-topology-aware")
    assert isinstance(plugin.plugin, NetworkTopologyAwarePlugin)
    k = plugin.state.pos["hn-1-0"]
    plugin.state.idle[:, k] = _res(session, *idle)
    plugin.state.future[:, k] = _res(session, *future)
    assert job.key in session.jobs
    result = plugin.gradient("hn-2-0", highest, "", _res(session, *minimum), purpose)
    found = any("hn-1-0" in group for group in result)
    assert found is kept
    tiers = [session.topology.tier[g[0]] for g in result if g]
    assert tiers == sorted(tiers)
    assert subjob in (True, False)  # the Go test's sub-job and job differ only in the minimum given


def test_hard_topology_without_a_feasible_tier_one_domain_gives_no_gradient() -> None:
    """TestHyperNodeGradientForSubJobFn_NoSubJobPolicyRespectsHardTopology: zones of 2 x 8 CPU (tier
    1) under a region (tier 2); a hard job of tier 1 needing 20 CPU has no eviction domain, and
    does not fall back to the top HyperNode."""
    nodes = [make_node(n, cpu="8", memory="0", pods=110) for n in ("node-a-1", "node-a-2", "node-d-1", "node-d-2")]
    hyper = [
        HyperNode("zone-a", 1, (HyperNodeMember("Node", exact="node-a-1"), HyperNodeMember("Node", exact="node-a-2"))),
        HyperNode("zone-d", 1, (HyperNodeMember("Node", exact="node-d-1"), HyperNodeMember("Node", exact="node-d-2"))),
        HyperNode(
            "region", 2, (HyperNodeMember("HyperNode", exact="zone-a"), HyperNodeMember("HyperNode", exact="zone-d"))
        ),
    ]
    spec = make_job("job-hard-no-subjob-policy", min_available=1, replicas=1, cpu="20", memory="0")
    job = replace(spec.job, network_topology=NetworkTopology("hard", 1))
    snap = Snapshot.of(nodes, [make_queue("default")], [job], spec.tasks, hyper_nodes=hyper)
    cfg = parse_config(
        {
            "actions": "allocate",
            "tiers": [{"plugins": [{"name": "network-topology-aware", "enabledHyperNodeGradient": True}]}],
        }
    )
    session = Session(snap, cfg, default_registry())
    assert session.topology.tier[CLUSTER_TOP] == 3
    info = session.jobs["default/job-hard-no-subjob-policy"]
    pending = [0.0] * session.ndims
    for t in info.tasks.values():
        pending = [a + b for a, b in zip(pending, t.req, strict=True)]
    assert session.hyper_node_gradient(info, CLUSTER_TOP, "", pending, "evict") == []


def test_init_hyper_node_resource_cache() -> None:
    """Test_initHyperNodeResourceCache: 2000 nodes in 4 tiers of 200, 40, 5 and 1 HyperNodes (node
    i in HyperNode i mod n of each tier); each HyperNode's allocatable and used are the sums over
    its nodes (the Go test's timing print has no counterpart)."""
    counts = [200, 40, 5, 1]
    nodes = [make_node(f"node-{i}", cpu="4", memory="4000", pods=110, **{"example.com/foo": "5"}) for i in range(2000)]
    tasks = [
        replace(make_task(f"t-{i}", job="", cpu="1", memory="1000", status=TaskStatus.RUNNING), node_name=f"node-{i}")
        for i in range(0, 2000, 7)
    ]
    hyper = [
        HyperNode(
            f"hypernode-tier-{tier}-index-{k}",
            tier,
            tuple(HyperNodeMember("Node", exact=f"node-{i}") for i in range(k, 2000, counts[tier - 1])),
        )
        for tier in range(1, 5)
        for k in range(counts[tier - 1])
    ]
    snap = Snapshot.of(nodes, [make_queue("default")], [], tasks, hyper_nodes=hyper)
    cfg = parse_config(
        {
            "actions": "allocate",
            "tiers": [
                {
                    "plugins": [
                        {
                            "name": "network-topology-aware",
                            "arguments": {"weight": 10, "hypernode.binpack.resources": "example.com/foo"},
                        }
                    ]
                }
            ],
        }
    )
    session = Session(snap, cfg, default_registry())
    plugin = session.plugin("network-topology-aware")
    assert isinstance(plugin.plugin, NetworkTopologyAwarePlugin)
    st = plugin.state
    foo = session.dim_index["example.com/foo"]
    for tier in range(1, 5):
        for k in range(counts[tier - 1]):
            name = f"hypernode-tier-{tier}-index-{k}"
            members = range(k, 2000, counts[tier - 1])
            col = st.pos[name]
            assert st.alloc[0, col] == 4000.0 * len(members)
            assert st.alloc[foo, col] == 5.0 * len(members)
            assert st.used[0, col] == 1000.0 * sum(1 for i in members if i % 7 == 0)
    assert np.all(st.used[:, st.pos[CLUSTER_TOP]] >= 0)


def test_batch_node_order_fn_for_normal_pods() -> None:
    """Test_batchNodeOrderFnForNormalPods: 2000 nodes half used (100 CPU, 8000 memory, 10 example.com/foo each)
    in 4 tiers of 200, 40, 5 and 1 HyperNodes (node i in HyperNode i mod n of each tier); a pod without a
    topology asking half a node scores the same on every node. Each tier's HyperNode binpack score is Go's:
    (used + request) / allocatable = 0.55, 0.51, 0.50125, 0.50025, whose mean over the four tiers is the Go
    test's 0.515375. The Go test sets the plugin's tier range to 1-4 by hand; a session always adds the
    cluster-top HyperNode above the highest tier (Volcano's addClusterTopHyperNode, tier 5 here, its score
    0.50025 too), so the score a session gives is the mean over five tiers, 0.51235 (times weight 10 x 100)."""
    counts, n = [200, 40, 5, 1], 2000
    foo = {"example.com/foo": "10"}
    nodes = [make_node(f"node-{i}", cpu="100", memory="8000", pods=110, **foo) for i in range(n)]
    used = [
        make_task(
            f"used-{i}",
            cpu="50",
            memory="4000",
            status=TaskStatus.RUNNING,
            node=f"node-{i}",
            **{"example.com/foo": "5"},
        )
        for i in range(n)
    ]
    hyper = [
        HyperNode(
            f"hypernode-tier-{tier}-index-{k}",
            tier,
            tuple(HyperNodeMember("Node", exact=f"node-{i}") for i in range(k, n, counts[tier - 1])),
        )
        for tier in range(1, 5)
        for k in range(counts[tier - 1])
    ]
    pod = make_job("task-without-network-topology", cpu="50", memory="4000", **{"example.com/foo": "5"})
    snap = Snapshot.of(nodes, [make_queue("default")], [pod.job], [*used, *pod.tasks], hyper_nodes=hyper)
    arguments = {
        "weight": 10,
        "hypernode.binpack.cpu": 5,
        "hypernode.binpack.memory": 5,
        "hypernode.binpack.resources": "example.com/foo",
        "hypernode.binpack.resources.example.com/foo": 5,
        "hypernode.binpack.normal-pod.enable": True,
        "hypernode.binpack.normal-pod.fading": 1,
    }
    plugin = {"name": "network-topology-aware", "enableNodeOrder": True, "arguments": arguments}
    session = Session(snap, parse_config({"actions": "allocate", "tiers": [{"plugins": [plugin]}]}), default_registry())
    nta = session.plugin("network-topology-aware")
    assert isinstance(nta.plugin, NetworkTopologyAwarePlugin)
    info = session.jobs["default/task-without-network-topology"]
    per_tier = [
        nta.hyper_node_base(info, [f"hypernode-tier-{t}-index-0"])[f"hypernode-tier-{t}-index-0"] for t in range(1, 5)
    ]
    assert per_tier == pytest.approx([0.55, 0.51, 0.50125, 0.50025])
    assert sum(per_tier) / 4 == pytest.approx(0.515375)
    assert nta.hyper_node_base(info, [CLUSTER_TOP])[CLUSTER_TOP] == pytest.approx(0.50025)
    [task] = info.tasks.values()
    scores = session.node_scores(task, np.arange(n, dtype=np.intp))
    assert scores == pytest.approx(np.full(n, (sum(per_tier) + 0.50025) / 5 * 10 * 100))
