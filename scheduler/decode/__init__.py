"""Kubernetes / Volcano manifests (Node, Pod, PodGroup, Queue, PriorityClass, ResourceQuota,
PodDisruptionBudget, HyperNode) → the scheduler's Snapshot.

One module per kind of object (``nodes``, ``pods`` and their ``placement``, ``podgroups``, ``queues``,
``policies``, ``hypernodes``), what they share (``common``: errors, field readers, times; ``selectors``;
``annotations``), the YAML reader (``documents``) and the assembly of the snapshot (``snapshot``). The
names below are the package's public face: import them from ``scheduler.decode``.
"""

from __future__ import annotations

from scheduler.decode.annotations import (
    GPU_INDEX,
    GROUP_ANNOTATION,
    HIERARCHY,
    HIERARCHY_WEIGHTS,
    JDB_MAX_UNAVAILABLE,
    JDB_MIN_AVAILABLE,
    NODE_USAGE,
    NODE_USAGE_TIME,
    NUMA_POLICY,
    PREEMPTABLE,
    REVOCABLE_ZONE,
    SCORING_TYPE,
    SCORING_WEIGHTS,
    TASK_AFFINITY,
    TASK_ANTI_AFFINITY,
    TASK_ORDER,
    TASK_PRIORITY,
    TASK_SPEC,
    VOLCANO_SCHEDULERS,
    flag,
)
from scheduler.decode.common import ManifestError, timestamp
from scheduler.decode.documents import load_manifests
from scheduler.decode.hypernodes import hyper_node
from scheduler.decode.nodes import gpu_ids
from scheduler.decode.placement import PodPlacement, pod_placement
from scheduler.decode.podgroups import network_topology_of, sla_waiting_time, sub_group_policies_of
from scheduler.decode.pods import POD_STATUS, cooldown_time
from scheduler.decode.snapshot import snapshot_from_manifests

__all__ = [
    "GPU_INDEX",
    "GROUP_ANNOTATION",
    "HIERARCHY",
    "HIERARCHY_WEIGHTS",
    "JDB_MAX_UNAVAILABLE",
    "JDB_MIN_AVAILABLE",
    "NODE_USAGE",
    "NODE_USAGE_TIME",
    "NUMA_POLICY",
    "POD_STATUS",
    "PREEMPTABLE",
    "REVOCABLE_ZONE",
    "SCORING_TYPE",
    "SCORING_WEIGHTS",
    "TASK_AFFINITY",
    "TASK_ANTI_AFFINITY",
    "TASK_ORDER",
    "TASK_PRIORITY",
    "TASK_SPEC",
    "VOLCANO_SCHEDULERS",
    "ManifestError",
    "PodPlacement",
    "cooldown_time",
    "flag",
    "gpu_ids",
    "hyper_node",
    "load_manifests",
    "network_topology_of",
    "pod_placement",
    "sla_waiting_time",
    "snapshot_from_manifests",
    "sub_group_policies_of",
    "timestamp",
]
