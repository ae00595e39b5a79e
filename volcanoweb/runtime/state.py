"""Phase update functions of Volcano's job state machine; pure functions over status dicts.

The deviations from Volcano are listed in docs/controllers.md, "Job controller".

Each function receives the job ``spec`` and the *new* status computed by a sync or kill, may change
``status["state"]["phase"]`` (and ``retryCount``), and returns True when it changed something.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from volcanoweb.jobs.models import FINISHED_JOB_PHASES, JobPhase

# The phases as plain strings (status dicts are JSON), from their one definition, jobs.models.JobPhase.
PENDING = JobPhase.PENDING.value
ABORTING = JobPhase.ABORTING.value
ABORTED = JobPhase.ABORTED.value
RUNNING = JobPhase.RUNNING.value
RESTARTING = JobPhase.RESTARTING.value
COMPLETING = JobPhase.COMPLETING.value
COMPLETED = JobPhase.COMPLETED.value
TERMINATING = JobPhase.TERMINATING.value
TERMINATED = JobPhase.TERMINATED.value
FAILED = JobPhase.FAILED.value
FINISHED = frozenset(phase.value for phase in FINISHED_JOB_PHASES)

Update = Callable[[dict[str, Any], dict[str, Any]], bool]


def phase_of(status: dict[str, Any]) -> str:
    """Return ``status.state.phase`` ('' when unset)."""
    return str((status.get("state") or {}).get("phase") or "")


def set_phase(status: dict[str, Any], phase: str) -> None:
    """Set ``status.state.phase``."""
    status["state"] = {**(status.get("state") or {}), "phase": phase}


def total_replicas(spec: dict[str, Any]) -> int:
    """Return Σ tasks[].replicas."""
    return sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or [])


def total_task_min_available(spec: dict[str, Any]) -> int:
    """Return Σ task minAvailable, a task without one counting its replicas."""
    total = 0
    for task in spec.get("tasks") or []:
        value = task.get("minAvailable")
        total += int(task.get("replicas") or 0) if value is None else int(value)
    return total


def unchanged(spec: dict[str, Any], status: dict[str, Any]) -> bool:
    """Keep the phase."""
    return False


def move_to(phase: str, *, retry: bool = False) -> Update:
    """Return an update that enters ``phase`` (and counts one retry when ``retry``)."""

    def update(spec: dict[str, Any], status: dict[str, Any]) -> bool:
        set_phase(status, phase)
        if retry:
            status["retryCount"] = int(status.get("retryCount") or 0) + 1
        return True

    return update


def pending_sync(spec: dict[str, Any], status: dict[str, Any]) -> bool:
    """Pending → Running once ``minAvailable ≤ running + succeeded + failed``."""
    started = int(status.get("running", 0)) + int(status.get("succeeded", 0)) + int(status.get("failed", 0))
    if int(spec.get("minAvailable") or 0) <= started:
        set_phase(status, RUNNING)
        return True
    return False


def running_sync(spec: dict[str, Any], status: dict[str, Any]) -> bool:
    """The Running-phase decision: minSuccess, all finished → Completed/Failed, gang broken → Pending."""
    replicas = total_replicas(spec)
    if replicas == 0:
        return False
    succeeded, failed = int(status.get("succeeded", 0)), int(status.get("failed", 0))
    min_available = int(spec.get("minAvailable") or 0)
    min_success = spec.get("minSuccess")
    if min_success is not None and succeeded >= int(min_success):
        set_phase(status, COMPLETED)
        return True
    if succeeded + failed == replicas:
        if min_available >= total_task_min_available(spec):
            counts = status.get("taskStatusCount") or {}
            for task in spec.get("tasks") or []:
                if task.get("minAvailable") is None or task["name"] not in counts:
                    continue
                if int((counts[task["name"]].get("phase") or {}).get("Succeeded", 0)) < int(task["minAvailable"]):
                    set_phase(status, FAILED)
                    return True
        if min_success is not None and succeeded < int(min_success):
            set_phase(status, FAILED)
        elif succeeded >= min_available:
            set_phase(status, COMPLETED)
        else:
            set_phase(status, FAILED)
        return True
    if int(status.get("pending", 0)) > replicas - min_available:
        set_phase(status, PENDING)
        return True
    return False


def restarting_sync(spec: dict[str, Any], status: dict[str, Any]) -> bool:
    """The R-rule: Failed once retries are used up, Pending once enough pods can exist again."""
    if int(status.get("retryCount") or 0) >= int(spec.get("maxRetry") or 3):
        set_phase(status, FAILED)
        return True
    if total_replicas(spec) - int(status.get("terminating", 0)) >= int(status.get("minAvailable") or 0):
        set_phase(status, PENDING)
        return True
    return False


def settle_to(phase: str) -> Update:
    """Return an update entering ``phase`` once no pod is terminating, pending or running."""

    def update(spec: dict[str, Any], status: dict[str, Any]) -> bool:
        if all(int(status.get(key, 0)) == 0 for key in ("terminating", "pending", "running")):
            set_phase(status, phase)
            return True
        return False

    return update
