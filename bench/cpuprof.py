"""CPU accounting for ``bench e2e`` (issue 17): the stack's processes, PostgreSQL backends, and the stages.

* The stack's processes (its process group) and the PostgreSQL backends connected to the bench database
  are read from ``/proc/<pid>/stat`` (user + system time) by a sampler thread every 0.5 s; a backend
  that connects and exits between two samples is missed (the web process pools its connections and the
  workers keep theirs, so few do).
* The stages come from the processes' :mod:`volcanoweb.core.stageprof` files (thread CPU per stage,
  exclusive of nested stages).

Both are read at the start of the submission and after the last bind; the report gives the differences
in milliseconds of CPU per job.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from volcanoweb.core import stageprof

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, int, float] | None:
    """Return (parent, session, cpu seconds) of ``pid``, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[3]), (int(fields[11]) + int(fields[12])) / TICK


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def role(cmdline: str) -> str:
    """The stack role of a process from its command line."""
    if "uvicorn" in cmdline or "daphne" in cmdline or "multiprocessing" in cmdline:
        return "web"
    if "runembedded" in cmdline:
        return "embedded (web + loops)"
    if " beat" in cmdline:
        return "beat"
    if "scheduler@" in cmdline:
        return "periodic worker (cycle, mirror, resync)"
    if "worker" in cmdline and "celery" in cmdline:
        return "controller worker"
    if "runstack" in cmdline:
        return "supervisor"
    return "other"


class Sampler:
    """Samples the CPU time of the stack's processes and of the bench database's PostgreSQL backends."""

    def __init__(self, session: int, pg_dsn: dict[str, Any] | None, db_name: str) -> None:
        self.session = session
        self.pg_dsn = pg_dsn
        self.db_name = db_name
        self.stack: dict[int, float] = {}
        self.cmd: dict[int, str] = {}
        self.pg_first: dict[int, float] = {}
        self.pg_last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        self.samples = 0
        self.activity: dict[str, int] = {}  # "state / wait" -> samples (non-idle backends)
        self.lock_waits: dict[str, int] = {}  # "waiting query <- blocker's last query" -> samples

    def waits(self) -> dict[str, Any]:
        """What the bench database's backends were doing, summed over the samples (every 0.5 s)."""

        def top(d: dict[str, int], n: int) -> dict[str, int]:
            return dict(sorted(d.items(), key=lambda kv: -kv[1])[:n])

        return {
            "samples": self.samples,
            "backends_by_state": top(self.activity, 12),
            "lock_waits": top(self.lock_waits, 10),
        }

    def _stack_now(self) -> dict[int, float]:
        """CPU seconds of the stack's supervisor and its descendants (each child leads a session of its own)."""
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (st := _stat(int(entry))) is not None:
                stats[int(entry)] = st
        out = {}
        for pid, (_parent, _session, cpu) in stats.items():
            ancestor, hops = pid, 0
            while ancestor != self.session and ancestor in stats and hops < 16:
                ancestor, hops = stats[ancestor][0], hops + 1
            if ancestor == self.session:
                out[pid] = cpu
                if pid not in self.cmd:
                    self.cmd[pid] = _cmdline(pid)
        return out

    def _pg_pids(self) -> list[int]:
        if self.pg_dsn is None:
            return []
        try:
            if self._conn is None:
                import psycopg

                self._conn = psycopg.connect(**self.pg_dsn, autocommit=True)
            rows = self._conn.execute(
                "SELECT a.pid, a.state, a.wait_event_type, a.wait_event, left(a.query, 70),"
                " (SELECT left(b.query, 70) FROM pg_stat_activity b WHERE b.pid = (pg_blocking_pids(a.pid))[1])"
                " FROM pg_stat_activity a WHERE a.datname = %s AND a.pid <> pg_backend_pid()",
                [self.db_name],
            ).fetchall()
            self.samples += 1
            for _pid, state, wtype, wevent, query, blocker in rows:
                if state == "idle":
                    continue
                key = f"{state} / {wtype or 'CPU'}{':' + wevent if wevent else ''}"
                self.activity[key] = self.activity.get(key, 0) + 1
                if wtype == "Lock":
                    pair = f"{' '.join((query or '').split())[:70]}  <- held by: {' '.join((blocker or '').split())}"
                    self.lock_waits[pair] = self.lock_waits.get(pair, 0) + 1
            return [int(r[0]) for r in rows]
        except Exception:
            self._conn = None
            return []

    def sample(self, first: bool = False) -> None:
        for pid in self._pg_pids():
            st = _stat(pid)
            if st is None:
                continue
            if pid not in self.pg_first:
                self.pg_first[pid] = st[2] if first else 0.0
            self.pg_last[pid] = st[2]

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.sample()

    def start(self) -> dict[int, float]:
        """Take the baseline and start sampling; return the stack's CPU per pid at the start."""
        self.sample(first=True)
        self.stack = self._stack_now()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self.stack

    def stop(self) -> tuple[dict[int, float], float]:
        """Stop; return the stack's CPU seconds per pid since the start, and PostgreSQL's."""
        self._stop.set()
        if self._thread:
            self._thread.join(2)
        self.sample()
        end = self._stack_now()
        stack = {pid: cpu - self.stack.get(pid, 0.0) for pid, cpu in end.items()}
        pg = sum(self.pg_last[p] - self.pg_first[p] for p in self.pg_last)
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        return stack, pg


def stage_diff(before: dict[int, dict[str, Any]], after: dict[int, dict[str, Any]]) -> dict[int, dict[str, float]]:
    """CPU seconds per stage and process between two :func:`stageprof.read_all` readings."""
    out: dict[int, dict[str, float]] = {}
    for pid, doc in after.items():
        prev = before.get(pid, {}).get("stages", {})
        out[pid] = {
            stage: v["cpu_seconds"] - prev.get(stage, {}).get("cpu_seconds", 0.0)
            for stage, v in doc.get("stages", {}).items()
        }
    return out


def breakdown(
    jobs: int,
    stack_cpu: dict[int, float],
    cmd: dict[int, str],
    pg_cpu: float | None,
    stages: dict[int, dict[str, float]] | None,
    wall: float | None,
) -> dict[str, Any]:
    """The report: ms of CPU per job per stage, per process role (and its unstaged remainder), PostgreSQL."""
    per_job = 1000.0 / max(1, jobs)
    roles: dict[str, dict[str, float]] = {}
    stage_ms: dict[str, float] = {}
    for pid, cpu in stack_cpu.items():
        r = role(cmd.get(pid, ""))
        entry = roles.setdefault(r, {"processes": 0, "cpu_ms_per_job": 0.0, "staged_ms_per_job": 0.0})
        entry["processes"] += 1
        entry["cpu_ms_per_job"] += cpu * per_job
        for stage, sec in (stages or {}).get(pid, {}).items():
            stage_ms[stage] = stage_ms.get(stage, 0.0) + sec * per_job
            entry["staged_ms_per_job"] += sec * per_job
    table = {k: round(v, 2) for k, v in sorted(stage_ms.items(), key=lambda kv: -kv[1])}
    for r in roles.values():
        r["unstaged_ms_per_job"] = round(r["cpu_ms_per_job"] - r["staged_ms_per_job"], 2)
        r["cpu_ms_per_job"] = round(r["cpu_ms_per_job"], 2)
        r["staged_ms_per_job"] = round(r["staged_ms_per_job"], 2)
        table[f"other in {next(k for k, v in roles.items() if v is r)}"] = r["unstaged_ms_per_job"]
    if pg_cpu is not None:
        table["PostgreSQL backends"] = round(pg_cpu * per_job, 2)
    total = sum(stack_cpu.values()) + (pg_cpu or 0.0)
    return {
        "unit": "ms of CPU per job (thread CPU per stage, exclusive of nested stages)",
        "stages": table,
        "roles": roles,
        "total_cpu_ms_per_job": round(total * per_job, 2),
        "total_cpu_seconds": round(total, 2),
        "cpu_cores_busy": round(total / wall, 2) if wall else None,
        "stage_files": bool(stages),
    }


def statements(
    before: dict[int, dict[str, Any]], after: dict[int, dict[str, Any]], cmd: dict[int, str], jobs: int
) -> dict[str, Any]:
    """SQL statements the stack's processes sent per job, in all and per role (the stage files' counters)."""
    per_role: dict[str, float] = {}
    for pid, doc in after.items():
        sent = int(doc.get("statements") or 0) - int(before.get(pid, {}).get("statements") or 0)
        name = role(cmd.get(pid, "") or " ".join(doc.get("argv") or []))
        per_role[name] = per_role.get(name, 0) + sent / max(1, jobs)
    return {"per_job": round(sum(per_role.values()), 1), "per_role": {k: round(v, 1) for k, v in per_role.items()}}


PG_COUNTERS = ("xact_commit", "xact_rollback", "tup_inserted", "tup_updated", "tup_deleted", "tup_fetched")


def pg_counters(conn: Any, db_name: str) -> dict[str, int]:
    """PostgreSQL's counters of the bench database (transactions, rows written and read)."""
    row = conn.execute(
        f"SELECT {', '.join(PG_COUNTERS)} FROM pg_stat_database WHERE datname = %s", [db_name]
    ).fetchone()
    return dict(zip(PG_COUNTERS, (int(v or 0) for v in row), strict=True)) if row else {}


def per_job(before: dict[str, int], after: dict[str, int], jobs: int) -> dict[str, float]:
    """The counters' growth per job."""
    return {k: round((after.get(k, 0) - before.get(k, 0)) / max(1, jobs), 1) for k in after}


def read_stages(directory: Path | None) -> dict[int, dict[str, Any]]:
    return stageprof.read_all(directory) if directory and directory.exists() else {}
