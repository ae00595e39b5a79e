"""The annotation and label keys Volcano reads from objects, and the reading of its boolean flags."""

from __future__ import annotations

from collections.abc import Mapping

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
ALT_GROUP_ANNOTATION = "scheduling.volcano.sh/group-name"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
PREEMPTABLE = "volcano.sh/preemptable"
TASK_SPEC = "volcano.sh/task-spec"
TASK_PRIORITY = "volcano.sh/task-priority"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
NODE_USAGE = "volcanoweb.io/node-usage"
NODE_USAGE_TIME = "volcanoweb.io/node-usage-time"
GPU_INDEX = "volcano.sh/gpu-index"
GPU_UNHEALTHY = "volcano.sh/gpu-unhealthy-ids"
NUMA_POLICY = "volcano.sh/numa-topology-policy"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
SCORING_TYPE = "volcano.sh/resource-strategy-scoring-type"
SCORING_WEIGHTS = "volcano.sh/resource-strategy-weight"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
TASK_AFFINITY = "volcano.sh/task-topology-affinity"
TASK_ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
VOLCANO_SCHEDULERS = frozenset({"volcano"})
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"


def flag(value: object) -> bool | None:
    """Return a ``volcano.sh/preemptable``-style flag: None when unset, else whether it reads as true."""
    if value is None:
        return None
    return str(value).strip().lower() in ("true", "1", "t")


def preemptable_flag(labels: Mapping[str, str], annotations: Mapping[str, str]) -> bool | None:
    """An object's ``volcano.sh/preemptable`` annotation, else its label (None: neither set)."""
    pre = flag(annotations.get(PREEMPTABLE))
    if pre is None:
        pre = flag(labels.get(PREEMPTABLE))
    return pre
