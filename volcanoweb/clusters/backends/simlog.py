"""The simulated cluster's container log: what the simulated kubelet did, as log lines.

The simulator runs no program, so :func:`simulated_pod_log` writes the lines a pod's history implies
(created, scheduled, started, progress every :data:`SIM_LOG_PERIOD` simulated seconds, restarts, exit code);
:func:`simulated_log_time` reads a line's simulated time back (the engine maps it to the wall clock).
"""

from __future__ import annotations

import re

from .base import NotFound, PodInfo

#: Simulated time between two progress lines of a running simulated container.
SIM_LOG_PERIOD = 5.0
SIM_LOG_MAX_PROGRESS = 2000


def simulated_pod_log(
    info: PodInfo,
    now: float,
    *,
    container: str | None = None,
    tail_lines: int | None = None,
    previous: bool = False,
    planned_finish: float | None = None,
) -> str:
    """The simulated cluster's container log: start, progress while running, restarts and the exit code.

    Times are simulated seconds (``t=12s``). The simulator runs no program, so these lines describe
    what the simulated kubelet did; ``previous`` needs at least one restart, as on Kubernetes.
    """
    name = container or "main"
    if previous:
        if info.restart_count == 0:
            raise NotFound(f'previous terminated container "{name}" in pod "{info.name}" not found')
        lines = [
            f"[sim] container {name} of pod {info.namespace}/{info.name}: instance {info.restart_count} of "
            f"{info.restart_count + 1} (before the last restart)",
            f"[sim] it ended and was restarted by the kubelet (restart {info.restart_count}); "
            "the simulator keeps no output of earlier instances",
        ]
        return "\n".join(lines) + "\n"
    lines = [f"[sim t={_t(info.created_at)}] pod {info.namespace}/{info.name} created"]
    if info.node_name:
        lines.append(f"[sim] scheduled to node {info.node_name}")
    if info.started_at is not None:
        restarts = f" (restart {info.restart_count})" if info.restart_count else ""
        lines.append(f"[sim t={_t(info.started_at)}] container {name} started{restarts}")
        end = info.finished_at if info.finished_at is not None else now
        if planned_finish is not None:
            end = min(end, planned_finish)  # the kubelet has not ticked yet: never past the planned end
        tick = info.started_at + SIM_LOG_PERIOD
        while tick <= end and len(lines) < SIM_LOG_MAX_PROGRESS:
            planned = f" of {planned_finish - info.started_at:.0f}s" if planned_finish is not None else ""
            lines.append(f"[sim t={_t(tick)}] container {name} running: {tick - info.started_at:.0f}s{planned}")
            tick += SIM_LOG_PERIOD
    elif info.phase == "Pending":
        lines.append(f"[sim] container {name} waiting to start")
    if info.finished:
        code = info.exit_code if info.exit_code is not None else (0 if info.phase == "Succeeded" else 1)
        why = f" ({info.reason})" if info.reason else ""
        lines.append(f"[sim t={_t(info.finished_at)}] container {name} exited with code {code}{why}")
    elif info.deleting:
        lines.append(f"[sim] pod is terminating{f' ({info.reason})' if info.reason else ''}")
    if tail_lines is not None and tail_lines >= 0:
        lines = lines[-tail_lines:] if tail_lines else []
    return "\n".join(lines) + ("\n" if lines else "")


_SIM_LOG_TIME = re.compile(r"^\[sim t=(\d+)s\]")


def simulated_log_time(line: str) -> float | None:
    """The simulated time (seconds) a line of :func:`simulated_pod_log` names (``[sim t=12s]``), if any."""
    found = _SIM_LOG_TIME.match(line)
    return float(found.group(1)) if found else None


def _t(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}s"
