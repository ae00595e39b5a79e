"""CycleResult: the decisions of one scheduling cycle and the reasons for what was not done."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypedDict

__all__ = ["CycleResult", "Eviction", "JobReason", "ReasonKind", "cycle_json"]


class ReasonKind(StrEnum):
    """Why a job (PodGroup) was left unscheduled."""

    ENQUEUE_REJECTED = "enqueue-rejected"  # cluster overcommit or queue quota refused admission
    NEVER_FITS = "never-fits"  # enqueuegate: the gang cannot start even on an empty cluster
    QUEUE_CLOSED = "queue-closed"
    QUEUE_MISSING = "queue-missing"
    INVALID = "invalid"  # job_valid failed: not enough pods exist for the gang
    QUEUE_OVERUSED = "queue-overused"  # queue reached its deserved share (proportion)
    CAPABILITY_EXCEEDED = "capability-exceeded"  # allocatable refused: queue quota exhausted
    PREDICATE_FAILURE = "predicate-failure"  # no node passed predicates + resource fit
    GANG_SHORTFALL = "gang-shortfall"  # some tasks fit, but fewer than minMember
    NOT_REACHED = "not-reached"  # the action stopped before the job was considered
    TOPOLOGY = "network-topology"  # no HyperNode the job's networkTopology allows fits the gang


@dataclass(frozen=True, slots=True)
class JobReason:
    """A structured reason why a job is (still) pending after the cycle.

    ``message`` reads like Volcano's PodGroup condition (``"2/3 tasks in gang unschedulable:
    ..."``). ``fit_errors`` counts nodes per predicate reason for the first failing task, e.g.
    ``{"Insufficient cpu": 3, "node(s) didn't match Pod's node affinity/selector": 2}``.
    ``numbers`` carries the figures behind the message (min_available, ready, pending, total,
    nodes, and for quota reasons the resource amounts).
    """

    kind: ReasonKind
    message: str
    plugin: str = ""
    fit_errors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    numbers: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {
            "kind": str(self.kind),
            "message": self.message,
            "plugin": self.plugin,
            "fit_errors": dict(self.fit_errors),
            "numbers": dict(self.numbers),
        }


@dataclass(frozen=True, slots=True)
class Eviction:
    """A pod evicted by preempt or reclaim: ``task`` is ``ns/name``, ``preemptor`` likewise."""

    task: str
    uid: str
    node: str
    action: str
    reason: str
    preemptor: str = ""

    def to_json(self) -> dict[str, str]:
        """Return a JSON-serialisable dict."""
        return {
            "task": self.task,
            "uid": self.uid,
            "node": self.node,
            "action": self.action,
            "reason": self.reason,
            "preemptor": self.preemptor,
        }


class CycleJSON(TypedDict):
    """The simulator's per-cycle JSON shape."""

    binds: dict[str, str]
    evictions: list[str]
    pipelined: dict[str, str]
    podgroups: dict[str, str]
    unschedulable: dict[str, str]


@dataclass(frozen=True, slots=True)
class CycleResult:
    """Everything one cycle decided.

    * ``binds``: pod ``ns/name`` → node, pods to bind now (committed allocations);
    * ``bind_uids``: pod uid → node, the same decisions keyed by uid;
    * ``evictions``: pods to delete, with action, reason and preemptor;
    * ``pipelined``: pod → node it waits for (resources being released); not bound;
    * ``podgroups``: PodGroup ``ns/name`` → new phase, only for phases that changed;
    * ``unschedulable``: PodGroup → :class:`JobReason` for every job left with pending pods;
    * ``queue_allocated``: queue → allocated resources at close (scheduler units);
    * ``queue_deserved``: queue → deserved resources computed by the fair-share plugin
      (proportion or capacity; empty when neither is configured);
    * ``timings``: action → seconds (empty unless a timer was passed to ``run_cycle``);
    * ``bind_annotations``: pod ``ns/name`` → annotations to write on it with its bind (deviceshare's
      ``volcano.sh/gpu-index``), only for bound pods a plugin annotated.
    """

    binds: Mapping[str, str] = field(default_factory=dict)
    bind_uids: Mapping[str, str] = field(default_factory=dict)
    evictions: tuple[Eviction, ...] = ()
    pipelined: Mapping[str, str] = field(default_factory=dict)
    podgroups: Mapping[str, str] = field(default_factory=dict)
    unschedulable: Mapping[str, JobReason] = field(default_factory=dict)
    queue_allocated: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    queue_deserved: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    timings: Mapping[str, float] = field(default_factory=dict)
    bind_annotations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the full result as a JSON-serialisable dict (reasons structured; ``bind_annotations``
        only when a plugin wrote some)."""
        notes = {k: dict(v) for k, v in self.bind_annotations.items()}
        return {
            "binds": dict(self.binds),
            "bind_uids": dict(self.bind_uids),
            "evictions": [e.to_json() for e in self.evictions],
            "pipelined": dict(self.pipelined),
            "podgroups": dict(self.podgroups),
            "unschedulable": {k: v.to_json() for k, v in self.unschedulable.items()},
            "queue_allocated": {k: dict(v) for k, v in self.queue_allocated.items()},
            "queue_deserved": {k: dict(v) for k, v in self.queue_deserved.items()},
            "timings": dict(self.timings),
            **({"bind_annotations": notes} if notes else {}),
        }


def cycle_json(result: CycleResult) -> CycleJSON:
    """Return the simulator CLI's compact per-cycle shape."""
    return {
        "binds": dict(result.binds),
        "evictions": [e.task for e in result.evictions],
        "pipelined": dict(result.pipelined),
        "podgroups": dict(result.podgroups),
        "unschedulable": {k: v.message for k, v in result.unschedulable.items()},
    }
