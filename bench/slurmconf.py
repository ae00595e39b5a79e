"""The Slurm peer's pure parts: its slurm.conf, the job command, and the parsing of what Slurm prints.

The configuration is the one of the Slurm peer design note (Slurm 22.05 from Debian on one host): the
node declares more CPUs than the machine has (``SlurmdParameters=config_overrides``), so that Slurm's
placement, not the two cores, is what is measured; ``batch_sched_delay=1`` and ``default_queue_depth=1000``
because the HTC guide's sample settings (``batch_sched_delay=20``) give about 7 jobs/s. Every path is in
the run's scratch folder, and munge has its own key and socket there (``AuthInfo=socket=...``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.metrics import pct

#: The binaries a run needs; the first four are the ones the issue names (the others ship with them).
BINARIES = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "scontrol", "sdiag")
#: What a missing binary is fixed with.
INSTALL_HINT = "make bench-peer (installs Debian's slurm-wlm and munge, then runs this benchmark)"
#: One job: one task of one CPU and 10 MB running ``true``, its output thrown away.
JOB_COMMAND = ("sbatch", "-Q", "-n1", "-c1", "--mem=10", "-o", "/dev/null", "-e", "/dev/null", "--wrap", "true")
SCHEDULER_PARAMETERS = "defer,max_rpc_cnt=150,batch_sched_delay=1,default_queue_depth=1000,bf_continue"
NOTE = (
    "Slurm really forks each job (slurmstepd, ~28-30 ms of CPU a job) while volcanoweb's pods are simulated: "
    "the comparison favours volcanoweb"
)


@dataclass(frozen=True)
class Layout:
    """Where one throw-away cluster keeps its files, and the ports it listens on."""

    root: Path
    controller_port: int  # the first of four (SlurmctldPort=N-N+3)
    node_port: int
    host: str = "vm"  # SlurmctldHost: slurmctld only runs on the host of that name (the short hostname)
    node: str = "vm"  # NodeName: slurmd is started with -N <node>
    user: str = "root"
    cpus: int = 128
    memory_mb: int = 20_000

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "munge.socket.2"

    @property
    def munge_key(self) -> Path:
        return self.root / "munge" / "munge.key"

    def folders(self) -> list[Path]:
        return [self.root / name for name in ("etc", "munge", "run", "state", "spool", "log")]


def slurm_conf(layout: Layout) -> str:
    """The slurm.conf of a single-host cluster laid out as ``layout`` says."""
    d = layout.root
    first = layout.controller_port
    lines = [
        "ClusterName=bench",
        f"SlurmctldHost={layout.host}(127.0.0.1)",
        f"SlurmUser={layout.user}",
        f"SlurmdUser={layout.user}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={layout.munge_socket}",
        f"SlurmctldPort={first}-{first + 3}",
        f"SlurmdPort={layout.node_port}",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd.pid",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd.log",
        "SlurmctldDebug=error",
        "SlurmdDebug=error",
        "ProctrackType=proctrack/pgid",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "PriorityType=priority/basic",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU_Memory",
        "SchedulerType=sched/backfill",
        f"SchedulerParameters={SCHEDULER_PARAMETERS}",
        "MinJobAge=2",
        "MessageTimeout=30",
        "MaxJobCount=20000",
        "MaxArraySize=4001",
        "ReturnToService=2",
        "SlurmdParameters=config_overrides",
        f"NodeName={layout.node} NodeAddr=127.0.0.1 CPUs={layout.cpus} RealMemory={layout.memory_mb} State=UNKNOWN",
        f"PartitionName=bench Nodes={layout.node} Default=YES MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def parse_conf(text: str) -> dict[str, str]:
    """``Key=value`` lines of a slurm.conf (the NodeName and PartitionName lines keyed by their first word)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"not a Key=value line: {raw!r}")
        out[key] = value
    return out


#: squeue's job states (``%T``) that mean the job has not started yet.
WAITING_STATES = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})


def queue_states(text: str) -> dict[str, int]:
    """``squeue -h -o %T`` -> jobs per state."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        state = line.strip()
        if not state:
            continue
        if not re.fullmatch(r"[A-Z_]+", state):
            raise ValueError(f"not a job state: {line!r}")
        out[state] = out.get(state, 0) + 1
    return out


def waiting(states: dict[str, int]) -> int:
    """Jobs of ``queue_states`` that have not started."""
    return sum(n for state, n in states.items() if state in WAITING_STATES)


_SDIAG_JOBS = {
    "Jobs submitted": "submitted",
    "Jobs started": "started",
    "Jobs completed": "completed",
    "Jobs canceled": "canceled",
    "Jobs failed": "failed",
}


def sdiag_jobs(text: str) -> dict[str, int]:
    """The job counters of ``sdiag`` (since the controller started): submitted, started, completed, ...

    Raises ValueError when one is missing: a run is only checked against all of them."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        label, sep, value = line.partition(":")
        key = _SDIAG_JOBS.get(label.strip())
        if key and sep and key not in out:  # the first block only (the later ones are per-RPC tables)
            out[key] = int(value.split()[0])
    missing = [k for k in _SDIAG_JOBS.values() if k not in out]
    if missing:
        raise ValueError(f"sdiag printed no counter for {', '.join(missing)}")
    return out


def latency_summary(seconds: list[float]) -> dict[str, Any]:
    """Submission latencies (seconds) -> count, p50, p90, p99, max, in ms (nearest rank)."""
    ms = [s * 1000 for s in seconds]
    return {
        "count": len(ms),
        "Perc50": round(pct(ms, 50), 2) if ms else None,
        "Perc90": round(pct(ms, 90), 2) if ms else None,
        "Perc99": round(pct(ms, 99), 2) if ms else None,
        "max": round(max(ms), 2) if ms else None,
        "unit": "ms",
    }


def check(submitted: int, jobs: int, counters: dict[str, int], left: int) -> list[str]:
    """What is wrong with a run that asked for ``jobs`` jobs: refused submissions, lost or failed jobs."""
    problems = []
    if submitted != jobs:
        problems.append(f"{jobs - submitted} of {jobs} sbatch calls failed")
    if counters.get("submitted") != submitted:
        problems.append(f"slurmctld counted {counters.get('submitted')} submissions, sbatch {submitted}")
    if counters.get("started") != submitted:
        problems.append(f"{counters.get('started')} of {submitted} jobs started")
    if counters.get("completed") != submitted:
        problems.append(f"{counters.get('completed')} of {submitted} jobs completed")
    if counters.get("failed") or counters.get("canceled"):
        problems.append(f"{counters.get('failed')} jobs failed, {counters.get('canceled')} were cancelled")
    if left:
        problems.append(f"{left} jobs were still in the queue at the end")
    return problems


def node_state(text: str) -> str:
    """``scontrol -o show node NAME`` -> its State (``IDLE``, ``IDLE+NOT_RESPONDING``, ...)."""
    match = re.search(r"(?:^|\s)State=(\S+)", text)
    if not match:
        raise ValueError(f"no State= in {text[:200]!r}")
    return match.group(1)


#: squeue's job states (``%T``) of jobs that have ended.
ENDED_STATES = frozenset(
    {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}
)


def unfinished(states: dict[str, int]) -> int:
    """Jobs of ``queue_states`` that have not ended (waiting, running, completing, ...)."""
    return sum(n for state, n in states.items() if state not in ENDED_STATES)


def _rate(jobs: int, seconds: float | None) -> float | None:
    return round(jobs / seconds, 2) if seconds else None


def section(
    sub: dict[str, Any], waited: dict[str, Any], counters: dict[str, int], problems: list[str]
) -> dict[str, Any]:
    """The measured part of the report from the submission, the queue polls and sdiag's counters.

    Times are perf_counter readings; every rate is over the jobs that were submitted, from the first
    sbatch call."""
    start = sub["start"]
    submitted = len(sub["latencies"])
    to_started = waited["started"] - start if waited["started"] is not None else None
    to_finished = waited["finished"] - start if waited["finished"] is not None else None
    submit_seconds = sub["end"] - start
    return {
        "jobs_per_second": _rate(submitted, to_started),
        "seconds_first_submit_to_last_started": round(to_started, 3) if to_started is not None else None,
        "seconds_first_submit_to_last_finished": round(to_finished, 3) if to_finished is not None else None,
        "jobs_per_second_to_last_finished": _rate(submitted, to_finished),
        "submission": {
            "seconds": round(submit_seconds, 3),
            "jobs_per_second": _rate(submitted, submit_seconds),
            "submitted": submitted,
            "failed": len(sub["errors"]),
            "errors_sample": sub["errors"][:20],
        },
        "submit_latency": latency_summary(sub["latencies"]),
        "queue_polls": waited["polls"],
        "last_queue_states": waited["states"],
        "slurmctld_counters": counters,
        "problems": problems,
        "ok": not problems,
    }
