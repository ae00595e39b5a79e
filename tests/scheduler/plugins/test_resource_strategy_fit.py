"""resource-strategy-fit: Volcano's tests of its helpers as tables (Test_calculateWeight, TestScore,
Test_mostRequestedScore, Test_leastRequestedScore, Test_findResourceConfigWithPrefix,
Test_checkNodeResourceIsProportional, TestResourceStrategyFitPlugin_OnSessionOpen), each case under its Go name.
The session-level cases are data (``volcano_cases/resource_strategy_fit.yaml``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler import parse_config, run_cycle
from scheduler.plugins.resource_strategy_fit import (
    LEAST,
    MOST,
    SCORING_TYPE,
    SCORING_WEIGHT,
    StrategyFit,
    find_resource_config,
    least_requested,
    most_requested,
    parse_fit,
    parse_proportional,
    proportional_fits,
    strategy_score,
)
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.snapshot import Snapshot

CPU_MEM_LEAST = {"cpu": (LEAST, 1), "memory": (LEAST, 1)}
WEIGHT_CASES = [
    (
        "test1",
        {
            "resourceStrategyFitWeight": 10,
            "resources": {"cpu": {"type": MOST, "weight": 1}, "memory": {"type": LEAST, "weight": 2}},
        },
        StrategyFit(10, {"cpu": (MOST, 1), "memory": (LEAST, 2)}),
    ),
    (
        "test2",
        {"resources": {"cpu": {"type": MOST, "weight": 1}, "memory": {"type": LEAST, "weight": 2}}},
        StrategyFit(10, {"cpu": (MOST, 1), "memory": (LEAST, 2)}),
    ),
    ("test3", {"resourceStrategyFitWeight": 10}, StrategyFit(10, CPU_MEM_LEAST)),
    (
        "test4",
        {
            "ResourceStrategyFitPlusWeight": 10,
            "resources": {"cpu": {"type": LEAST, "weight": 1}, "*": {"type": MOST, "weight": 2}},
        },
        StrategyFit(10, {"cpu": (LEAST, 1)}),
    ),
    (
        "test5",
        {
            "ResourceStrategyFitPlusWeight": 10,
            "resources": {
                "nvidia.com/gpu/*": {"type": MOST, "weight": 3},
                "cloudml.gpu**": {"type": LEAST, "weight": 2},
            },
        },
        StrategyFit(10, {"nvidia.com/gpu/*": (MOST, 3)}),
    ),
    (
        "test6",
        {
            "ResourceStrategyFitPlusWeight": 10,
            "resources": {
                "memory": {"type": LEAST, "weight": 1},
                "cloudml.*.gpu": {"type": MOST, "weight": 2},
                "*.com/gpu": {"type": MOST, "weight": 3},
            },
        },
        StrategyFit(10, {"memory": (LEAST, 1)}),
    ),
    (
        "test7",
        {
            "ResourceStrategyFitPlusWeight": 10,
            "resources": {
                "nvidia.com/gpu/*": {"type": MOST, "weight": 3},
                "example.com/foo/*": {"type": LEAST, "weight": 2},
                "*test*resource*": {"type": MOST, "weight": 4},
                "*": {"type": LEAST, "weight": 1},
            },
        },
        StrategyFit(10, {"nvidia.com/gpu/*": (MOST, 3), "example.com/foo/*": (LEAST, 2)}),
    ),
]


@pytest.mark.parametrize(
    ("name", "args", "want"), WEIGHT_CASES, ids=[f"Test_calculateWeight:{c[0]}" for c in WEIGHT_CASES]
)
def test_calculate_weight(name: str, args: dict[str, Any], want: StrategyFit) -> None:
    """Test_calculateWeight (the helper, before the loader, which refuses unknown argument keys)."""
    assert parse_fit(args) == want


def _fit(weight: int, cpu: tuple[str, int] | None, memory: tuple[str, int] | None) -> StrategyFit:
    resources = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return StrategyFit(weight, resources)


def _node(
    used_cpu: float, used_mem: float, alloc_cpu: float, alloc_mem: float
) -> tuple[dict[str, float], dict[str, float]]:
    return {"cpu": used_cpu, "memory": used_mem}, {"cpu": alloc_cpu, "memory": alloc_mem}


def _pod(scoring: str = "", weights: str | None = None) -> dict[str, str]:
    out = {}
    if scoring:
        out[SCORING_TYPE] = scoring
    if weights is not None:
        out[SCORING_WEIGHT] = weights
    return out


SCORE_CASES = [
    ("test1", (100, 100), _node(200, 200, 500, 500), _fit(10, (LEAST, 1), (LEAST, 1)), {}, 400),
    ("test2", (100, 100), _node(200, 200, 400, 400), _fit(10, (LEAST, 1), (LEAST, 1)), {}, 250),
    ("test3", (100, 100), _node(200, 200, 500, 500), _fit(10, (MOST, 1), (MOST, 1)), {}, 600),
    ("test4", (100, 100), _node(200, 200, 400, 400), _fit(10, (MOST, 1), (MOST, 1)), {}, 750),
    ("test5", (100, 100), _node(200, 200, 500, 500), _fit(10, (LEAST, 2), (MOST, 1)), {}, 466.66666667),
    ("test6", (100, 100), _node(200, 200, 500, 500), _fit(10, (LEAST, 1), (MOST, 2)), {}, 533.33333333),
    ("test7", (0, 100), _node(200, 200, 500, 500), _fit(10, (LEAST, 1), (MOST, 2)), {}, 600),
    ("test8", (100, 100), _node(200, 200, 0, 400), _fit(10, (LEAST, 1), (MOST, 2)), {}, 500),
    ("test9", (100, 100), _node(200, 200, 500, 500), _fit(10, None, (MOST, 2)), {}, 600),
    ("pod-level-scoring-least-allocated", (100, 100), _node(200, 200, 500, 500), _fit(10, (LEAST, 1), (LEAST, 1)),
     _pod(LEAST, '{"cpu": 2, "memory": 1}'), 400),
    ("pod-level-scoring-most-allocated", (100, 100), _node(200, 200, 500, 500), _fit(10, (LEAST, 1), (LEAST, 1)),
     _pod(MOST, '{"cpu": 1, "memory": 2}'), 600),
    ("pod-level-scoring-invalid-json", (100, 100), _node(200, 200, 500, 500), _fit(10, (LEAST, 1), (LEAST, 1)),
     _pod(LEAST, "invalid-json"), 0),
    ("pod-level-scoring-missing-resource-weight", (100, 100), _node(200, 200, 500, 500),
     _fit(10, (LEAST, 1), (LEAST, 1)), _pod(LEAST, '{"cpu": 2}'), 400),
    ("zero-resources-requested", (0, 0), _node(200, 200, 500, 500), _fit(10, (LEAST, 1), (LEAST, 1)), {}, 0),
    ("node-fully-allocated", (100, 100), _node(500, 500, 500, 500), _fit(10, (LEAST, 1), (LEAST, 1)), {}, 0),
    ("mixed-scoring-strategies", (100, 100), _node(200, 200, 500, 500), _fit(10, (LEAST, 3), (MOST, 1)), {}, 450),
    ("high-weight-scenario", (100, 100), _node(200, 200, 500, 500), _fit(20, (LEAST, 5), (LEAST, 5)), {}, 800),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "req", "node", "fit", "ann", "want"), SCORE_CASES, ids=[f"TestScore:{c[0]}" for c in SCORE_CASES]
)
def test_score(
    name: str, req: tuple[float, float], node: Any, fit: StrategyFit, ann: dict[str, str], want: float
) -> None:
    """TestScore (requests are the non-zero resources, as Volcano's ``ResourceNames``)."""
    requests = {k: v for k, v in (("cpu", req[0]), ("memory", req[1])) if v}
    used, alloc = node
    assert strategy_score(requests, used, alloc, fit, ann) == pytest.approx(want, abs=1e-6)


#: Test_mostRequestedScore and Test_leastRequestedScore: (requested, used, capacity, weight) and the score (None:
#: Go's error, an overflow).
REQUESTED_CASES = [
    ("test1", (0, 0, 0, 0), 0),
    ("test2", (1, 2, 2, 1), None),
]


@pytest.mark.parametrize(
    ("fn", "args", "want"),
    [(fn, args, want) for fn in (most_requested, least_requested) for _, args, want in REQUESTED_CASES],
    ids=[f"{go}:{c[0]}" for go in ("Test_mostRequestedScore", "Test_leastRequestedScore") for c in REQUESTED_CASES],
)
def test_requested_scores(fn: Any, args: tuple[int, int, int, int], want: float | None) -> None:
    """test1: nothing requested on no capacity scores 0; test2: an overflow is an error (None here)."""
    assert fn(*args) == want


PREFIX_CASES = [
    ("exact_match_priority", "nvidia.com/gpu", {"nvidia.com/gpu": (MOST, 3), "nvidia.com/*": (LEAST, 1)}, (MOST, 3)),
    (
        "longest_prefix_match",
        "nvidia.com/gpu/v100",
        {"nvidia.com/gpu/*": (MOST, 2), "nvidia.com/*": (LEAST, 1)},
        (MOST, 2),
    ),
    ("no_match_found", "example.com/foo", {"nvidia.com/gpu/*": (MOST, 2)}, None),
    ("empty_resources_map", "any.resource", {}, None),
    (
        "multiple_valid_wildcards_longest_match",
        "cloudml.gpu/tensorflow/v2",
        {"cloudml.gpu/tensorflow/*": (MOST, 3), "cloudml.gpu/*": (LEAST, 2), "cloudml/*": (MOST, 1)},
        (MOST, 3),
    ),
]


@pytest.mark.parametrize(
    ("name", "resource", "resources", "want"),
    PREFIX_CASES,
    ids=[f"Test_findResourceConfigWithPrefix:{c[0]}" for c in PREFIX_CASES],
)
def test_find_resource_config_with_prefix(name: str, resource: str, resources: dict[str, Any], want: Any) -> None:
    assert find_resource_config(resource, resources) == want


G = 1000**3
PROPORTIONAL = {"nvidia.com/gpu": (4.0, 4.0)}
N1 = {"cpu": 30000, "memory": 30 * G, "nvidia.com/gpu": 6}
N2 = {"cpu": 26000, "memory": 26 * G, "nvidia.com/gpu": 2}
SMALL, BIG = {"cpu": 4000, "memory": 4 * G}, {"cpu": 10000, "memory": 10 * G}
PROPORTIONAL_CASES = [
    ("cpu_task_less_than_reserved_resource", SMALL, N1, True),
    ("cpu_task_greater_than_reserved_resource", BIG, N1, False),
    ("gpu_task_no_proportional_check", {**BIG, "nvidia.com/gpu": 1}, N1, True),
    ("cpu_task_less_than_idle_resource", BIG, N2, True),
]


@pytest.mark.parametrize(
    ("name", "req", "idle", "ok"),
    PROPORTIONAL_CASES,
    ids=[f"Test_checkNodeResourceIsProportional:{c[0]}" for c in PROPORTIONAL_CASES],
)
def test_check_node_resource_is_proportional(
    name: str, req: dict[str, float], idle: dict[str, float], ok: bool
) -> None:
    """Test_checkNodeResourceIsProportional: 4 cores and 4 GB kept idle per idle GPU for pods without GPUs."""
    assert (proportional_fits(req, idle, PROPORTIONAL) == "") is ok


def test_proportional_rates_default_to_one() -> None:
    got = parse_proportional(
        {
            "proportional": {
                "enable": True,
                "resources": "nvidia.com/gpu",
                "resourceProportion": {"nvidia.com/gpu.cpu": 4},
            }
        }
    )
    assert got == {"nvidia.com/gpu": (4.0, 1.0)}
    assert parse_proportional({"proportional": {"enable": False, "resources": "nvidia.com/gpu"}}) is None


def test_arguments() -> None:
    """sra_test.go TestArguments: SRA weight 3, resource weights 1 and 2 (sum 3); proportional rates."""
    from scheduler.plugins.resource_strategy_fit import ResourceStrategyFitPlugin

    plugin = ResourceStrategyFitPlugin(
        {
            "sra": {
                "enable": True,
                "resources": "nvidia.com/t4, nvidia.com/a10",
                "weight": 3,
                "resourceWeight": {"nvidia.com/t4": 1, "nvidia.com/a10": 2},
            },
            "proportional": {
                "enable": True,
                "resources": "nvidia.com/t4, nvidia.com/a10",
                "resourceProportion": {
                    "nvidia.com/t4.cpu": 3,
                    "nvidia.com/t4.memory": 6,
                    "nvidia.com/a10.cpu": 4,
                    "nvidia.com/a10.memory": 8,
                },
            },
        }
    )
    assert plugin.sra_weight == 3
    assert plugin.sra_resources == {"nvidia.com/t4": 1, "nvidia.com/a10": 2}
    assert sum(plugin.sra_resources.values()) == 3
    assert plugin.proportional == {"nvidia.com/t4": (3.0, 6.0), "nvidia.com/a10": (4.0, 8.0)}


def test_resource_strategy_fit_plugin_open() -> None:
    """TestResourceStrategyFitPlugin_OnSessionOpen:test1: the plugin (no arguments) opens on an empty session, and
    that session scores nothing and runs a cycle that decides nothing."""
    cfg = parse_config({"actions": "allocate", "tiers": [{"plugins": [{"name": "resource-strategy-fit"}]}]})
    session = Session(Snapshot.of(), cfg, default_registry())
    assert session.plugin("resource-strategy-fit") is not None
    assert not session.jobs
    assert run_cycle(Snapshot.of(), cfg).binds == {}
