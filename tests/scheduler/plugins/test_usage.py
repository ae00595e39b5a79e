"""The usage plugin's helper tests as tables, each case under its Go test and case name: usage_test.go's
TestUsageEstimatorConfig, TestUsageConfig*, TestUsageThresholdsKeepDefaultWhenOutOfRange,
TestUsageWeightsKeepDefaultWhenNegative and TestShouldAddToShadowCache; estimator_test.go's TestCalc*, TestEstimate*
and TestGetPodResourceRequestLimit (a pod's requests and limits as the manifests decode them); shadow_cache_test.go's
TestShadowLoadCache_* (Volcano's ShadowLoadCache is :class:`ShadowLoad`; TestShadowLoadCache_ConcurrentAccess and
TestShadowLoadCache_ResetReusesMaps check Go's locking and map reuse, which have no counterpart). Its session cases
are ``tests/scheduler/volcano_cases/usage.yaml``. Plus our own: the shadow estimate of pods placed in the session
steers the next pod of a gang, and a pod's limits give ``burst_ratio`` its effect."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import yaml

from scheduler import parse_config, run_cycle
from scheduler.config import ConfigError
from scheduler.decode import load_manifests, snapshot_from_manifests
from scheduler.framework import build_plugin
from scheduler.model import TaskStatus
from scheduler.plugins.usage import (
    ShadowLoad,
    UsagePlugin,
    UsageState,
    composite,
    estimate_best_effort,
    estimate_pod,
    load_composite,
    node_score,
    risk_factor,
    shadow_tracked,
)
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.snapshot import Snapshot
from scheduler.testing import make_job, make_node, make_snapshot

MI = 1024 * 1024


def _state(args: dict[str, Any]) -> UsageState:
    """The usage plugin configured with ``args``, opened over an empty session: its arguments as read."""
    cfg = parse_config({"actions": "allocate", "tiers": [{"plugins": [{"name": "usage", "arguments": args}]}]})
    plugin = build_plugin(UsagePlugin, cfg.tiers[0].plugins[0].arguments)
    return plugin.open(Session(Snapshot.of(), cfg, default_registry()))


ESTIMATOR_CASES = [
    ("TestUsageEstimatorConfig:defaults", {}, (0.7, 0.0, 0.6, 1.2, 250.0, 200.0 * MI)),
    (
        "TestUsageEstimatorConfig:configured",
        {
            "estimator": {
                "request_ratio": 0.8,
                "burst_ratio": 0.3,
                "risk_threshold": 0.75,
                "risk_factor": 1.5,
                "be_cpu": "500m",
                "be_mem": "300Mi",
            }
        },
        (0.8, 0.3, 0.75, 1.5, 500.0, 300.0 * MI),
    ),
    (
        "TestUsageEstimatorConfig:invalid values keep the defaults",
        {
            "estimator": {
                "request_ratio": 1.5,
                "burst_ratio": -0.1,
                "risk_threshold": 2.0,
                "risk_factor": 0.5,
                "be_cpu": "-1",
                "be_mem": "bad",
            }
        },
        (0.7, 0.0, 0.6, 1.2, 250.0, 200.0 * MI),
    ),
    (
        "TestUsageConfigParsesBestEffortResourceValues:strings are quantities",
        {"estimator": {"be_cpu": "500m", "be_mem": "300Mi"}},
        (0.7, 0.0, 0.6, 1.2, 500.0, 300.0 * MI),
    ),
    (
        "TestUsageConfigParsesBestEffortResourceValues:numbers are millicores and Mi",
        {"estimator": {"be_cpu": 500, "be_mem": 200}},
        (0.7, 0.0, 0.6, 1.2, 500.0, 200.0 * MI),
    ),
]


@pytest.mark.parametrize(("name", "args", "want"), ESTIMATOR_CASES, ids=[c[0] for c in ESTIMATOR_CASES])
def test_estimator_arguments(name: str, args: dict[str, Any], want: tuple[float, ...]) -> None:
    st = _state(args)
    e = st.estimator
    got = (e["request_ratio"], e["burst_ratio"], e["risk_threshold"], e["risk_factor"], *st.best_effort.values())
    assert got == pytest.approx(want)


def test_out_of_range_thresholds_and_negative_weights_keep_the_defaults() -> None:
    """TestUsageThresholdsKeepDefaultWhenOutOfRange and TestUsageWeightsKeepDefaultWhenNegative."""
    st = _state({"thresholds": {"cpu": -1, "mem": 101}, "usage.weight": -1, "cpu.weight": -1, "memory.weight": -1})
    assert st.thresholds == {"cpu": 80.0, "mem": 80.0}
    assert (st.usage_weight, st.cpu_weight, st.mem_weight) == (5, 1, 1)


STRING_CASES = [
    ("usage.weight", {"usage.weight": "7"}, "expected an integer"),
    ("cpu.weight", {"cpu.weight": "2"}, "expected an integer"),
    ("thresholds", {"thresholds": {"cpu": "85"}}, "cpu: expected an integer percent"),
    ("estimator", {"estimator": {"request_ratio": "0.8"}}, "request_ratio: expected a number"),
    ("estimator", {"estimator": {"ratio": 0.8}}, "unknown key 'ratio'"),
    ("thresholds", {"thresholds": {"memory": 80}}, "unknown key 'memory'"),
]


@pytest.mark.parametrize(
    ("arg", "args", "message"),
    STRING_CASES,
    ids=[
        f"{'ours' if 'unknown key' in c[2] else 'TestUsageConfigKeepsDefaultForGenericStringValues'}:{c[0]}:{c[2]}"
        for c in STRING_CASES
    ],
)
def test_generic_string_values_are_refused_naming_the_argument(arg: str, args: dict[str, Any], message: str) -> None:
    """Volcano's TestUsageConfigKeepsDefaultForGenericStringValues: Volcano keeps the defaults silently; we
    refuse a wrongly typed argument at load time (docs/scheduler.md, deviation 12), naming it."""
    with pytest.raises(ConfigError) as err:
        _state(args)
    assert f"arguments.{arg}" in str(err.value)
    assert message in str(err.value)


#: TestShouldAddToShadowCache (a pod on no node is never asked: the plugin looks at the pods of each node, so the
#: first two Go cases are a Pending pod, with or without a node).
SHADOW_CASES = [
    ("pending without node is not tracked", TaskStatus.PENDING, 0.0, False),
    ("pending with node is not treated as allocated", TaskStatus.PENDING, 0.0, False),
    ("allocated task is tracked", TaskStatus.ALLOCATED, 0.0, True),
    ("binding task is tracked", TaskStatus.BINDING, 0.0, True),
    ("bound task is tracked", TaskStatus.BOUND, 0.0, True),
    ("ours: running task without start is tracked", TaskStatus.RUNNING, 0.0, True),
    ("recent running task is tracked", TaskStatus.RUNNING, 1000.0 - 60, True),
    ("old running task is not tracked", TaskStatus.RUNNING, 1000.0 - 600, False),
    ("completed task is not tracked", TaskStatus.SUCCEEDED, 0.0, False),
]


@pytest.mark.parametrize(
    ("name", "status", "started", "want"),
    SHADOW_CASES,
    ids=[f"TestShouldAddToShadowCache:{c[0]}" for c in SHADOW_CASES],
)
def test_should_add_to_shadow_cache(name: str, status: TaskStatus, started: float, want: bool) -> None:
    assert shadow_tracked(status, started, 1000.0, interval=300.0) is want


def test_estimate_is_clamped_to_the_limit() -> None:
    assert estimate_pod(1000, 1000, 0.7, 0.0, 1.2) == pytest.approx(840)
    assert estimate_pod(1000, 1000, 0.9, 0.0, 1.2) == pytest.approx(1000)
    assert estimate_pod(1000, 2000, 0.7, 0.5, 1.0) == pytest.approx(1200)


CONF = """
actions: allocate
tiers:
- plugins:
  - name: usage
"""


def test_pods_placed_in_the_session_count_as_shadow_load() -> None:
    """Two equal 4-CPU nodes at 20 % and 25 % cpu: the first pod goes to the cooler a, whose shadow estimate
    (0.7 * 2 CPUs = 35 %) then makes b the cooler for the second."""
    a = replace(make_node("a", cpu="4", memory="16Gi"), usage={"10m": {"cpu": 20.0, "memory": 10.0}}, usage_time=0.0)
    b = replace(make_node("b", cpu="4", memory="16Gi"), usage={"10m": {"cpu": 25.0, "memory": 10.0}}, usage_time=0.0)
    job = make_job("j", replicas=2, min_available=2, cpu="2", memory="1Gi")
    result = run_cycle(replace(make_snapshot([a, b], [job]), now=60.0), parse_config(CONF))
    assert sorted(result.binds.values()) == ["a", "b"]


def test_a_hot_node_is_filtered_and_stale_metrics_are_ignored() -> None:
    hot = replace(make_node("hot"), usage={"10m": {"cpu": 95.0, "memory": 10.0}}, usage_time=0.0)
    stale = replace(make_node("stale"), usage={"10m": {"cpu": 95.0, "memory": 10.0}}, usage_time=0.0)
    job = make_job("j", replicas=1, min_available=1, cpu="1", memory="1Gi")
    fresh = run_cycle(replace(make_snapshot([hot], [job]), now=60.0), parse_config(CONF))
    assert fresh.binds == {}
    assert "the CPU load of the node exceeds the upper limit." in fresh.unschedulable["default/j"].message
    old = run_cycle(replace(make_snapshot([stale], [job]), now=400.0), parse_config(CONF))
    assert old.binds == {"default/j-0": "stale"}


# estimator_test.go: each helper's cases as (case, arguments, expected), within Go's 1e-6.
ESTIMATOR_HELPER_CASES: list[tuple[str, Any, tuple[Any, ...], float]] = [
    ("TestCalcLoadCompositePercentage:equal weights", load_composite, (0.4, 0.6, 1, 1), 0.5),
    ("TestCalcLoadCompositePercentage:cpu weight dominant", load_composite, (0.8, 0.2, 3, 1), 0.65),
    ("TestCalcLoadCompositePercentage:zero weights", load_composite, (0.8, 0.2, 0, 0), 0.0),
    ("TestCalcAppliedRiskFactor:below threshold", risk_factor, (0.59, 0.6, 1.2), 1.0),
    ("TestCalcAppliedRiskFactor:at threshold", risk_factor, (0.6, 0.6, 1.2), 1.2),
    ("TestCalcAppliedRiskFactor:above threshold", risk_factor, (0.9, 0.6, 1.2), 1.2),
    ("TestCalcAppliedRiskFactor:risk factor lower than one is ignored", risk_factor, (0.9, 0.6, 0.8), 1.0),
    ("TestEstimatePodResource:default weights estimate request", estimate_pod, (500, 2000, 1.0, 0.0, 1.0), 500),
    ("TestEstimatePodResource:zero weights estimate zero", estimate_pod, (500, 2000, 0.0, 0.0, 1.0), 0),
    (
        "TestEstimatePodResource:request and burst weights cover full limit",
        estimate_pod,
        (500, 2000, 1.0, 1.0, 1.0),
        2000,
    ),
    ("TestEstimatePodResource:custom burst weight", estimate_pod, (500, 2000, 0.5, 0.2, 1.0), 550),
    ("TestEstimatePodResource:risk factor applies and clamps to limit", estimate_pod, (500, 600, 1.0, 0.0, 1.2), 600),
    (
        "TestEstimatePodResource:missing limit uses request as effective limit",
        estimate_pod,
        (500, 0, 1.0, 1.0, 1.2),
        500,
    ),
    ("TestEstimateBestEffortResource:base configured value", estimate_best_effort, (250, 1.0), 250),
    ("TestEstimateBestEffortResource:risk factor applies", estimate_best_effort, (250, 1.2), 300),
    (
        "TestEstimateBestEffortResource:negative configured value is clamped to zero",
        estimate_best_effort,
        (-1, 1.2),
        0,
    ),
    ("TestCalcCompositeUtilization:no shadow load, 50% real", composite, (50, 0, 8000), 0.5),
    ("TestCalcCompositeUtilization:50% real + shadow brings to 75%", composite, (50, 2000, 8000), 0.75),
    ("TestCalcCompositeUtilization:overflow clamped to 1.0", composite, (80, 5000, 8000), 1.0),
    ("TestCalcCompositeUtilization:zero capacity returns 0", composite, (50, 1000, 0), 0.0),
    ("TestCalcCompositeUtilization:zero everything", composite, (0, 0, 8000), 0.0),
    ("TestCalcCompositeUtilization:100% real load, no shadow", composite, (100, 0, 8000), 1.0),
    ("TestCalcNodeScore:zero utilization - max score with usageWeight=1", node_score, (0, 0, 1, 1, 1), 100),
    ("TestCalcNodeScore:full utilization - zero score", node_score, (1.0, 1.0, 1, 1, 1), 0),
    ("TestCalcNodeScore:50% utilization both - score 250 with usageWeight=5", node_score, (0.5, 0.5, 1, 1, 5), 250),
    ("TestCalcNodeScore:cpu 30%, mem 50%, equal weights, usageWeight=5", node_score, (0.3, 0.5, 1, 1, 5), 300),
    (
        "TestCalcNodeScore:cpu 60%, mem 50%, cpu weight=2, mem weight=8, usageWeight=5",
        node_score,
        (0.6, 0.5, 2, 8, 5),
        240,
    ),
    ("TestCalcNodeScore:zero weights returns 0", node_score, (0.5, 0.5, 0, 0, 5), 0),
]


@pytest.mark.parametrize(
    ("name", "fn", "args", "want"), ESTIMATOR_HELPER_CASES, ids=[c[0] for c in ESTIMATOR_HELPER_CASES]
)
def test_estimator_helpers(name: str, fn: Any, args: tuple[Any, ...], want: float) -> None:
    assert fn(*args) == pytest.approx(want, abs=1e-6)


def _container(requests: dict[str, str] | None, limits: dict[str, str] | None, sidecar: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **({"restartPolicy": "Always"} if sidecar else {})}


GI = 1024**3

#: TestGetPodResourceRequestLimit: (case, containers, init containers, (cpu request, cpu limit, memory request,
#: memory limit)), millicores and bytes; the pod's requests and limits as the manifests decode them.
REQUEST_LIMIT_CASES = [
    (
        "single container with cpu and memory request and limit",
        [_container({"cpu": "500m", "memory": "1Gi"}, {"cpu": "1000m", "memory": "2Gi"})],
        [],
        (500, 1000, 1 * GI, 2 * GI),
    ),
    (
        "multiple containers - requests/limits summed",
        [
            _container({"cpu": "200m", "memory": "1Gi"}, {"cpu": "500m", "memory": "2Gi"}),
            _container({"cpu": "300m", "memory": "2Gi"}, {"cpu": "700m", "memory": "3Gi"}),
        ],
        [],
        (500, 1200, 3 * GI, 5 * GI),
    ),
    (
        "init container takes max",
        [_container({"cpu": "500m", "memory": "1Gi"}, {"cpu": "1000m", "memory": "2Gi"})],
        [_container({"cpu": "2000m", "memory": "4Gi"}, {"cpu": "3000m", "memory": "5Gi"})],
        (2000, 3000, 4 * GI, 5 * GI),
    ),
    (
        "restartable init container is added as sidecar",
        [_container({"cpu": "1000m", "memory": "2Gi"}, {"cpu": "2000m", "memory": "3Gi"})],
        [_container({"cpu": "1000m", "memory": "1Gi"}, {"cpu": "2000m", "memory": "2Gi"}, sidecar=True)],
        (2000, 4000, 3 * GI, 5 * GI),
    ),
    ("no resources specified (BestEffort)", [_container(None, None)], [], (0, 0, 0, 0)),
]


@pytest.mark.parametrize(
    ("name", "containers", "init", "want"),
    REQUEST_LIMIT_CASES,
    ids=[f"TestGetPodResourceRequestLimit:{c[0]}" for c in REQUEST_LIMIT_CASES],
)
def test_get_pod_resource_request_limit(
    name: str, containers: list[dict[str, Any]], init: list[dict[str, Any]], want: tuple[int, int, int, int]
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": containers, "initContainers": init},
    }
    [task] = snapshot_from_manifests(load_manifests(yaml.safe_dump(pod))).tasks
    assert (task.requests.cpu, task.limits.cpu, task.requests.memory, task.limits.memory) == want


def _shadow_ops(cache: ShadowLoad, ops: list[tuple[Any, ...]]) -> None:
    for op, *args in ops:
        if op == "add":
            cache.add(*args)
        elif op == "sub":
            cache.sub(*args)
        else:
            cache.reset()


#: shadow_cache_test.go: (case, operations on nodes 0-2 — add(node, pod, cpu, mem), sub(pod), reset — and the
#: expected (cpu, memory) per node, (node, cpu, memory) per pod still held (None: not held), and IsClean where
#: the Go test asks it (None elsewhere).
SHADOW_LOAD_CASES: list[
    tuple[str, list[tuple[Any, ...]], dict[int, tuple[float, float]], dict[str, Any], bool | None]
] = [
    ("TestNewShadowLoadCache", [], {0: (0, 0)}, {}, True),
    (
        "TestShadowLoadCache_AddEstimate",
        [("add", 0, "task1", 1000, 2048), ("add", 0, "task2", 500, 1024), ("add", 0, "task3", 800, 1600)],
        {0: (2300, 4672)},
        {"task1": (0, 1000, 2048), "task3": (0, 800, 1600)},
        None,
    ),
    (
        "TestShadowLoadCache_AddEstimate_UpdateExistingTask",
        [("add", 0, "task1", 1000, 2048), ("add", 1, "task1", 500, 1024)],
        {0: (0, 0), 1: (500, 1024)},
        {"task1": (1, 500, 1024)},
        None,
    ),
    (
        "TestShadowLoadCache_AddEstimate_UpdateExistingTask:then subtracted",
        [("add", 0, "task1", 1000, 2048), ("add", 1, "task1", 500, 1024), ("sub", "task1")],
        {0: (0, 0), 1: (0, 0)},
        {"task1": None},
        None,
    ),
    (
        "TestShadowLoadCache_SubEstimateBySnapshot",
        [("add", 0, "task1", 1000, 2048), ("add", 0, "task2", 500, 1024), ("sub", "task2")],
        {0: (1000, 2048)},
        {"task2": None},
        None,
    ),
    (
        "TestShadowLoadCache_SubEstimateBySnapshot:the remaining pod",
        [("add", 0, "task1", 1000, 2048), ("add", 0, "task2", 500, 1024), ("sub", "task2"), ("sub", "task1")],
        {0: (0, 0)},
        {"task1": None},
        None,
    ),
    (
        "TestShadowLoadCache_SubEstimateBySnapshot_NonExistent",
        [("add", 0, "task1", 100, 200), ("sub", "nonexistent")],
        {0: (100, 200)},
        {},
        None,
    ),
    (
        "TestShadowLoadCache_SnapshotConsistency:all three",
        [("add", 0, "pod1", 800, 1600), ("add", 0, "pod2", 960, 1920), ("add", 0, "pod3", 1152, 2304)],
        {0: (2912, 5824)},
        {},
        None,
    ),
    (
        "TestShadowLoadCache_SnapshotConsistency:after pod3",
        [
            ("add", 0, "pod1", 800, 1600),
            ("add", 0, "pod2", 960, 1920),
            ("add", 0, "pod3", 1152, 2304),
            ("sub", "pod3"),
        ],
        {0: (1760, 3520)},
        {},
        None,
    ),
    (
        "TestShadowLoadCache_SnapshotConsistency:after pod1",
        [
            ("add", 0, "pod1", 800, 1600),
            ("add", 0, "pod2", 960, 1920),
            ("add", 0, "pod3", 1152, 2304),
            ("sub", "pod3"),
            ("sub", "pod1"),
        ],
        {0: (960, 1920)},
        {},
        None,
    ),
    (
        "TestShadowLoadCache_SnapshotConsistency:after all",
        [
            ("add", 0, "pod1", 800, 1600),
            ("add", 0, "pod2", 960, 1920),
            ("add", 0, "pod3", 1152, 2304),
            ("sub", "pod3"),
            ("sub", "pod1"),
            ("sub", "pod2"),
        ],
        {0: (0, 0)},
        {},
        None,
    ),
    (
        "TestShadowLoadCache_MultipleNodes",
        [("add", 0, "t1", 1000, 2000), ("add", 1, "t2", 3000, 4000), ("add", 2, "t3", 500, 800)],
        {0: (1000, 2000), 1: (3000, 4000), 2: (500, 800)},
        {},
        None,
    ),
    ("TestShadowLoadCache_GetNodeEst_NonExistentNode", [], {2: (0, 0)}, {}, None),
    (
        "TestShadowLoadCache_Reset",
        [("add", 0, "t1", 1000, 2000), ("add", 1, "t2", 3000, 4000), ("reset",)],
        {0: (0, 0), 1: (0, 0)},
        {"t1": None},
        True,
    ),
    ("TestShadowLoadCache_IsClean", [("add", 0, "t1", 100, 200)], {}, {}, False),
    (
        "TestShadowLoadCache_AllocateDeallocateExactMatch",
        [
            ("add", 0, "task-a", 1234.5678, 9876543.21),
            ("add", 0, "task-b", 567.89, 1234567.89),
            ("sub", "task-a"),
            ("sub", "task-b"),
        ],
        {0: (0, 0)},
        {},
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "ops", "nodes", "pods", "clean"), SHADOW_LOAD_CASES, ids=[c[0] for c in SHADOW_LOAD_CASES]
)
def test_shadow_load(
    name: str,
    ops: list[tuple[Any, ...]],
    nodes: dict[int, tuple[float, float]],
    pods: dict[str, Any],
    clean: bool | None,
) -> None:
    cache = ShadowLoad(3)
    _shadow_ops(cache, ops)
    for node, want in nodes.items():
        assert cache.node(node) == pytest.approx(want, abs=1e-6)
    for pod, held in pods.items():
        assert cache.pod(pod) == (None if held is None else pytest.approx(held))
    if clean is not None:
        assert cache.is_clean() is clean


#: A minute after the nodes' metrics were taken (2024-01-01T00:00:00Z).
NOW = 1704067200.0 + 60


def test_a_pods_limit_gives_burst_ratio_its_effect() -> None:
    """Two 8-CPU nodes with fresh metrics, a idle and b at 20 % cpu; the gang's first pod goes to a. Limited to 5
    CPUs, with burst_ratio 1, it is estimated at 0.7 * 1 + 1 * 4 = 4.7 CPUs (59 % of a), so the second pod goes to
    b; without a limit its estimate is 0.7 CPU (9 %) and a stays the cooler node."""
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {
                    "volcanoweb.io/node-usage": json.dumps({"10m": {"cpu": cpu, "memory": 0}}),
                    "volcanoweb.io/node-usage-time": "2024-01-01T00:00:00Z",
                },
            },
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "10"}},
        }
        for name, cpu in (("a", 0), ("b", 20))
    ]
    docs.append(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"},
            "spec": {"minMember": 2},
            "status": {"phase": "Inqueue"},
        }
    )
    for i, limit in enumerate(("5", "1")):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p{i}",
                    "namespace": "default",
                    "annotations": {"scheduling.k8s.io/group-name": "pg"},
                },
                "spec": {
                    "schedulerName": "volcano",
                    "containers": [_container({"cpu": "1", "memory": "1Gi"}, {"cpu": limit, "memory": "1Gi"})],
                },
            }
        )
    snap = replace(snapshot_from_manifests(load_manifests(yaml.safe_dump_all(docs))), now=NOW)
    conf = CONF + "    arguments: {estimator: {burst_ratio: 1.0}}\n"
    assert sorted(run_cycle(snap, parse_config(conf)).binds.values()) == ["a", "b"]
    without = [dict(d) for d in docs]
    for d in without:
        if d["kind"] == "Pod":
            d["spec"] = {**d["spec"], "containers": [_container({"cpu": "1", "memory": "1Gi"}, None)]}
    snap = replace(snapshot_from_manifests(load_manifests(yaml.safe_dump_all(without))), now=NOW)
    assert sorted(run_cycle(snap, parse_config(conf)).binds.values()) == ["a", "a"]
