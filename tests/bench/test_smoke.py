"""bench-smoke inside ``make test``: runs ``python -m bench smoke`` and checks it, never its timings."""

from __future__ import annotations

from tests.bench.runbench import run_bench


def test_bench_smoke_runs_and_reports_valid_json() -> None:
    report = run_bench("smoke")
    assert report["kind"] == "bench-smoke"
    assert report["ok"] is True
    cases = {c["workload"] for c in report["cases"]}
    assert {"W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"} <= cases
    for case in report["cases"]:
        assert case["size"] == "S"
        assert case["correctness_errors"] == [], case["workload"]
        assert case["quality"]["partial_gangs"] == 0
        assert case["quality"]["capacity_violations"] == 0
        assert case["deterministic"], case["workload"]
        # Runs pass one primed SessionCache; a run without it made the same placements.
        assert case["session_cache"] is True
        assert case["cache"]["misses"] + case["cache"]["updates"] + case["cache"]["hits"] == case["sessions"]
        assert case["other_cache_mode"] == {"session_cache": False, "placement_hash": case["placement_hash"]}
    assert "machine" in report
    assert report["machine"]["cores"]


def test_cached_runs_reuse_the_state_and_match_uncached_runs() -> None:
    from bench.driver import before_work, run_case
    from bench.metrics import placement_hash
    from bench.runner import build

    case, snap = build("W8b", "S", 1)
    case.sim_seconds = 8
    warm = before_work(snap, case.measured)
    assert {id(t) for t in warm.tasks} <= {id(t) for t in snap.tasks}, "the primed snapshot shares the case's objects"
    cached, plain = run_case(case, snap), run_case(case, snap, cache=False)
    assert cached.session_cache
    assert not plain.session_cache
    assert cached.cache_counts["misses"] == 0, "primed: every timed cycle reuses or updates the state"
    assert cached.cache_counts["updates"] > 0
    assert placement_hash(cached) == placement_hash(plain)
    assert [s.binds for s in cached.sessions] == [s.binds for s in plain.sessions]
