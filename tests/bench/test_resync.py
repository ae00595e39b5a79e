"""``python -m bench resync`` inside ``make test``: a small run on PostgreSQL, checked for what it finds, never
for its timings."""

from __future__ import annotations

import os

import pytest

from tests.bench.runbench import run_bench


def test_bench_resync_finds_every_new_drift_in_its_scoped_check() -> None:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.fail("the suite runs this test on PostgreSQL (scripts/with-services.sh sets DATABASE_URL)")
    report = run_bench("resync", "--jobs", "60", "--changed", "6", "--repeat", "1")
    section = report["resync"]
    assert report["kind"] == "bench-resync"
    assert report["ok"] is True
    assert section["database_vendor"] == "postgresql"
    assert section["params"]["changed"] == 6
    assert section["drifted_since_found_by_the_check_over_every_job"] > 0
    assert section["drifted_found_by_the_scoped_check"] >= section["drifted_since_found_by_the_check_over_every_job"]
    assert section["drift_check_every_job_ms"] > 0
    assert section["queue_sync_ms"] > 0
