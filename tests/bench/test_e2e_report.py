"""The end-to-end report's pure parts: which issue-17 target applies, and the CPU breakdown per job."""

from __future__ import annotations

from typing import Any

import pytest

from bench import cpuprof, targets


def _section(**params: Any) -> dict[str, Any]:
    return {
        "status": "measured",
        "params": {"jobs": 2000, **params},
        "jobs_per_second": 60.0,
        "lost_jobs": 0,
        "duplicated": 0,
        "api_latency": {"Perc99": 100.0},
    }


@pytest.mark.parametrize(
    ("params", "goal", "met"),
    [({}, 150, False), ({"jobs_per_request": 500}, 500, False), ({"mode": "embedded"}, 50, True)],
)
def test_the_throughput_target_depends_on_the_scenario(params: dict[str, Any], goal: float, met: bool) -> None:
    entries = targets.evaluate_e2e(_section(**params))
    first = entries[0]
    assert first["goal"] == f">= {goal} jobs/s"
    assert first["met"] is met
    assert next(e for e in entries if "lost" in e["target"])["met"] is True


def test_the_breakdown_charges_stages_and_remainders_per_role() -> None:
    cmd = {1: "python -m uvicorn volcanoweb.asgi:application", 2: "celery -A volcanoweb worker -n worker@%h"}
    stack = {1: 2.0, 2: 1.0}  # CPU seconds over the run
    stages = {1: {"api request": 0.5}, 2: {"controller sync": 0.8}}
    out = cpuprof.breakdown(100, stack, cmd, 0.5, stages, wall=10.0)
    assert out["stages"]["api request"] == 5.0  # ms per job
    assert out["stages"]["controller sync"] == 8.0
    assert out["stages"]["other in web"] == 15.0
    assert out["stages"]["other in controller worker"] == 2.0
    assert out["stages"]["PostgreSQL backends"] == 5.0
    assert out["total_cpu_ms_per_job"] == 35.0
    assert out["cpu_cores_busy"] == 0.35


def test_stage_diff_subtracts_the_first_reading() -> None:
    before = {7: {"stages": {"a": {"cpu_seconds": 1.0, "calls": 1}}}}
    after = {7: {"stages": {"a": {"cpu_seconds": 3.5, "calls": 4}, "b": {"cpu_seconds": 0.5, "calls": 1}}}}
    assert cpuprof.stage_diff(before, after) == {7: {"a": 2.5, "b": 0.5}}
