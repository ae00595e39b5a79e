"""bench-smoke inside ``make test``: runs ``python -m bench smoke`` and checks it, never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_smoke_runs_and_reports_valid_json() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, f"bench smoke failed:\n{proc.stderr[-3000:]}\n{proc.stdout[-3000:]}"
    report = json.loads(proc.stdout)
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
    assert "machine" in report
    assert report["machine"]["cores"]
