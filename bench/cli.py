"""Command line: ``smoke``, ``core``, ``all``, ``e2e``, ``peer-slurm``, ... and the internal ``_case`` (one case in a
subprocess)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import targets
from bench.runner import data_items, machine, measure, run_in_subprocess
from bench.workloads import DEFAULT_AT, WORKLOADS

E2E_NOT_MEASURED = {
    "status": "not yet measured: needs runtime",
    "planned": [
        "10,000 single-pod jobs over the REST API by 20 concurrent clients on the stack "
        "(PostgreSQL, Redis, Celery, simulated cluster), first request to last pod bound; target >= 300 jobs/s, "
        "zero lost or duplicated jobs, API p99 latency reported",
        "WebSocket fan-out to 100 clients, target p99 delivery <= 500 ms",
    ],
    "results": None,
}


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _head(kind: str) -> dict[str, Any]:
    """The fields every report starts with: its kind, format version, time, command line and machine."""
    return {
        "kind": kind,
        "version": "v1",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "machine": machine(),
    }


def _write(report: dict[str, Any], out: str | None) -> None:
    text = json.dumps(report, indent=2, default=str)
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        print(f"wrote {path}", file=sys.stderr)
    else:
        print(text)


def _line(rec: dict[str, Any]) -> str:
    if "pods_per_second" not in rec:
        return f"{rec['workload']:>8} {rec['size']:>2}  FAILED: {rec.get('skipped') or rec.get('crashed', '')[-300:]}"
    lat = rec["session_latency_seconds"]
    return (
        f"{rec['workload']:>8} {rec['size']:>2}  {rec['pods_per_second']['Perc50']:9.0f} pods/s  "
        f"session p50 {lat['Perc50'] * 1000:8.1f} ms p99 {lat['Perc99'] * 1000:8.1f} ms  "
        f"open p50 {rec['actions_seconds']['Perc50']['open'] * 1000:7.1f} ms  "
        f"rss {rec['memory']['rss_peak_mb']:6.0f} MB"
        f"  cpu p99 {rec['session_cpu_latency_seconds']['Perc99'] * 1000:7.1f} ms"
        f"  {'cache' if rec.get('session_cache') else 'no cache'}"
        f"  load {rec['loadavg']['before'][0]:.2f}  {'ok' if rec['ok'] else 'FAIL'}"
    )


def cmd_smoke(args: argparse.Namespace) -> int:
    """Size S, every workload, one repeat in-process; non-zero exit only on a correctness failure."""
    t0 = time.perf_counter()
    cases = []
    for w in WORKLOADS:
        rec = measure(w, "S", args.seed, repeat=1, warmup=0, trace=False, smoke=True)
        cases.append(rec)
        print(_line(rec), file=sys.stderr)
    failed = [c for c in cases if not c["ok"]]
    report = {
        "kind": "bench-smoke",
        "note": "correctness only; timings at size S are not targets",
        "machine": machine(),
        "seconds": time.perf_counter() - t0,
        "ok": not failed,
        "failures": {f"{c['workload']}/{c['size']}": c["correctness_errors"] for c in failed},
        "cases": cases,
    }
    _write(report, args.out)
    return 1 if failed else 0


def _core(args: argparse.Namespace) -> dict[str, Any]:
    sizes = _csv(args.sizes)
    chosen = _csv(args.workloads) if args.workloads else None
    unknown = [w for w in chosen or [] if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workloads {unknown}; known: {', '.join(WORKLOADS)}")
    t0 = time.perf_counter()
    records = []
    for size in sizes:
        for w in chosen or DEFAULT_AT.get(size, ()):
            warmup = args.warmup if args.warmup is not None else (1 if size in ("S", "M") else 0)
            trace = args.tracemalloc or w == "W9"
            rec = run_in_subprocess(w, size, args.seed, args.repeat, warmup, trace, args.timeout, not args.no_cache)
            records.append(rec)
            print(_line(rec), file=sys.stderr)
            if args.out:  # keep what finished if a long run is interrupted
                _write({"kind": "bench-core", "partial": True, "cases": records}, args.out)
    by = {(r["workload"], r["size"]): r for r in records}
    items = [i for r in records if "pods_per_second" in r for i in data_items(r)]
    return {
        **_head("bench-core"),
        "seed": args.seed,
        "repeat": args.repeat,
        "session_cache": not args.no_cache,
        "seconds": time.perf_counter() - t0,
        "loadavg_end": os.getloadavg(),
        "targets": targets.evaluate(by),
        "dataItems": items,
        "cases": records,
        "ok": all(r.get("ok") for r in records),
    }


def cmd_core(args: argparse.Namespace) -> int:
    """In-process core benchmark, one subprocess per case; exits non-zero only on correctness failures."""
    report = _core(args)
    _write(report, args.out)
    return 0 if report["ok"] else 1


def _e2e_available() -> bool:
    return os.environ.get("DATABASE_URL", "").startswith("postgres") and bool(os.environ.get("REDIS_URL"))


def _e2e(args: argparse.Namespace) -> dict[str, Any]:
    from bench import e2e

    if not _e2e_available():
        return {**E2E_NOT_MEASURED, "status": "not measured: needs DATABASE_URL (PostgreSQL) and REDIS_URL"}
    return e2e.run(args)


def cmd_e2e(args: argparse.Namespace) -> int:
    """End-to-end benchmark on the stack (REST API to bound pods, WebSocket fan-out); with ``--peer``, in
    alternation with the peer (:mod:`bench.peers`)."""
    if args.peer:
        return _e2e_with_peer(args)
    t0 = time.perf_counter()
    section = _e2e(args)
    report = {
        **_head("bench-e2e"),
        "seconds": time.perf_counter() - t0,
        "loadavg_end": os.getloadavg(),
        "targets": targets.evaluate_e2e(section),
        "end_to_end": section,
        "ok": bool(section.get("ok")),
    }
    _write(report, args.out)
    return 0 if report["ok"] else 1


def _peer_missing() -> int:
    from bench import slurmconf, slurmpeer

    missing = slurmpeer.missing_binaries()
    if missing:
        print(
            f"the Slurm peer needs {', '.join(missing)}, which are not installed; run {slurmconf.INSTALL_HINT}",
            file=sys.stderr,
        )
        return 2
    return 0


def cmd_peer_slurm(args: argparse.Namespace) -> int:
    """The same single-CPU jobs on a throw-away single-host Slurm (exit 2 when Slurm is not installed)."""
    from bench import slurmpeer

    if missing := _peer_missing():
        return missing
    t0 = time.perf_counter()
    try:
        section = slurmpeer.run(args.jobs, args.clients, args.timeout)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (bench.slurmpeer.cluster turns them into this)
        print("interrupted; the Slurm peer was stopped and its folder removed", file=sys.stderr)
        return 143 if str(exc) == "SIGTERM" else 130
    except RuntimeError as exc:  # a daemon that did not start, a client that failed
        section = {"status": "failed", "error": str(exc)[-4000:], "ok": False}
    report = {
        **_head("bench-peer-slurm"),
        "seconds": time.perf_counter() - t0,
        "loadavg_end": os.getloadavg(),
        "peer": section,
        "ok": bool(section.get("ok")),
    }
    _write(report, args.out)
    return 0 if report["ok"] else 1


def _e2e_with_peer(args: argparse.Namespace) -> int:
    from bench import peers

    if missing := _peer_missing():
        return missing
    jobs = min(args.jobs, 300) if args.quick else args.jobs
    t0 = time.perf_counter()
    section = peers.alternate(args.raw_argv, jobs, args.clients, max(1, args.rounds))
    report = {
        **_head("bench-e2e-peer"),
        "seconds": time.perf_counter() - t0,
        "peer": args.peer,
        "comparison": section,
        "ok": bool(section["ok"]),
    }
    _write(report, args.out)
    return 0 if report["ok"] else 1


def cmd_e2e_ab(args: argparse.Namespace) -> int:
    """The stack benchmark with and without insights recording, in alternating rounds (issue 19: < 5 %).

    Each run is ``python -m bench e2e`` in a process of its own (a stack and a database of its own), the
    rest of the command line passed on; a round runs both modes, in alternating order. The summary gives
    per mode the median over rounds of the cycles' median duration, the jobs per second and the CPU per
    job, and the recording's own CPU per job (the writer's ``insights record`` stage) as a share of all."""
    runs: dict[str, list[dict[str, Any]]] = {"recording": [], "no_recording": []}
    for r in range(args.rounds):
        for mode in ("recording", "no_recording") if r % 2 == 0 else ("no_recording", "recording"):
            rest = [a for a in args.rest if a != "--"]
            argv = [sys.executable, "-m", "bench", "e2e", *rest, *(["--no-insights"] if mode == "no_recording" else [])]
            out = subprocess.run(argv, capture_output=True, text=True, check=False)
            if out.returncode not in (0, 1):
                sys.stderr.write(out.stderr)
                raise SystemExit(f"bench e2e failed ({out.returncode}): {' '.join(argv)}")
            section = json.loads(out.stdout)["end_to_end"]
            cycles, cpu = section.get("scheduling_cycles", {}), section.get("cpu_profile", {})
            runs[mode].append(
                {
                    "round": r,
                    "ok": section.get("ok"),
                    "jobs_per_second": round(section.get("jobs_per_second") or 0, 2),
                    "cycle_median_ms": (cycles.get("duration_ms") or {}).get("median"),
                    "record_median_ms": (cycles.get("record_ms") or {}).get("median"),
                    "cpu_ms_per_job": cpu.get("total_cpu_ms_per_job"),
                    "insights_cpu_ms_per_job": (cpu.get("stages") or {}).get("insights record", 0.0),
                    "cpu_ms_per_job_by_stage": cpu.get("stages"),
                }
            )

    def med(mode: str, key: str) -> float | None:
        values = [run[key] for run in runs[mode] if run[key] is not None]
        return round(statistics.median(values), 2) if values else None

    summary: dict[str, Any] = {
        mode: {k: med(mode, k) for k in ("jobs_per_second", "cycle_median_ms", "cpu_ms_per_job")} for mode in runs
    }
    on, off = summary["recording"], summary["no_recording"]
    if on["cycle_median_ms"] and off["cycle_median_ms"]:
        summary["cycle_overhead_pct"] = round((on["cycle_median_ms"] / off["cycle_median_ms"] - 1) * 100, 2)
    if on["jobs_per_second"] and off["jobs_per_second"]:
        summary["throughput_change_pct"] = round((on["jobs_per_second"] / off["jobs_per_second"] - 1) * 100, 2)
    insights_cpu = med("recording", "insights_cpu_ms_per_job")
    if insights_cpu is not None and on["cpu_ms_per_job"]:
        summary["recording_cpu_ms_per_job"] = insights_cpu
        summary["recording_cpu_share_pct"] = round(insights_cpu / on["cpu_ms_per_job"] * 100, 2)
    summary["target_pct"] = 5.0
    report = {
        **_head("bench-e2e-ab"),
        "runs": runs,
        "summary": summary,
    }
    _write(report, args.out)
    return 0 if all(run["ok"] for mode in runs.values() for run in mode) else 1


def cmd_cycle(args: argparse.Namespace) -> int:
    """The Django scheduling cycle on PostgreSQL with and without insights recording (issue 19: < 5 %)."""

    from bench import cycle

    section = cycle.main(args)
    report = {
        **_head("bench-cycle"),
        "cycle": section,
    }
    _write(report, args.out)
    return 0


def cmd_pages(args: argparse.Namespace) -> int:
    """Dashboard page render times with N jobs in the database (issue 6: < 300 ms each)."""
    from bench import pages

    t0 = time.perf_counter()
    section = pages.run(args)
    worst = section.get("worst_median_ms")
    report = {
        **_head("bench-pages"),
        "seconds": time.perf_counter() - t0,
        "targets": [
            {
                "target": f"every dashboard page, server time (median) with {args.jobs} jobs",
                "measured": worst,
                "goal": "< 300 ms",
                "met": None if worst is None else worst < 300,
                "anchor": "issue 6",
            }
        ],
        "pages": section,
        "ok": bool(section.get("ok")),
    }
    _write(report, args.out)
    return 0 if report["ok"] else 1


def cmd_resync(args: argparse.Namespace) -> int:
    """The controllers' periodic checks with N jobs in the database: the drift check over every job and over the
    jobs the change log shows changed, and a queue sync."""
    from bench import resync

    t0 = time.perf_counter()
    section = resync.run(args)
    report = {
        **_head("bench-resync"),
        "seconds": time.perf_counter() - t0,
        "resync": section,
        "ok": bool(section.get("ok")),
    }
    _write(report, args.out)
    return 0 if report["ok"] else 1


def cmd_watch_idle(args: argparse.Namespace) -> int:
    """Web CPU per change with 0, 100 and 1,000 idle Kubernetes watches open (issue 26: flat)."""
    from bench import watchidle

    t0 = time.perf_counter()
    section = watchidle.run(args)
    ratio = section.get("web_cpu_ratio_max_to_none")
    report = {
        **_head("bench-watch-idle"),
        "seconds": time.perf_counter() - t0,
        "targets": [
            {
                "target": "web CPU per change with the most idle watches / with none",
                "measured": ratio,
                "goal": "<= 1.2 (flat)",
                "met": None if ratio is None else ratio <= 1.2,
                "anchor": "issue 26",
            }
        ],
        "watch_idle": section,
        "ok": bool(section.get("ok")),
    }
    _write(report, args.out)
    return 0 if report["ok"] else 1


def cmd_all(args: argparse.Namespace) -> int:
    """Core, then the end-to-end part on the stack (when PostgreSQL and Redis are configured)."""
    report = _core(args)
    report["kind"] = "bench-all"
    report["end_to_end"] = _e2e(args)
    report["targets"] = [*report["targets"], *targets.evaluate_e2e(report["end_to_end"])]
    _write(report, args.out)
    return 0 if report["ok"] else 1


def cmd_case(args: argparse.Namespace) -> int:
    """Internal: run one case and print its record as JSON."""
    rec = measure(
        args.workload, args.size, args.seed, args.repeat, args.warmup, args.tracemalloc, cache=not args.no_cache
    )
    print(json.dumps(rec, default=str))
    return 0


def _e2e_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=10_000, help="single-pod jobs to submit")
    p.add_argument("--quick", action="store_true", help="300 jobs (smoke size)")
    p.add_argument("--clients", type=int, default=20, help="concurrent API clients")
    p.add_argument("--nodes", type=int, default=0, help="sim nodes (default: jobs / 100, at least 20)")
    p.add_argument("--cpu", default="100m", help="CPU request of each pod")
    p.add_argument("--memory", default="128Mi", help="memory request of each pod")
    p.add_argument("--period", type=float, default=1.0, help="SCHEDULE_PERIOD of the stack, seconds")
    p.add_argument("--bind-timeout", type=float, default=3600.0, help="seconds to wait for the last bind")
    p.add_argument("--ws-clients", type=int, default=100, help="WebSocket clients (0: skip)")
    p.add_argument("--ws-messages", type=int, default=50)
    p.add_argument(
        "--kube-watchers",
        type=int,
        default=0,
        help="Kubernetes API watches of the bench namespace's jobs, opened before the run and checked against the log",
    )
    p.add_argument("--ws-interval", type=float, default=0.1, help="seconds between probe broadcasts")
    p.add_argument(
        "--ws-processes",
        type=int,
        default=4,
        help="child processes the WebSocket clients read in (bench/wsreaders.py; 1: every client in one)",
    )
    p.add_argument(
        "--watch-processes",
        type=int,
        default=4,
        help="child processes the Kubernetes watches are read in (bench/watchers.py)",
    )
    p.add_argument(
        "--ws-subscribe",
        default=None,
        help='what every WebSocket client subscribes to, as a page does: "kind[:id prefix],..." (default: all)',
    )
    p.add_argument("--keep-db", action="store_true", help="keep the bench database and Redis DB")
    p.add_argument("--apply-batch", type=int, default=1, help="jobs per POST /api/v1/apply (a List, all or nothing)")
    p.add_argument(
        "--via",
        choices=("rest", "kubeapi"),
        default="rest",
        help="submit through POST /api/v1/apply or the Kubernetes API's create (POST .../namespaces/NS/jobs)",
    )
    p.add_argument("--embedded", action="store_true", help="the embedded mode (SQLite, loops in-process) instead")
    p.add_argument("--controller-workers", type=int, default=1, help="Celery worker processes for the controllers")
    p.add_argument(
        "--ws-phase",
        choices=("during", "after"),
        default="during",
        help="WebSocket fan-out during the run (first request to last bind) or after it",
    )
    p.add_argument("--no-profile", action="store_true", help="no per-stage CPU counters in the stack's processes")
    p.add_argument(
        "--no-insights", action="store_true", help="the stack records no insights (INSIGHTS_RECORD=false; issue 19 A/B)"
    )


def _peer_parsers(sub: Any, e2e: argparse.ArgumentParser) -> None:
    """``peer-slurm``, and ``--peer``/``--rounds`` of ``e2e``."""
    e2e.add_argument(
        "--peer",
        choices=("slurm",),
        default=None,
        help="alternate with the peer on the same jobs and clients (V S V S)",
    )
    e2e.add_argument("--rounds", type=int, default=2, help="with --peer: rounds of one run each")
    ps = sub.add_parser(
        "peer-slurm", help="the same single-CPU jobs on a throw-away single-host Slurm (make bench-peer)"
    )
    ps.add_argument("--jobs", type=int, default=2000, help="jobs of `true` to submit")
    ps.add_argument("--clients", type=int, default=20, help="concurrent sbatch clients")
    ps.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for the jobs to start and end")
    ps.add_argument("--out", default=None)
    ps.set_defaults(func=cmd_peer_slurm)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("smoke", help="size S, all workloads, correctness only (CI)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--out", default=None, help="write JSON here (default: stdout)")
    s.set_defaults(func=cmd_smoke)
    for name, func, default_sizes in (("core", cmd_core, "S,M,L"), ("all", cmd_all, "S,M,L")):
        c = sub.add_parser(name, help="core benchmark" if name == "core" else "core + end-to-end (when available)")
        c.add_argument("--sizes", default=default_sizes)
        c.add_argument("--workloads", default="", help=f"comma-separated; known: {','.join(WORKLOADS)}")
        c.add_argument("--repeat", type=int, default=3)
        c.add_argument("--warmup", type=int, default=None, help="default 1 at S/M, 0 at L/XL")
        c.add_argument("--seed", type=int, default=1)
        c.add_argument("--tracemalloc", action="store_true", help="tracemalloc peak for every case (W9 always)")
        c.add_argument("--timeout", type=float, default=1800.0, help="per case, seconds")
        c.add_argument(
            "--no-cache",
            action="store_true",
            help="open every session from scratch (default: one SessionCache per run, as the scheduler keeps)",
        )
        c.add_argument("--out", default=None)
        c.set_defaults(func=func)
        if name == "all":
            _e2e_args(c)
    g = sub.add_parser("pages", help="dashboard page server time with 10,000 jobs in the database")
    g.add_argument("--jobs", type=int, default=10_000)
    g.add_argument("--repeat", type=int, default=5, help="timed fetches per page and user (median)")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--keep-db", action="store_true")
    g.add_argument("--out", default=None)
    g.set_defaults(func=cmd_pages)
    y = sub.add_parser("cycle", help="the Django scheduling cycle with and without insights recording")
    y.add_argument("--nodes", type=int, default=500)
    y.add_argument("--running", type=int, default=2000, help="pods that bind and keep running (gangs of 4)")
    y.add_argument("--pending", type=int, default=400, help="pods that never fit (gangs of 4)")
    y.add_argument("--running-cpu", type=int, default=4000, help="CPU request of a running pod, millicores")
    y.add_argument("--cycles", type=int, default=15, help="timed cycles per mode")
    y.add_argument("--warmup", type=int, default=3)
    y.add_argument(
        "--block",
        type=int,
        default=5,
        help="timed cycles per block: blocks with and without recording alternate, each after an untimed lead cycle",
    )
    y.add_argument(
        "--in-line", action="store_true", help="record inside the cycle (INSIGHTS_RECORD_ASYNC off), not beside it"
    )
    y.add_argument(
        "--busy",
        type=int,
        default=0,
        help="busy cycles: before each timed cycle add this many pods (gangs of 4) that wait, so every cycle "
        "changes its snapshot and opens waits (what the stack's cycles do under load)",
    )
    y.add_argument(
        "--bind-batch", type=int, default=0, help="then add this many pending pods that fit and time the binding cycle"
    )
    y.add_argument("--bind-rounds", type=int, default=3, help="binding cycles (each with --bind-batch new pods)")
    y.add_argument("--out", default=None)
    y.set_defaults(func=cmd_cycle)
    e = sub.add_parser("e2e", help="end-to-end on the stack: REST API to bound pods, WebSocket fan-out")
    _e2e_args(e)
    e.add_argument("--out", default=None)
    e.set_defaults(func=cmd_e2e)
    _peer_parsers(sub, e)
    w = sub.add_parser("watch-idle", help="web CPU per change with 0, 100 and 1,000 idle Kubernetes watches")
    w.add_argument("--watches", default="0,100,1000", help="idle watch counts, comma-separated")
    w.add_argument("--changes", type=int, default=500, help="merge patches per count")
    w.add_argument("--out", default=None)
    w.set_defaults(func=cmd_watch_idle)
    r = sub.add_parser("resync", help="the controllers' drift check and queue sync with 10,000 jobs in the database")
    r.add_argument("--jobs", type=int, default=10_000)
    r.add_argument("--changed", type=int, default=100, help="jobs whose pods change before the scoped check")
    r.add_argument("--repeat", type=int, default=3, help="timed runs of each check (median)")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--keep-db", action="store_true")
    r.add_argument("--out", default=None)
    r.set_defaults(func=cmd_resync)
    ab = sub.add_parser(
        "e2e-ab", help="the stack benchmark with and without insights recording, in alternating rounds (issue 19)"
    )
    ab.add_argument("--rounds", type=int, default=2, help="rounds (each: one run with and one without recording)")
    ab.add_argument("--out", default=None)
    ab.add_argument("rest", nargs=argparse.REMAINDER, help="arguments of `bench e2e` (after --)")
    ab.set_defaults(func=cmd_e2e_ab)
    k = sub.add_parser("_case", help=argparse.SUPPRESS)
    k.add_argument("workload")
    k.add_argument("size")
    k.add_argument("--seed", type=int, default=1)
    k.add_argument("--repeat", type=int, default=3)
    k.add_argument("--warmup", type=int, default=1)
    k.add_argument("--tracemalloc", action="store_true")
    k.add_argument("--no-cache", action="store_true")
    k.set_defaults(func=cmd_case)
    raw = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(raw)
    args.raw_argv = raw[1:]  # after the subcommand (``bench e2e --peer`` passes them on)
    return int(args.func(args))
