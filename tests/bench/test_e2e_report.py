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


def test_the_insights_a_b_alternates_the_modes_and_compares_their_medians(monkeypatch: Any, capsys: Any) -> None:
    """``bench e2e-ab`` runs ``bench e2e`` per mode in alternating order and compares medians over rounds."""
    import json
    import subprocess
    from types import SimpleNamespace

    from bench import cli

    calls: list[list[str]] = []

    real = subprocess.run

    def fake(argv: list[str], **kwargs: Any) -> Any:
        if argv[1:3] != ["-m", "bench"]:
            return real(argv, **kwargs)  # the machine's facts (git)
        calls.append(argv)
        on = "--no-insights" not in argv
        section = {
            "ok": True,
            "jobs_per_second": 19.0 if on else 20.0,
            "scheduling_cycles": {"duration_ms": {"median": 1050.0 if on else 1000.0}, "record_ms": {"median": 0.0}},
            "cpu_profile": {
                "total_cpu_ms_per_job": 80.0,
                "stages": {"insights record": 1.2} if on else {},
            },
        }
        return SimpleNamespace(returncode=0, stdout=json.dumps({"end_to_end": section}), stderr="")

    monkeypatch.setattr(subprocess, "run", fake)
    assert cli.main(["e2e-ab", "--rounds", "2", "--", "--jobs", "100", "--ws-clients", "0"]) == 0
    modes = ["--no-insights" in argv for argv in calls]
    assert modes == [False, True, True, False]  # alternating order per round
    assert all(argv[3:7] == ["e2e", "--jobs", "100", "--ws-clients"] for argv in calls)
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["cycle_overhead_pct"] == 5.0
    assert summary["throughput_change_pct"] == -5.0
    assert summary["recording_cpu_ms_per_job"] == 1.2
    assert summary["recording_cpu_share_pct"] == 1.5


def test_statements_and_postgres_counters_per_job() -> None:
    from bench import cpuprof

    before = {1: {"statements": 100, "argv": ["uvicorn"]}, 2: {"statements": 5}}
    after = {1: {"statements": 1100, "argv": ["uvicorn"]}, 2: {"statements": 505}, 3: {"statements": 50}}
    cmd = {1: "python uvicorn volcanoweb.asgi:application", 2: "celery -A volcanoweb worker -n worker@%h"}
    out = cpuprof.statements(before, after, cmd, jobs=100)
    assert out["per_role"] == {"web": 10.0, "controller worker": 5.0, "other": 0.5}
    assert out["per_job"] == 15.5
    grown = cpuprof.per_job({"xact_commit": 10, "tup_inserted": 0}, {"xact_commit": 510, "tup_inserted": 1200}, 100)
    assert grown == {"xact_commit": 5.0, "tup_inserted": 12.0}
