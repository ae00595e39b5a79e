"""``python -m bench <command>`` run as a user runs it, from the repository, its JSON report returned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_bench(*args: str, timeout: float = 240) -> dict[str, Any]:
    """Run the benchmark command; fail the test with its output unless it exits 0; return its report."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"bench {args[0]} failed:\n{proc.stderr[-3000:]}\n{proc.stdout[-3000:]}"
    report: dict[str, Any] = json.loads(proc.stdout)
    return report
