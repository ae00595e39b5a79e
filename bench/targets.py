"""The core benchmark's targets and the public figures they are set against, checked against a core report."""

from __future__ import annotations

from typing import Any

Cases = dict[tuple[str, str], dict[str, Any]]

#: The public figures the targets are set against (each names where it is published).
KUBE_FLOOR = (
    "kube-scheduler scheduler_perf CI floor 680 pods/s, SchedulingBasic 5k nodes "
    "(kubernetes/kubernetes: test/integration/scheduler_perf/misc/performance-config.yaml)"
)
KUBE_MICRO = "stretch; kube-scheduler microbenchmark 792-909 pods/s at 500 nodes (2020)"
KUBE_GANG = "kube-scheduler gang scheduling 562-630 pods/s at 5k nodes (kubernetes/kubernetes PR 140611)"
VOLCANO_10K = (
    "Volcano's 1 x 10,000 case (volcano-sh/volcano: docs/user-guide/how_to_tune_volcano_performance.md); stretch <= 3 s"
)
KUBE_BACKLOG = (
    "kube-scheduler scheduler_perf: unschedulable pods interleaved 590 vs 680 pods/s ~ 0.87 (same config file)"
)
KUBE_PREEMPT = (
    "kube-scheduler preemption ~50/s with 20k pods running (kubernetes/kubernetes PR 128466); 570 "
    "pods/s with preemptors interleaved"
)
OPEN_SESSION = (
    "Volcano openSession ~400 ms (volcano-sh/volcano issue 1038); KAI 2.2 s snapshot at 140k pods "
    "(kai-scheduler/KAI-Scheduler issue 315)"
)
VOLCANO_SIZING = (
    "Volcano's sizing guide ~2.4 GB per 1k nodes (provisioning, not measured; how_to_tune_volcano_performance.md)"
)
KUEUE = "Kueue's baseline performance test (kubernetes-sigs/kueue: test/performance/scheduler/configs/baseline)"
ARMADA = "Armada's design goals (armadaproject/armada: docs/scheduler.md); Kubernetes pod startup SLO p99 <= 5 s"


def _get(cases: Cases, w: str, s: str) -> dict[str, Any] | None:
    c = cases.get((w, s))
    return c if c and "pods_per_second" in c else None


def evaluate(cases: Cases) -> list[dict[str, Any]]:
    """Return one entry per issue-7 target: measured value, target, met (None = not measured)."""
    out: list[dict[str, Any]] = []

    def add(name: str, measured: float | None, target: float, unit: str, higher: bool, anchor: str) -> None:
        met = None if measured is None else (measured >= target if higher else measured <= target)
        out.append(
            {
                "target": name,
                "measured": None if measured is None else round(measured, 4),
                "goal": f"{'>=' if higher else '<='} {target} {unit}",
                "met": met,
                "anchor": anchor,
            }
        )

    def pps(w: str, s: str) -> float | None:
        c = _get(cases, w, s)
        return c["pods_per_second"]["Perc50"] if c else None

    add("W1 many small at L", pps("W1", "L"), 680, "pods/s", True, KUBE_FLOOR)
    add("W1 many small at M", pps("W1", "M"), 1500, "pods/s", True, KUBE_MICRO)
    for w in ("W3", "W4"):
        for s in ("M", "L"):
            add(f"{w} gangs at {s}", pps(w, s), 3000, "pods/s", True, KUBE_GANG)
    big = _get(cases, "W4-10k", "L")
    add(
        "W4 one 10,000-pod gang placed at L",
        big["scheduler_wall_seconds"] if big else None,
        3.0,
        "s",
        False,
        VOLCANO_10K,
    )
    for s in ("M", "L"):
        w5, w1, base = pps("W5", s), pps("W1", s), pps("W5-base", s)
        add(
            f"W5 backlog ratio vs W1 at {s}",
            w5 / w1 if w5 and w1 else None,
            0.9,
            "x",
            True,
            KUBE_BACKLOG,
        )
        add(
            f"W5 backlog ratio vs same-fill baseline at {s}",
            w5 / base if w5 and base else None,
            0.9,
            "x",
            True,
            "same as above, isolating the backlog from the 90% fill",
        )
    w6 = _get(cases, "W6", "M")
    add(
        "W6 preemption decisions at M",
        w6["preemption_decisions_per_second_session"] if w6 else None,
        300,
        "decisions/s",
        True,
        KUBE_PREEMPT,
    )
    w9 = _get(cases, "W9", "L")
    add(
        "W9 session open at L (50k running pods)",
        w9["actions_seconds"]["Perc50"]["open"] * 1000 if w9 else None,
        15,
        "ms",
        False,
        OPEN_SESSION,
    )
    add(
        "W9 peak memory at L (peak RSS)",
        w9["memory"]["rss_peak_mb"] if w9 else None,
        150,
        "MB",
        False,
        VOLCANO_SIZING,
    )
    w8b = _get(cases, "W8b", "M")
    add(
        "Every session at M with ~1,000 pending pods, p99",
        w8b["session_latency_seconds"]["Perc99"] * 1000 if w8b else None,
        250,
        "ms",
        False,
        "Volcano default schedule period 1 s",
    )
    w2 = _get(cases, "W2", "M")
    add("W2 fair share at M", pps("W2", "M"), 500, "pods/s", True, KUEUE)
    add(
        "W2 max share error after 10 sessions at M",
        w2["quality"].get("max_share_error") if w2 else None,
        0.05,
        "of capacity",
        False,
        "our own quality target (no public anchor)",
    )
    w7 = _get(cases, "W7", "M")
    add(
        "W7 sessions until queue B reaches deserved at M",
        w7["quality"].get("sessions_to_deserved") if w7 else None,
        3,
        "sessions",
        False,
        "our own quality target (no public anchor)",
    )
    w8 = _get(cases, "W8", "M")
    if w8:
        lat = w8["quality"]["creation_to_bound_periods"]["Perc99"]
    add("W8 steady state p99 creation→bound at M", lat if w8 else None, 2, "periods", False, ARMADA)
    return out


def _entry(name: str, measured: float | None, target: float, unit: str, higher: bool, anchor: str) -> dict[str, Any]:
    met = None if measured is None else (measured >= target if higher else measured <= target)
    return {
        "target": name,
        "measured": None if measured is None else round(measured, 4),
        "goal": f"{'>=' if higher else '<='} {target} {unit}",
        "met": met,
        "anchor": anchor,
    }


def evaluate_e2e(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The end-to-end targets (docs/performance.md, "Issue 17: end-to-end profile") against the
    ``end_to_end`` section (None = not measured).

    Which throughput target applies depends on the run: single-pod applies (>= 150 jobs/s, API p99 <= 250 ms),
    multi-document applies (``--apply-batch``: >= 500 jobs/s) or the embedded mode (``--embedded``: >= 50 jobs/s).
    """
    measured = section.get("status") == "measured"
    params = section.get("params", {})
    jobs = params.get("jobs") if measured else None
    batch = params.get("jobs_per_request") or 1
    embedded = params.get("mode") == "embedded"
    ws = section.get("websocket") or {}
    lost = (section.get("lost_jobs", 0) + section.get("duplicated", 0)) if measured else None
    if embedded:
        name, goal = f"E2E {jobs or 10000} single-pod jobs, embedded mode (SQLite), first request to last bind", 50
    elif batch > 1:
        name, goal = f"E2E {jobs or 10000} jobs as applies of {batch} documents, first request to last bind", 500
    else:
        name, goal = (
            f"E2E {jobs or 10000} single-pod jobs over the REST API, 20 clients, first request to last bind",
            150,
        )
    out = [
        _entry(name, section.get("jobs_per_second") if measured else None, goal, "jobs/s", True, "project target"),
        _entry("E2E lost or duplicated jobs", lost, 0, "jobs", False, "project target"),
        _entry(
            "E2E API p99 latency" + (" (single-pod applies: <= 250 ms)" if batch == 1 else " (reported, no goal)"),
            section.get("api_latency", {}).get("Perc99") if measured else None,
            250 if batch == 1 else float("inf"),
            "ms",
            False,
            "project target",
        ),
    ]
    if ws:
        out.append(
            _entry(
                f"WebSocket fan-out to {ws.get('clients')} clients {ws.get('phase', '')}, p99 commit to frame",
                _worst_p99(ws),
                500,
                "ms",
                False,
                "project target",
            )
        )
    return out


def _worst_p99(ws: dict[str, Any]) -> float | None:
    """The worse p99 of the probes and of every frame's oldest change (what a user waits for), if measured."""
    values = [(ws.get(key) or {}).get("Perc99") for key in ("delivery_latency", "commit_to_frame")]
    present = [float(v) for v in values if v is not None]
    return max(present) if present else None
