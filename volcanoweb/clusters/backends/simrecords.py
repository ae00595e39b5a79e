"""The simulated cluster's records: pods and nodes as the engine stores them, and its settings.

A :class:`PodRecord` or :class:`NodeRecord` is plain data (the database store's ``SimPod`` and ``SimNode``
columns have the same names, :data:`POD_FIELDS` and :data:`NODE_FIELDS`); the engine
(:mod:`.simengine`) changes them inside a transaction (:mod:`.simstore`) through the transitions of
:mod:`.simtransitions`. Resources are the scheduler's integers (cpu in millicores, memory in bytes, counts).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from scheduler.quantity import parse_resource

from .base import NodeInfo, OwnerReference, PodInfo

DEFAULT_MAX_PODS = 110
_FINISHED = ("Succeeded", "Failed")

PodKey = tuple[str, str]
TimerKind = Literal["start", "finish", "remove"]


# ---------------------------------------------------------------- resources


def integer_resources(requests: dict[str, str], *, pod_slot: bool) -> dict[str, int]:
    """Return quantity strings as scheduler integers (cpu millicores, memory bytes, counts)."""
    out = {name: parse_resource(name, value) for name, value in requests.items()}
    if pod_slot:
        out["pods"] = 1
    return out


def node_capacity(info: NodeInfo) -> dict[str, int]:
    """Return a node's allocatable as integers (pods default 110)."""
    capacity = integer_resources(info.allocatable, pod_slot=False)
    capacity.setdefault("pods", DEFAULT_MAX_PODS)
    return capacity


# ---------------------------------------------------------------- records


@dataclass(slots=True)
class PodRecord:
    """A simulated pod: its spec (a ``PodSpec`` dict), status and kubelet timers (simulated seconds).

    The engine never changes a dict of a record in place (it assigns a new one), so a shallow copy of a
    record is a snapshot.
    """

    namespace: str
    name: str
    uid: str
    spec: dict[str, Any]
    requests: dict[str, str]
    created_at: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)
    phase: str = "Pending"
    node_name: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    deleting: bool = False
    admitted: bool = False
    resource_version: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    start_at: float | None = None
    finish_at: float | None = None
    remove_at: float | None = None
    restart_count: int = 0

    @property
    def key(self) -> PodKey:
        return (self.namespace, self.name)

    @property
    def finished(self) -> bool:
        return self.phase in _FINISHED

    def timer(self, kind: TimerKind) -> float | None:
        at: float | None = getattr(self, f"{kind}_at")
        return at

    def info(self) -> PodInfo:
        """The pod as observed (a copy)."""
        spec = self.spec
        owner = spec.get("owner")
        return PodInfo(
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            phase=self.phase,
            node_name=self.node_name,
            exit_code=self.exit_code,
            reason=self.reason,
            message=self.message,
            annotations=dict(spec.get("annotations") or {}),
            labels=dict(spec.get("labels") or {}),
            scheduler_name=spec.get("scheduler_name", "volcano"),
            requests=dict(self.requests),
            deleting=self.deleting,
            resource_version=str(self.resource_version),
            owner=OwnerReference.from_dict(owner) if owner else None,
            priority_class_name=spec.get("priority_class_name", ""),
            created_at=self.created_at,
            started_at=self.started_at,
            finished_at=self.finished_at,
            restart_count=self.restart_count,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PodRecord:
        return cls(**data)


#: The fields of a pod record, in order (the database store's columns have the same names).
POD_FIELDS = tuple(f.name for f in dataclasses.fields(PodRecord))


@dataclass(slots=True)
class NodeRecord:
    """A simulated node: its ``NodeInfo`` dict, capacity and the resources admitted on it (integers)."""

    name: str
    info: dict[str, Any]
    capacity: dict[str, int]
    used: dict[str, int] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return bool(self.info.get("ready", True))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeRecord:
        return cls(**data)


NODE_FIELDS = tuple(f.name for f in dataclasses.fields(NodeRecord))


@dataclass(frozen=True, slots=True)
class SimSettings:
    """What a simulated cluster was created with (the database store keeps the first process's)."""

    pool: str = ""
    speed: float = 0.0
    default_duration: float = 60.0
    startup_delay: float = 0.0
    delete_grace: float = 0.0
