"""The usage plugin's helper tests as tables (Volcano's TestUsageEstimatorConfig, TestUsageConfig*,
TestUsageThresholdsKeepDefaultWhenOutOfRange, TestUsageWeightsKeepDefaultWhenNegative, TestShouldAddToShadowCache);
its session cases are ``tests/scheduler/volcano_cases/usage.yaml``. Plus our own: the shadow estimate of pods
placed in the session steers the next pod of a gang."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import ConfigError
from scheduler.model import TaskStatus
from scheduler.plugins.usage import UsagePlugin, estimate_pod, shadow_tracked
from scheduler.testing import make_job, make_node, make_snapshot

MI = 1024 * 1024


def _plugin(args: dict[str, Any]) -> UsagePlugin:
    cfg = parse_config({"actions": "allocate", "tiers": [{"plugins": [{"name": "usage", "arguments": args}]}]})
    return UsagePlugin(cfg.tiers[0].plugins[0].arguments)


ESTIMATOR_CASES = [
    ("defaults", {}, (0.7, 0.0, 0.6, 1.2, 250.0, 200.0 * MI)),
    (
        "configured",
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
        "invalid values keep the defaults",
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
    ("numeric best-effort values: millicores and Mi", {"estimator": {"be_cpu": 500, "be_mem": 200}}, None),
]


@pytest.mark.parametrize(("name", "args", "want"), ESTIMATOR_CASES, ids=[c[0] for c in ESTIMATOR_CASES])
def test_estimator_arguments(name: str, args: dict[str, Any], want: tuple[float, ...] | None) -> None:
    p = _plugin(args)
    if want is None:
        assert p.best_effort == {"be_cpu": 500.0, "be_mem": 200.0 * MI}
        return
    e = p.estimator
    got = (e["request_ratio"], e["burst_ratio"], e["risk_threshold"], e["risk_factor"], *p.best_effort.values())
    assert got == pytest.approx(want)


def test_out_of_range_thresholds_and_negative_weights_keep_the_defaults() -> None:
    p = _plugin({"thresholds": {"cpu": -1, "mem": 101}, "usage.weight": -1, "cpu.weight": -1, "memory.weight": -1})
    assert p.thresholds == {"cpu": 80.0, "mem": 80.0}
    assert (p.usage_weight, p.cpu_weight, p.mem_weight) == (5, 1, 1)


STRING_CASES = [
    ("usage.weight", {"usage.weight": "7"}, "expected an integer"),
    ("cpu.weight", {"cpu.weight": "2"}, "expected an integer"),
    ("thresholds", {"thresholds": {"cpu": "85"}}, "cpu: expected an integer percent"),
    ("estimator", {"estimator": {"request_ratio": "0.8"}}, "request_ratio: expected a number"),
    ("estimator", {"estimator": {"ratio": 0.8}}, "unknown key 'ratio'"),
    ("thresholds", {"thresholds": {"memory": 80}}, "unknown key 'memory'"),
]


@pytest.mark.parametrize(("arg", "args", "message"), STRING_CASES)
def test_generic_string_values_are_refused_naming_the_argument(arg: str, args: dict[str, Any], message: str) -> None:
    """Volcano's TestUsageConfigKeepsDefaultForGenericStringValues: Volcano keeps the defaults silently; we
    refuse a wrongly typed argument at load time (docs/scheduler.md, deviation 12), naming it."""
    with pytest.raises(ConfigError) as err:
        _plugin(args)
    assert f"arguments.{arg}" in str(err.value)
    assert message in str(err.value)


SHADOW_CASES = [
    ("pending without node is not tracked", TaskStatus.PENDING, 0.0, False),
    ("allocated task is tracked", TaskStatus.ALLOCATED, 0.0, True),
    ("binding task is tracked", TaskStatus.BINDING, 0.0, True),
    ("bound task is tracked", TaskStatus.BOUND, 0.0, True),
    ("running task without start is tracked", TaskStatus.RUNNING, 0.0, True),
    ("recent running task is tracked", TaskStatus.RUNNING, 1000.0 - 60, True),
    ("old running task is not tracked", TaskStatus.RUNNING, 1000.0 - 600, False),
    ("completed task is not tracked", TaskStatus.SUCCEEDED, 0.0, False),
]


@pytest.mark.parametrize(("name", "status", "started", "want"), SHADOW_CASES, ids=[c[0] for c in SHADOW_CASES])
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
