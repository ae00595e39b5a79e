"""The core v1 Pod status as the kubelet reports it, derived from what the product stores for a pod.

The product keeps a pod's observed state in a few columns and ``status`` (phase, reason, exit code, restart
count, times). This module derives the rest: ``conditions`` (PodScheduled, Initialized, ContainersReady,
Ready), ``containerStatuses`` (state, restartCount, exitCode, started) and ``qosClass``, and leaves out the
product's own bookkeeping (the backend's uid and version; the scheduling run that bound the pod is the
annotation :data:`SCHEDULED_BY_ANNOTATION`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

#: The scheduling run (insights) that bound the pod: ``status.scheduledBy`` in the database.
SCHEDULED_BY_ANNOTATION = "scheduling.volcanoweb.io/run"


def timestamp(value: datetime | None) -> str | None:
    """RFC 3339 UTC, as :func:`volcanoweb.manifests.render.timestamp`."""
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: ``status`` keys the product writes for itself, never shown as part of a Pod.
INTERNAL_STATUS = frozenset(
    {"backendUid", "backendVersion", "scheduledBy", "origin", "exitCode", "restartCount", "deleting"}
)
#: Container reasons that are not the pod's own ``status.reason``.
CONTAINER_REASONS = frozenset({"Completed", "Error", "OOMKilled", "ContainerCannotRun", "DeadlineExceeded"})


def _condition(kind: str, true: bool, at: str | None, reason: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "status": "True" if true else "False", "lastProbeTime": None}
    out["lastTransitionTime"] = at
    if reason and not true:
        out["reason"] = reason
    return out


def _qos(containers: list[dict[str, Any]]) -> str:
    requests = [(c.get("resources") or {}).get("requests") or {} for c in containers]
    limits = [(c.get("resources") or {}).get("limits") or {} for c in containers]
    if not any(requests) and not any(limits):
        return "BestEffort"
    guaranteed = all(
        all(limit.get(name) not in (None, "") for name in ("cpu", "memory"))
        and all(str(request.get(name, limit.get(name))) == str(limit.get(name)) for name in ("cpu", "memory"))
        for request, limit in zip(requests, limits, strict=True)
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _state(pod: Any, raw: dict[str, Any], started: str | None, finished: str | None) -> dict[str, Any]:
    if pod.phase in ("Succeeded", "Failed"):
        code = raw.get("exitCode")
        if code is None:
            code = pod.exit_code if pod.exit_code is not None else (0 if pod.phase == "Succeeded" else 1)
        reason = raw.get("reason") or ("Completed" if code == 0 else "Error")
        terminated: dict[str, Any] = {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished}
        return {"terminated": terminated}
    if pod.phase == "Running" and started:
        return {"running": {"startedAt": started}}
    return {"waiting": {"reason": "ContainerCreating" if pod.node_name else "Pending"}}


def pod_status(pod: Any, base: dict[str, Any], created: str | None) -> dict[str, Any]:
    """Return the core v1 ``status`` of a pod row from ``base`` (its stored status, phase and startTime)."""
    raw = dict(pod.status or {})
    status: dict[str, Any] = {k: v for k, v in base.items() if k not in INTERNAL_STATUS}
    reason = str(raw.get("reason") or "")
    if reason in CONTAINER_REASONS or not reason:
        status.pop("reason", None)
    if not status.get("message"):
        status.pop("message", None)
    started = timestamp(pod.started_at) if pod.started_at else None
    finished = timestamp(getattr(pod, "finished_at", None))
    scheduled = bool(pod.node_name)
    running = pod.phase == "Running" and getattr(pod, "deletion_timestamp", None) is None
    done_reason = "PodCompleted" if pod.phase in ("Succeeded", "Failed") else "ContainersNotReady"
    ready_at = started if running else (finished or created)
    status["conditions"] = [
        _condition("PodReadyToStartContainers", scheduled and pod.phase != "Pending", started or created),
        _condition("Initialized", scheduled, created),
        _condition("Ready", running, ready_at, done_reason),
        _condition("ContainersReady", running, ready_at, done_reason),
        _condition("PodScheduled", scheduled, created, "Unschedulable" if pod.phase == "Pending" else ""),
    ]
    containers = [c for c in (pod.spec or {}).get("containers") or [] if isinstance(c, dict)]
    restarts = int(raw.get("restartCount") or 0)
    statuses = []
    for container in containers or [{"name": "main", "image": ""}]:
        entry: dict[str, Any] = {
            "name": str(container.get("name") or "main"),
            "image": str(container.get("image") or ""),
            "imageID": "",
            "ready": running,
            "started": running,
            "restartCount": restarts,
            "state": _state(pod, raw, started, finished),
            "lastState": {},
        }
        if restarts:
            entry["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": started}}
        statuses.append(entry)
    status["containerStatuses"] = statuses
    status["qosClass"] = _qos(containers)
    return status
