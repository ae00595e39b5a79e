"""The extension points' vocabulary, below everything that names a session: the point names, a
plugin's vote, a failed check and a predicate's verdict over the nodes (with the array types they
are made of). Plugins, actions, the session and the handle they see all speak it; it imports
nothing of the scheduler, so that the plugin bases (:mod:`scheduler.framework`) can name the
session handle (:mod:`scheduler.handle`) that itself returns these values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum

import numpy as np
import numpy.typing as npt

__all__ = ["BoolArray", "ExtensionPoint", "Filter", "Fit", "FloatArray", "IntArray", "Vote"]

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


class Vote(IntEnum):
    """A plugin's vote on jobEnqueueable / jobPipelined."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class ExtensionPoint(StrEnum):
    """Extension points; the values are the names used in ``disabled:`` lists."""

    QUEUE_ORDER = "queue_order"
    VICTIM_QUEUE_ORDER = "victim_queue_order"
    JOB_ORDER = "job_order"
    TASK_ORDER = "task_order"
    JOB_VALID = "job_valid"
    JOB_ENQUEUEABLE = "job_enqueueable"
    JOB_ENQUEUED = "job_enqueued"
    JOB_READY = "job_ready"
    JOB_PIPELINED = "job_pipelined"
    JOB_STARVING = "job_starving"
    PREDICATE = "predicate"
    NODE_ORDER = "node_order"
    BEST_NODE = "best_node"
    PREEMPTABLE = "preemptable"
    RECLAIMABLE = "reclaimable"
    PREEMPTIVE = "preemptive"
    OVERUSED = "overused"
    ALLOCATABLE = "allocatable"
    VICTIM_TASKS = "victim_tasks"
    TARGET_JOB = "target_job"
    RESERVED_NODES = "reserved_nodes"
    HYPERNODE_ORDER = "hypernode_order"
    HYPERNODE_GRADIENT = "hypernode_gradient"
    SUB_JOB_READY = "sub_job_ready"
    SUB_JOB_PIPELINED = "sub_job_pipelined"
    SUB_JOB_ORDER = "sub_job_order"


@dataclass(frozen=True, slots=True)
class Fit:
    """A failed check: which plugin said no, a machine ``reason`` code and a human message."""

    plugin: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Filter:
    """One predicate's verdict for a task over **all** session nodes.

    ``passed[i]`` is whether node ``i`` passes. ``reason`` is the Kubernetes-style message for
    failing nodes (e.g. ``node(s) didn't match Pod's node affinity/selector``); ``reasons``
    optionally gives a per-node message (overrides ``reason``). ``unresolvable`` marks
    UnschedulableAndUnresolvable failures, the only ones preempt and reclaim honour.
    """

    plugin: str
    passed: BoolArray
    reason: str
    unresolvable: bool = True
    reasons: Sequence[str] | None = None

    def reason_at(self, index: int) -> str:
        """Return the failure message for node ``index``."""
        if self.reasons is not None:
            return self.reasons[index]
        return self.reason
