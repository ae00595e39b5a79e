"""The scheduler's input model: frozen, slotted value types for nodes, pods, PodGroups and queues."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from scheduler.vgpu import VgpuCard, VgpuPod

__all__ = [
    "EMPTY",
    "HyperNode",
    "HyperNodeMember",
    "Job",
    "JobPhase",
    "NetworkTopology",
    "Node",
    "NodeGroupAffinity",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NumaTopology",
    "PodAffinityTerm",
    "PreferredSchedulingTerm",
    "Queue",
    "QueueState",
    "Resource",
    "SubGroupPolicy",
    "Taint",
    "Task",
    "TaskStatus",
    "Toleration",
    "TopologySpreadConstraint",
    "WeightedPodAffinityTerm",
]

_NO_SCALARS: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource vector: cpu in millicores, memory in bytes, pod count, and scalar resources.

    Scalar resources (``nvidia.com/gpu``, ``ephemeral-storage``, ...) are whole units (bytes for
    byte-valued ones), keyed by their Kubernetes name. A missing scalar is zero. Instances are
    immutable and hashable; arithmetic returns new instances.
    """

    cpu: int = 0
    memory: int = 0
    pods: int = 0
    scalars: Mapping[str, int] = field(default_factory=lambda: _NO_SCALARS)

    def __hash__(self) -> int:
        return hash((self.cpu, self.memory, self.pods, tuple(sorted(self.scalars.items()))))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.cpu == other.cpu
            and self.memory == other.memory
            and self.pods == other.pods
            and {k: v for k, v in self.scalars.items() if v} == {k: v for k, v in other.scalars.items() if v}
        )

    @classmethod
    def from_dict(cls, values: Mapping[str, int]) -> Resource:
        """Return a Resource from ``{"cpu": millicores, "memory": bytes, "pods": n, name: n}``."""
        scalars = {k: int(v) for k, v in values.items() if k not in ("cpu", "memory", "pods")}
        return cls(
            int(values.get("cpu", 0)),
            int(values.get("memory", 0)),
            int(values.get("pods", 0)),
            MappingProxyType(scalars) if scalars else _NO_SCALARS,
        )

    def to_dict(self) -> dict[str, int]:
        """Return the non-zero dimensions as a plain dict (scheduler units)."""
        out: dict[str, int] = {}
        if self.cpu:
            out["cpu"] = self.cpu
        if self.memory:
            out["memory"] = self.memory
        if self.pods:
            out["pods"] = self.pods
        for k in sorted(self.scalars):
            if self.scalars[k]:
                out[k] = self.scalars[k]
        return out

    def get(self, name: str) -> int:
        """Return the amount of dimension ``name`` (0 when absent)."""
        if name == "cpu":
            return self.cpu
        if name == "memory":
            return self.memory
        if name == "pods":
            return self.pods
        return self.scalars.get(name, 0)

    def names(self) -> tuple[str, ...]:
        """Return the names of the non-zero dimensions (cpu, memory, pods, then scalars sorted)."""
        return tuple(self.to_dict())

    def __add__(self, other: Resource) -> Resource:
        if not other.scalars and not self.scalars:
            return Resource(self.cpu + other.cpu, self.memory + other.memory, self.pods + other.pods)
        scalars = dict(self.scalars)
        for k, v in other.scalars.items():
            scalars[k] = scalars.get(k, 0) + v
        return Resource(
            self.cpu + other.cpu,
            self.memory + other.memory,
            self.pods + other.pods,
            MappingProxyType(scalars),
        )

    def __sub__(self, other: Resource) -> Resource:
        if not other.scalars and not self.scalars:
            return Resource(self.cpu - other.cpu, self.memory - other.memory, self.pods - other.pods)
        scalars = dict(self.scalars)
        for k, v in other.scalars.items():
            scalars[k] = scalars.get(k, 0) - v
        return Resource(
            self.cpu - other.cpu,
            self.memory - other.memory,
            self.pods - other.pods,
            MappingProxyType(scalars),
        )

    def scale(self, factor: int) -> Resource:
        """Return this vector multiplied by an integer ``factor``."""
        return Resource(
            self.cpu * factor,
            self.memory * factor,
            self.pods * factor,
            MappingProxyType({k: v * factor for k, v in self.scalars.items()}),
        )

    def is_empty(self) -> bool:
        """Return whether every dimension except ``pods`` is zero (a BestEffort request)."""
        return self.cpu <= 0 and self.memory <= 0 and all(v <= 0 for v in self.scalars.values())


EMPTY = Resource()


class TaskStatus(StrEnum):
    """Scheduler-side status of a pod (Volcano's TaskStatus)."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class JobPhase(StrEnum):
    """PodGroup phase."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class QueueState(StrEnum):
    """Queue ``status.state``."""

    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint; ``effect`` is NoSchedule, PreferNoSchedule or NoExecute."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration; ``operator`` is Equal (default) or Exists; empty effect matches all."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Return whether this toleration tolerates ``taint`` (Kubernetes rules)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if not self.key and self.operator != "Exists":
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    """One ``matchExpressions``/``matchFields`` entry: operator In, NotIn, Exists, DoesNotExist,
    Gt or Lt."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Return whether ``labels`` satisfy this requirement."""
        op = self.operator
        present = self.key in labels
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt") and present and len(self.values) == 1:
            try:
                actual, bound = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return actual > bound if op == "Gt" else actual < bound
        return False


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A node selector term: all expressions (on labels) and fields (``metadata.name``) must match."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, node: Node) -> bool:
        """Return whether ``node`` satisfies this term (an empty term matches nothing)."""
        if not self.match_expressions and not self.match_fields:
            return False
        if not all(req.matches(node.labels) for req in self.match_expressions):
            return False
        fields = {"metadata.name": node.name}
        return all(req.matches(fields) for req in self.match_fields)


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """An inter-pod (anti-)affinity term: pods matching the label selector (in
    ``namespaces``, default the pod's own) within the same ``topology_key`` domain.

    ``match_labels`` None means a nil selector (matches no pod); an empty one matches every pod.
    """

    topology_key: str
    match_labels: tuple[tuple[str, str], ...] | None = ()
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    namespaces: tuple[str, ...] = ()

    def selects(self, pod: Task, owner_namespace: str) -> bool:
        """Return whether ``pod`` is selected by this term of a pod in ``owner_namespace``."""
        if self.match_labels is None:
            return False
        if pod.namespace not in (self.namespaces or (owner_namespace,)):
            return False
        labels = pod.labels
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.match_expressions
        )


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """A preferred inter-pod (anti-)affinity term with its weight (1-100), scored by nodeorder's
    ``podaffinity.weight``."""

    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """A pod topology spread constraint: pods matching the selector (in the pod's namespace)
    should differ by at most ``max_skew`` between the domains of ``topology_key``.
    ``when_unsatisfiable`` is ``DoNotSchedule`` (a filter) or ``ScheduleAnyway`` (a score)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str = "DoNotSchedule"
    match_labels: tuple[tuple[str, str], ...] | None = ()
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()

    def selects(self, pod: Task, namespace: str) -> bool:
        """Return whether ``pod`` counts for a constraint of a pod in ``namespace``."""
        if self.match_labels is None or pod.namespace != namespace:
            return False
        labels = pod.labels
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.match_expressions
        )


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    """A weighted preferred node affinity term (scored by nodeorder's ``nodeaffinity.weight``)."""

    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NumaTopology:
    """A node's NUMA layout and kubelet policies (Volcano's ``NumatopoInfo``).

    ``cpus`` holds ``(cpu id, NUMA node, socket, core)`` per logical CPU; ``allocatable`` the CPU ids free
    for exclusive use as Volcano's resource exporter reports them (None: not reported, the plugin takes the
    CPUs of the Guaranteed pods on the node off all CPUs); ``reserved_cpu`` the kubelet's reserved cpu in
    millicores (``ResReserved``)."""

    cpu_manager_policy: str = "static"
    topology_policy: str = "none"
    cpus: tuple[tuple[int, int, int, int], ...] = ()
    allocatable: tuple[int, ...] | None = None
    reserved_cpu: int = 0


@dataclass(frozen=True, slots=True)
class Node:
    """A cluster node as the scheduler sees it."""

    name: str
    allocatable: Resource
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    #: Measured utilisation in percent, per averaging period (``"5m"``) and resource (``cpu``,
    #: ``memory``): Volcano's ``NodeInfo.ResourceUsage``, read by the rescheduling plugin.
    usage: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: When ``usage`` was measured (seconds since the epoch; None: unknown, Go's zero time): the usage
    #: plugin ignores metrics older than five minutes.
    usage_time: float | None = None
    #: GPU cards out of service (the ``volcano.sh/gpu-unhealthy-ids`` annotation), read by deviceshare.
    unhealthy_gpus: tuple[int, ...] = ()
    #: The node's NUMA topology (Volcano's Numatopology), None when unknown; read by numa-aware.
    numa: NumaTopology | None = None
    #: The node's vGPU cards (its ``volcano.sh/node-vgpu-register`` registration), read by deviceshare.
    vgpu: tuple[VgpuCard, ...] = ()


@dataclass(frozen=True, slots=True)
class Task:
    """A pod (Volcano's TaskInfo).

    ``job`` is the PodGroup key ``namespace/name`` (empty when the pod has no group).
    ``priority`` None means: resolve ``priority_class_name`` (then the global default class,
    then 0) at session open. ``node_name`` is set for pods placed on a node. ``creation`` orders
    pods created at the same time; ``uid`` breaks remaining ties.
    """

    uid: str
    name: str
    namespace: str = "default"
    job: str = ""
    requests: Resource = EMPTY
    status: TaskStatus = TaskStatus.PENDING
    node_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    preemptable: bool = True
    role: str = ""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_affinity: tuple[NodeSelectorTerm, ...] = ()
    preferred_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    scheduling_gated: bool = False
    nominated_node: str = ""
    creation: int = 0
    #: Pod labels (inter-pod affinity and anti-affinity select pods by them).
    labels: Mapping[str, str] = field(default_factory=dict)
    #: ``spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution``.
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    #: ``spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution``.
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    #: ``spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution``.
    preferred_pod_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    #: ``spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution``.
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    #: ``spec.topologySpreadConstraints``.
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    #: ``volcano.sh/cooldown-time`` (label, else annotation) in seconds: the cdp plugin protects the pod
    #: from eviction that long after it was scheduled (None: not set or invalid).
    cooldown: float | None = None
    #: When the pod was scheduled (its ``PodScheduled`` condition's ``lastTransitionTime``, seconds since
    #: the epoch; 0: unknown).
    scheduled_at: float = 0.0
    #: The pod's ``volcano.sh/revocable-zone`` annotation ("" none; ``*``: any zone), read by tdm.
    revocable_zone: str = ""
    #: The pod's ``volcano.sh/resource-strategy-scoring-type`` and ``volcano.sh/resource-strategy-weight``
    #: annotations ("" unset), read by resource-strategy-fit.
    scoring_type: str = ""
    scoring_weights: str = ""
    #: The GPU cards the pod holds (its ``volcano.sh/gpu-index`` annotation, written when deviceshare
    #: placed it), read by deviceshare.
    gpu_index: tuple[int, ...] = ()
    #: The pod's ``volcano.sh/numa-topology-policy`` annotation ("" unset), read by numa-aware.
    numa_policy: str = ""
    #: Per container, its cpu request in millicores, when the pod's QoS class is Guaranteed (else empty):
    #: numa-aware pins the CPUs of such pods.
    guaranteed_cpus: tuple[int, ...] = ()
    #: The pod's resource limits (``scheduler.hardware.pod_limits``; empty: none), read by usage's estimator.
    limits: Resource = EMPTY
    #: What the pod asks of vGPU cards and which it holds (None: neither), read by deviceshare.
    vgpu: VgpuPod | None = None

    @property
    def key(self) -> str:
        """Return ``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Job:
    """A PodGroup (Volcano's JobInfo without its tasks; tasks refer to it by ``key``).

    ``min_resources`` None means "no minResources" (always enqueueable). ``priority`` None means:
    resolve ``priority_class_name`` at session open. ``creation`` orders PodGroups; ``created_at``
    is the wall-clock creation time the sla plugin compares with :attr:`Snapshot.now`.
    """

    uid: str
    name: str
    namespace: str = "default"
    queue: str = "default"
    min_member: int = 1
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    min_resources: Resource | None = None
    priority: int | None = None
    priority_class_name: str = ""
    phase: JobPhase = JobPhase.PENDING
    #: The PodGroup's ``volcano.sh/preemptable`` annotation (else label); None when neither is set
    #: (Volcano's job-level flag is then false, but the gang actions may evict the job).
    preemptable: bool | None = None
    creation: int = 0
    #: ``metadata.creationTimestamp`` in seconds since the Unix epoch (0: unknown, i.e. long ago).
    created_at: float = 0.0
    #: The ``sla-waiting-time`` annotation in seconds (None: not set); used by the sla plugin.
    sla_waiting_time: float | None = None
    #: ``spec.networkTopology`` (None: the job may sit anywhere).
    network_topology: NetworkTopology | None = None
    #: ``spec.subGroupPolicy``: how the job's pods form sub-groups (Volcano's sub-jobs).
    sub_group_policies: tuple[SubGroupPolicy, ...] = ()
    #: The PodGroup's disruption budget (annotations ``volcano.sh/jdb-min-available`` and
    #: ``volcano.sh/jdb-max-unavailable``: a count or a percentage; "" unset), read by tdm.
    jdb_min_available: str = ""
    jdb_max_unavailable: str = ""
    #: The PodGroup's ``volcano.sh/task-topology-affinity``, ``-anti-affinity`` and ``-task-order``
    #: annotations (None: absent), read by task-topology.
    task_affinity: str | None = None
    task_anti_affinity: str | None = None
    task_order: str | None = None
    #: The pods the job controller creates once the PodGroup is admitted, as (template pod, replicas) per task
    #: of a Volcano Job (Volcano creates a job's pods only after admission); empty when unknown. Read only by
    #: the enqueuegate plugin, for a PodGroup that has no pods yet. Not a PodGroup field: the product passes it.
    pod_templates: tuple[tuple[Task, int], ...] = ()

    @property
    def key(self) -> str:
        """Return ``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NetworkTopology:
    """A PodGroup's ``spec.networkTopology``: ``mode`` ``hard`` (the gang must fit inside one
    HyperNode of tier at most ``highest_tier_allowed``) or ``soft`` (it prefers the lowest tier
    it fits in); ``highest_tier_name`` names the tier by a HyperNode ``tierName`` instead."""

    mode: str = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""


@dataclass(frozen=True, slots=True)
class SubGroupPolicy:
    """A PodGroup ``spec.subGroupPolicy`` entry: the job's pods its ``selector`` (None: every pod) selects are
    grouped by the values of their ``match_label_keys`` labels into sub-groups of ``size`` (``subGroupSize``, gang
    of each; None: 1), at least ``min_groups`` of which must be placed (``minSubGroups``; None: 0), each inside
    its own ``network_topology``."""

    name: str = ""
    size: int | None = None
    min_groups: int | None = None
    match_label_keys: tuple[str, ...] = ()
    #: ``labelSelector``: None when absent; its ``matchLabels`` and ``matchExpressions``.
    selector: tuple[tuple[str, str], ...] | None = None
    selector_expressions: tuple[NodeSelectorRequirement, ...] = ()
    network_topology: NetworkTopology | None = None

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether the policy's label selector matches ``labels`` (no selector: yes)."""
        if self.selector is None:
            return True
        return all(labels.get(k) == v for k, v in self.selector) and all(
            r.matches(labels) for r in self.selector_expressions
        )


@dataclass(frozen=True, slots=True)
class HyperNodeMember:
    """One ``spec.members`` entry of a HyperNode: ``type`` ``Node`` or ``HyperNode``, selected by
    ``exact`` name, a ``regex`` over node names, or node labels (``match_labels`` and
    ``match_expressions``, Node members only)."""

    type: str
    exact: str = ""
    regex: str = ""
    match_labels: tuple[tuple[str, str], ...] | None = None
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class HyperNode:
    """A ``topology.volcano.sh/v1alpha1`` HyperNode: a network domain (a rack, a spine block) of
    ``tier`` (1 is the closest), whose members are nodes or lower HyperNodes."""

    name: str
    tier: int
    members: tuple[HyperNodeMember, ...] = ()
    tier_name: str = ""


@dataclass(frozen=True, slots=True)
class Queue:
    """A Volcano queue. ``capability`` None means unlimited; ``parent`` "" means root.

    ``hierarchy``/``hierarchy_weights`` are the ``volcano.sh/hierarchy`` and
    ``volcano.sh/hierarchy-weights`` annotations used by hierarchical drf.
    """

    name: str
    weight: int = 1
    capability: Resource | None = None
    guarantee: Resource | None = None
    deserved: Resource | None = None
    parent: str = ""
    reclaimable: bool = True
    state: QueueState = QueueState.OPEN
    priority: int = 0
    hierarchy: str = ""
    hierarchy_weights: str = ""
    creation: int = 0
    uid: str = ""
    #: ``spec.affinity`` (nodegroup plugin): None when the queue sets no affinity.
    node_group_affinity: NodeGroupAffinity | None = None
    #: The ``volcano.sh/nodegroup-resource-limits`` annotation, verbatim (nodegroup plugin: JSON
    #: ``{group: {resource: quantity}}``; an invalid value refuses every node to the queue's pods).
    node_group_resource_limits: str = ""


@dataclass(frozen=True, slots=True)
class NodeGroupAffinity:
    """A queue's ``spec.affinity``: node groups (the ``volcano.sh/nodegroup-name`` node label)
    required / preferred by ``nodeGroupAffinity`` and ``nodeGroupAntiAffinity``."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """No group named at all."""
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)
