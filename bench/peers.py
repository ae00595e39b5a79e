"""``python -m bench e2e --peer slurm``: volcanoweb's end-to-end benchmark and a peer, alternating.

Each round runs ``python -m bench e2e`` (the rest of the command line, without ``--peer``, ``--rounds``
and ``--out``) and then ``python -m bench peer-slurm`` with the same job count and clients, each in a
process of its own: V S V S for two rounds. The report gives every run's figures, the ratio
volcanoweb / Slurm per round, and the ratio of the medians.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

from bench import slurmconf

#: options of ``bench e2e`` that belong to the comparison, not to the volcanoweb runs (all take a value)
OWN_OPTIONS = ("--peer", "--rounds", "--out")


def strip_options(argv: list[str], names: tuple[str, ...] = OWN_OPTIONS) -> list[str]:
    """``argv`` without the options ``names`` and their values (``--x v`` and ``--x=v``)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in names:
            skip = True
        elif not arg.startswith(tuple(f"{n}=" for n in names)):
            out.append(arg)
    return out


def _run_json(argv: list[str]) -> dict[str, Any]:
    """Run a bench command in a process of its own; its JSON report (exit 0 or 1: measured)."""
    print(f"  peer comparison: {' '.join(argv[1:])}", file=sys.stderr)
    out = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[1:])} failed with exit {out.returncode}")
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def _figures(section: dict[str, Any], latency: str, after: str) -> dict[str, Any]:
    """The figures compared, from either benchmark's section (they name two of them differently)."""
    percentiles = section.get(latency) or {}
    return {
        "ok": bool(section.get("ok")),
        "jobs_per_second": section.get("jobs_per_second"),
        "submit_latency_p50_ms": percentiles.get("Perc50"),
        "submit_latency_p99_ms": percentiles.get("Perc99"),
        "uptime_before": section.get("uptime_before"),
        "uptime_after": section.get(after),
    }


def volcanoweb_figures(report: dict[str, Any]) -> dict[str, Any]:
    """The figures compared from a ``bench e2e`` report."""
    return _figures(report["end_to_end"], "api_latency", "uptime_after_bind")


def slurm_figures(report: dict[str, Any]) -> dict[str, Any]:
    """The figures compared from a ``bench peer-slurm`` report."""
    return _figures(report["peer"], "submit_latency", "uptime_after")


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def compare(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Per round ``{"volcanoweb": figures, "slurm": figures}`` -> the ratios and the medians."""

    def med(side: str) -> float | None:
        values = [r[side]["jobs_per_second"] for r in rounds if r[side]["jobs_per_second"]]
        return round(statistics.median(values), 2) if values else None

    v, s = med("volcanoweb"), med("slurm")
    return {
        "rounds": [
            {
                **r,
                "ratio_volcanoweb_to_slurm": _ratio(r["volcanoweb"]["jobs_per_second"], r["slurm"]["jobs_per_second"]),
            }
            for r in rounds
        ],
        "median_jobs_per_second": {"volcanoweb": v, "slurm": s},
        "ratio_volcanoweb_to_slurm": _ratio(v, s),
        "ok": all(r["volcanoweb"]["ok"] and r["slurm"]["ok"] for r in rounds),
        "note": slurmconf.NOTE,
    }


def alternate(e2e_argv: list[str], jobs: int, clients: int, rounds: int) -> dict[str, Any]:
    """``rounds`` rounds of one volcanoweb run and one Slurm run, in that order; :func:`compare`'s report."""
    v_argv = [sys.executable, "-m", "bench", "e2e", *strip_options(e2e_argv)]
    s_argv = [sys.executable, "-m", "bench", "peer-slurm", "--jobs", str(jobs), "--clients", str(clients)]
    done: list[dict[str, dict[str, Any]]] = []
    for _ in range(rounds):
        v = volcanoweb_figures(_run_json(v_argv))
        s = slurm_figures(_run_json(s_argv))
        done.append({"volcanoweb": v, "slurm": s})
    return {"commands": {"volcanoweb": " ".join(v_argv[1:]), "slurm": " ".join(s_argv[1:])}, **compare(done)}
