"""Runs cases (in a subprocess each for ``core``), repeats them and aggregates medians."""

from __future__ import annotations

import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench import metrics
from bench.driver import Run, run_case
from bench.workloads import WORKLOADS, Case
from scheduler import Snapshot

ROOT = Path(__file__).resolve().parent.parent


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, Python and numpy versions, git SHA."""
    import numpy as np

    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "scheduler"], cwd=ROOT, capture_output=True, text=True, check=False
        )
        git = sha.stdout.strip() + ("+dirty(scheduler/)" if dirty.stdout.strip() else "")
    except OSError:
        git = "unknown"
    return {
        "cpu_model": model,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_gb, 1),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "git": git,
        "pythonhashseed": os.environ.get("PYTHONHASHSEED", "unset"),
    }


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def build(workload: str, size: str, seed: int) -> tuple[Case, Snapshot]:
    """Build a case and its initial snapshot."""
    case = WORKLOADS[workload](size, seed)
    snap = Snapshot.of(case.nodes, case.queues, case.jobs, case.tasks, hyper_nodes=case.hyper_nodes)
    return case, snap


def measure(
    workload: str,
    size: str,
    seed: int,
    repeat: int,
    warmup: int,
    trace: bool,
    smoke: bool = False,
    cache: bool = True,
) -> dict[str, Any]:
    """Build once, warm up, run ``repeat`` timed runs; return the aggregated case record.

    ``smoke`` shortens the simulated workloads (W8: 30 s, W2/W7/W8b: ≤ 10 sessions, W9: 5) and
    also runs the case once without a ``SessionCache``: its placements must be the same.
    ``cache`` passes one ``SessionCache`` across each run's sessions (see ``driver.run_case``)."""
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    case, snap = build(workload, size, seed)
    if smoke:
        case.sim_seconds = (
            min(case.sim_seconds, 30 if workload == "W8" else 10) if case.sim_seconds > 10 else case.sim_seconds
        )
        case.sessions = min(case.sessions, 5)
        case.params["smoke_shortened"] = True
    build_s = time.perf_counter() - t0
    rss_built = _rss_mb()
    gc.collect()
    gc.freeze()
    load_before = os.getloadavg()
    for _ in range(warmup):
        run_case(case, snap, cache)
    runs: list[Run] = []
    for _ in range(repeat):
        runs.append(run_case(case, snap, cache))
    load_after = os.getloadavg()
    rss_peak = _rss_mb()
    traced: dict[str, float] | None = None
    if trace:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        run_case(case, snap, cache)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        traced = {"scheduler_peak_mb": (peak - base) / 2**20}
    other: dict[str, Any] | None = None
    if smoke:
        # The cache only saves work: without it every decision must be the same.
        plain = run_case(case, snap, not cache)
        other = {"session_cache": plain.session_cache, "placement_hash": metrics.placement_hash(plain)}
    record = summarise(
        case,
        runs,
        build_s,
        {
            "rss_after_imports_mb": rss0,
            "rss_after_build_mb": rss_built,
            "rss_peak_mb": rss_peak,
            **({"tracemalloc": traced} if traced else {}),
        },
        {"before": load_before, "after": load_after},
        warmup,
    )
    if other is not None:
        record["other_cache_mode"] = other
        if other["placement_hash"] != record["placement_hash"]:
            record["correctness_errors"].append(
                f"placements differ with and without SessionCache: {record['placement_hash']} vs "
                f"{other['placement_hash']}"
            )
            record["ok"] = False
    return record


def summarise(
    case: Case, runs: list[Run], build_s: float, memory: dict[str, Any], load: dict[str, Any], warmup: int
) -> dict[str, Any]:
    """Median over repeats of every timing number; quality and correctness from every run."""
    timings = [metrics.timing(case, r) for r in runs]
    errors = sorted({e for r in runs for e in metrics.correctness(case, r)})
    hashes = {metrics.placement_hash(r) for r in runs}

    def med(key: str) -> float:
        return statistics.median(t[key] for t in timings)

    def med_actions(key: str) -> dict[str, float]:
        return {a: statistics.median(t[key][a] for t in timings) for a in metrics.ACTION_KEYS}

    pps = [t["pods_per_second"] for t in timings]
    summary: dict[str, Any] = {
        "workload": case.workload,
        "size": case.size,
        "nodes": len(case.nodes),
        "title": case.title,
        "params": case.params,
        "repeats": len(runs),
        "warmup": warmup,
        "build_seconds": build_s,
        "pods_per_second": {"Perc50": statistics.median(pps), "Min": min(pps), "Max": max(pps), "All": pps},
        "pods_per_cpu_second": statistics.median(t["pods_per_cpu_second"] for t in timings),
        "session_cpu_latency_seconds": {"Perc50": med("session_cpu_p50"), "Perc99": med("session_cpu_p99")},
        "pods_bound": timings[0]["pods_bound"],
        "scheduler_wall_seconds": med("wall_seconds"),
        "sessions": timings[0]["sessions"],
        "session_latency_seconds": {
            "Perc50": med("session_p50"),
            "Perc99": med("session_p99"),
            "Max": med("session_max"),
        },
        "p99_meaningful": timings[0]["sessions"] >= 30,
        "per_session_pods_per_second": {
            "Perc50": med("per_session_pods_per_second_p50"),
            "Perc10": med("per_session_pods_per_second_p10"),
        },
        "actions_seconds": {
            "Perc50": med_actions("actions_p50"),
            "Perc99": med_actions("actions_p99"),
            "Sum": med_actions("actions_sum"),
        },
        "session_cpu_seconds": med("session_cpu_sum"),
        "harness_seconds": med("harness_seconds"),
        "session_cache": runs[-1].session_cache,
        "cache": {
            **runs[-1].cache_counts,
            "prime_wall_seconds": statistics.median(r.prime_wall for r in runs),
            "prime_cpu_seconds": statistics.median(r.prime_cpu for r in runs),
        }
        if runs[-1].session_cache
        else None,
        "memory": memory,
        "quality": metrics.quality(case, runs[-1]),
        "deterministic": len(hashes) == 1,
        "placement_hash": sorted(hashes)[0],
        "loadavg": load,
        "correctness_errors": errors[:20],
        "ok": not errors and len(hashes) == 1,
    }
    if "preempt" in case.quality:
        for k in (
            "preemption_decisions",
            "preemption_decisions_per_second_action",
            "preemption_decisions_per_second_session",
        ):
            summary[k] = med(k)
    return summary


def data_items(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The scheduler_perf-shaped view of one case record."""
    labels = {"Name": f"{case['workload']}/{case['size']}", "Nodes": str(case["nodes"])}
    pps = case["pods_per_second"]
    lat = case["session_latency_seconds"]
    items = [
        metrics.item(
            {"Average": pps["Perc50"], "Perc50": pps["Perc50"], "Min": pps["Min"]},
            "pods/s",
            Metric="SchedulingThroughput",
            **labels,
        ),
        metrics.item(
            {"Perc50": lat["Perc50"] * 1000, "Perc99": lat["Perc99"] * 1000, "Max": lat["Max"] * 1000},
            "ms",
            Metric="session_duration",
            **labels,
        ),
    ]
    for a in metrics.ACTION_KEYS:
        p50 = case["actions_seconds"]["Perc50"][a]
        p99 = case["actions_seconds"]["Perc99"][a]
        if p50 or p99:
            items.append(
                metrics.item(
                    {"Perc50": p50 * 1000, "Perc99": p99 * 1000}, "ms", Metric="action_duration", Action=a, **labels
                )
            )
    items.append(metrics.item({"Peak": case["memory"]["rss_peak_mb"]}, "MB", Metric="peak_rss", **labels))
    return items


def run_in_subprocess(
    workload: str, size: str, seed: int, repeat: int, warmup: int, trace: bool, timeout: float, cache: bool = True
) -> dict[str, Any]:
    """Run one case in a fresh interpreter (isolated peak RSS, fixed PYTHONHASHSEED)."""
    cmd = (
        [
            sys.executable,
            "-m",
            "bench",
            "_case",
            workload,
            size,
            "--seed",
            str(seed),
            "--repeat",
            str(repeat),
            "--warmup",
            str(warmup),
        ]
        + (["--tracemalloc"] if trace else [])
        + ([] if cache else ["--no-cache"])
    )
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"workload": workload, "size": size, "ok": False, "skipped": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"workload": workload, "size": size, "ok": False, "crashed": proc.stderr[-2000:]}
    record: dict[str, Any] = json.loads(proc.stdout)
    record["case_wall_seconds"] = time.perf_counter() - t0
    return record
