"""``python -m bench resync`` inside ``make test``: a small run on PostgreSQL, checked for what it finds, never
for its timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_bench_resync_finds_every_new_drift_in_its_scoped_check() -> None:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.fail("the suite runs this test on PostgreSQL (scripts/with-services.sh sets DATABASE_URL)")
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "resync", "--jobs", "60", "--changed", "6", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, f"bench resync failed:\n{proc.stderr[-3000:]}\n{proc.stdout[-3000:]}"
    report = json.loads(proc.stdout)
    section = report["resync"]
    assert report["kind"] == "bench-resync"
    assert report["ok"] is True
    assert section["database_vendor"] == "postgresql"
    assert section["params"]["changed"] == 6
    assert section["drifted_since_found_by_the_check_over_every_job"] > 0
    assert section["drifted_found_by_the_scoped_check"] >= section["drifted_since_found_by_the_check_over_every_job"]
    assert section["drift_check_every_job_ms"] > 0
    assert section["queue_sync_ms"] > 0
