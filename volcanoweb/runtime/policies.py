"""Requests, events, actions and policy resolution (as in Volcano's job controller); pure functions, no database."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.quantity import parse_duration

# events
ANY = "*"
POD_FAILED = "PodFailed"
POD_EVICTED = "PodEvicted"
POD_PENDING = "PodPending"
POD_RUNNING = "PodRunning"
UNKNOWN = "Unknown"
TASK_COMPLETED = "TaskCompleted"
TASK_FAILED = "TaskFailed"
OUT_OF_SYNC = "OutOfSync"
COMMAND_ISSUED = "CommandIssued"
INTERNAL_EVENTS = frozenset({OUT_OF_SYNC, COMMAND_ISSUED, POD_RUNNING})

# actions
ABORT_JOB = "AbortJob"
RESTART_JOB = "RestartJob"
RESTART_TASK = "RestartTask"
RESTART_POD = "RestartPod"
RESTART_PARTITION = "RestartPartition"
TERMINATE_JOB = "TerminateJob"
COMPLETE_JOB = "CompleteJob"
RESUME_JOB = "ResumeJob"
SYNC_JOB = "SyncJob"
JOB_SCOPE_ACTIONS = frozenset({ABORT_JOB, RESTART_JOB, TERMINATE_JOB, COMPLETE_JOB, RESUME_JOB})
TARGET_ACTIONS = frozenset({RESTART_TASK, RESTART_POD, RESTART_PARTITION})


@dataclass(frozen=True, slots=True)
class Request:
    """One reconcile request for a job (Volcano's ``apis.Request``)."""

    event: str = ""
    action: str = ""
    task_name: str = ""
    pod_name: str = ""
    pod_uid: str = ""
    exit_code: int = 0
    job_version: int | None = None
    job_uid: str = ""


def timeout_seconds(policy: dict[str, Any]) -> float:
    """Return a LifecyclePolicy's ``timeout`` in seconds (0 when unset).

    Admission (``manifests.jobs``) rejects a timeout that is not a Go duration, so a stored one parses;
    one that does not is an error here, never a silent 0.
    """
    value = policy.get("timeout")
    return 0.0 if value in (None, "") else parse_duration(str(value))


def policy_events(policy: dict[str, Any]) -> list[str]:
    """Return the union of ``event`` and ``events`` of a LifecyclePolicy."""
    events = [policy["event"]] if policy.get("event") else []
    return events + [e for e in policy.get("events") or [] if e]


def _match(policies: list[dict[str, Any]], request: Request) -> tuple[str, float, str] | None:
    """(action, delay, what matched: ``event PodFailed`` or ``exitCode 3``) of the first matching policy."""
    for policy in policies or []:
        events = policy_events(policy)
        if events:
            if request.event in events or ANY in events:
                timeout = timeout_seconds(policy)
                if request.event == POD_PENDING and timeout <= 0:
                    continue
                matched = f"event {request.event}" if request.event in events else f"event * ({request.event})"
                return str(policy.get("action") or SYNC_JOB), timeout, matched
        elif policy.get("exitCode") is not None and request.exit_code != 0 and policy["exitCode"] == request.exit_code:
            return str(policy.get("action") or SYNC_JOB), timeout_seconds(policy), f"exitCode {request.exit_code}"
    return None


def resolve(spec: dict[str, Any], version: int, job_uid: str, request: Request) -> tuple[str, float]:
    """Return ``(action, delay seconds)`` for a request, with Volcano's precedence.

    Commands win; internal events, stale job uids and pods of an older job version sync; then the
    event's task policies, then the job policies, first match wins; otherwise SyncJob.
    """
    action, delay, _why = explain(spec, version, job_uid, request)
    return action, delay


def explain(spec: dict[str, Any], version: int, job_uid: str, request: Request) -> tuple[str, float, str]:
    """:func:`resolve`, and in words what decided: ``command``, ``policy of task worker (event PodFailed)``,
    ``job policy (exitCode 3)`` or ``""`` (no policy: SyncJob)."""
    if request.action:
        return request.action, 0.0, "command" if request.event in ("", COMMAND_ISSUED) else f"armed on {request.event}"
    if not request.event or request.event in INTERNAL_EVENTS:
        return SYNC_JOB, 0.0, ""
    if request.job_uid and job_uid and request.job_uid != job_uid:
        return SYNC_JOB, 0.0, ""
    if request.job_version is not None and request.job_version < version:
        return SYNC_JOB, 0.0, ""
    if request.task_name:
        task = next((t for t in spec.get("tasks") or [] if t.get("name") == request.task_name), None)
        if task is not None:
            found = _match(task.get("policies") or [], request)
            if found is not None:
                return found[0], found[1], f"policy of task {request.task_name} ({found[2]})"
    found = _match(spec.get("policies") or [], request)
    if found is not None:
        return found[0], found[1], f"job policy ({found[2]})"
    return SYNC_JOB, 0.0, ""


def scope_of(action: str) -> str:
    """Return the cancellation scope of an action: job, task, pod, partition or '' (SyncJob)."""
    if action in JOB_SCOPE_ACTIONS:
        return "job"
    return {RESTART_TASK: "task", RESTART_POD: "pod", RESTART_PARTITION: "partition"}.get(action, "")
