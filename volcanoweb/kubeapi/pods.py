"""The printer columns of Kubernetes' own pod printer: ``NAME READY STATUS RESTARTS AGE``; wide: ``IP NODE
NOMINATED NODE READINESS GATES`` (the pod's status itself: :mod:`volcanoweb.manifests.corepod`)."""

from __future__ import annotations

from typing import Any


def ready(obj: dict[str, Any]) -> str:
    """READY: ready containers / containers."""
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    return f"{sum(1 for s in statuses if s.get('ready'))}/{len(statuses)}"


def restarts(obj: dict[str, Any]) -> int:
    """RESTARTS: the containers' restarts."""
    return sum(int(s.get("restartCount") or 0) for s in (obj.get("status") or {}).get("containerStatuses") or [])


def status_text(obj: dict[str, Any]) -> str:
    """STATUS as kubectl prints a pod: Terminating, the pod's reason, a container's waiting or terminated
    reason, else the phase."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "Terminating"
    if status.get("reason"):
        return str(status["reason"])
    text = str(status.get("phase") or "Unknown")
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            text = state["waiting"]["reason"]
        elif "terminated" in state:
            text = state["terminated"].get("reason") or f"ExitCode:{state['terminated'].get('exitCode')}"
    return text


def readiness_gates(obj: dict[str, Any]) -> str:
    """READINESS GATES: ``<none>`` without gates, else ready/total."""
    gates = (obj.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}
    return f"{sum(1 for g in gates if conditions.get(g.get('conditionType')) == 'True')}/{len(gates)}"


def node(obj: dict[str, Any]) -> str:
    """NODE: ``<none>`` before it is bound."""
    return str((obj.get("spec") or {}).get("nodeName") or "<none>")


def ip(obj: dict[str, Any]) -> str:
    """IP: ``<none>`` (the simulated cluster gives pods no address)."""
    return str((obj.get("status") or {}).get("podIP") or "<none>")


def nominated(obj: dict[str, Any]) -> str:
    """NOMINATED NODE."""
    return str((obj.get("status") or {}).get("nominatedNodeName") or "<none>")
