"""Plain builders for tests and benchmarks, and a Scenario runner for parametrized tables."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, TypedDict, TypeVar, Unpack

from scheduler.config import DEFAULT_CONFIG, parse_config
from scheduler.config_types import SchedulerConfig
from scheduler.cycle import run_cycle
from scheduler.model import (
    Job,
    JobPhase,
    Node,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Queue,
    QueueState,
    Resource,
    Taint,
    Task,
    TaskStatus,
    Toleration,
)
from scheduler.policies import PriorityClass
from scheduler.quantity import parse_resource
from scheduler.result import CycleResult
from scheduler.snapshot import Snapshot, advance

__all__ = [
    "JobOptions",
    "JobSpec",
    "QueueOptions",
    "Scenario",
    "TaskOptions",
    "make_job",
    "make_node",
    "make_queue",
    "make_snapshot",
    "make_task",
    "res",
]

Quantity = str | int | float
_O = TypeVar("_O")


def res(cpu: Quantity = 0, memory: Quantity = 0, pods: int = 0, **scalars: Quantity) -> Resource:
    """Return a Resource from Kubernetes quantities; scalar names use ``_`` for ``/`` and ``.``
    is kept, e.g. ``res("2", "4Gi", nvidia_com_gpu=1)`` or pass ``**{"nvidia.com/gpu": 1}``."""
    named = {k.replace("nvidia_com_gpu", "nvidia.com/gpu"): v for k, v in scalars.items()}
    return Resource.from_dict(
        {
            "cpu": parse_resource("cpu", cpu),
            "memory": parse_resource("memory", memory),
            "pods": pods,
            **{k: parse_resource(k, v) for k, v in named.items()},
        }
    )


def make_node(
    name: str,
    cpu: Quantity = "8",
    memory: Quantity = "16Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Taint] = (),
    unschedulable: bool = False,
    **scalars: Quantity,
) -> Node:
    """Return a node with the given allocatable resources (110 pods by default)."""
    return Node(name, res(cpu, memory, pods, **scalars), dict(labels or {}), tuple(taints), unschedulable)


class QueueOptions(TypedDict, total=False):
    """The rarely set fields of :func:`make_queue` (keyword arguments; a missing one is the Queue's
    default)."""

    reclaimable: bool
    state: QueueState
    priority: int
    hierarchy: str
    hierarchy_weights: str


def make_queue(
    name: str,
    weight: int = 1,
    capability: Mapping[str, Quantity] | None = None,
    guarantee: Mapping[str, Quantity] | None = None,
    deserved: Mapping[str, Quantity] | None = None,
    parent: str = "",
    **options: Unpack[QueueOptions],
) -> Queue:
    """Return a queue; resource maps use Kubernetes quantities (``{"cpu": "4"}``)."""

    def conv(m: Mapping[str, Quantity] | None) -> Resource | None:
        if m is None:
            return None
        return Resource.from_dict({k: parse_resource(k, v) for k, v in m.items()})

    return Queue(
        name,
        weight,
        conv(capability),
        conv(guarantee),
        conv(deserved),
        parent,
        options.get("reclaimable", True),
        options.get("state", QueueState.OPEN),
        options.get("priority", 0),
        options.get("hierarchy", ""),
        options.get("hierarchy_weights", ""),
    )


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """The rarely set fields of :func:`make_task`, passed to it as keyword arguments (every other
    keyword argument is a scalar resource request)."""

    priority: int | None = None
    role: str = ""
    preemptable: bool = True
    node_selector: Mapping[str, str] | None = None
    required_affinity: Sequence[NodeSelectorTerm] = ()
    preferred_affinity: Sequence[PreferredSchedulingTerm] = ()
    tolerations: Sequence[Toleration] = ()
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    creation: int = 0


_TASK_OPTIONS = frozenset(f.name for f in dataclasses.fields(TaskOptions))


def make_task(
    name: str,
    job: str = "",
    cpu: Quantity = "1",
    memory: Quantity = "1Gi",
    namespace: str = "default",
    status: TaskStatus = TaskStatus.PENDING,
    node: str = "",
    **fields: Any,
) -> Task:
    """Return a pod requesting ``cpu``/``memory`` (+ scalars) and one pod slot.

    ``fields`` are the :class:`TaskOptions` (``priority=``, ``role=``, ``tolerations=``, ...) and the
    scalar resources requested (``nvidia_com_gpu=1``, ``**{"example.com/fpga": 2}``)."""
    options, scalars = _split_fields(TaskOptions, _TASK_OPTIONS, fields)
    return Task(
        uid=f"{namespace}/{name}",
        name=name,
        namespace=namespace,
        job=job,
        requests=res(cpu, memory, 1, **scalars),
        status=status,
        node_name=node,
        priority=options.priority,
        priority_class_name=options.priority_class_name,
        preemption_policy=options.preemption_policy,
        preemptable=options.preemptable,
        role=options.role,
        node_selector=dict(options.node_selector or {}),
        required_affinity=tuple(options.required_affinity),
        preferred_affinity=tuple(options.preferred_affinity),
        tolerations=tuple(options.tolerations),
        creation=options.creation,
    )


def _split_fields(
    kind: Callable[..., _O], names: frozenset[str], fields: Mapping[str, Any]
) -> tuple[_O, dict[str, Any]]:
    """The options ``kind`` made of those of ``fields`` it names (``names``), and the other fields."""
    options = kind(**{k: v for k, v in fields.items() if k in names})
    return options, {k: v for k, v in fields.items() if k not in names}


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A PodGroup with its pods, as :func:`make_job` returns it."""

    job: Job
    tasks: tuple[Task, ...]


@dataclass(frozen=True, slots=True)
class JobOptions:
    """The rarely set fields of :func:`make_job`, passed to it as keyword arguments (every other
    keyword argument goes to :func:`make_task` for each pod: a :class:`TaskOptions` or a scalar
    resource)."""

    priority: int | None = None
    min_resources: Mapping[str, Quantity] | str | None = None
    min_task_member: Mapping[str, int] | None = None
    tasks: Sequence[Task] | None = None
    running_on: Sequence[str] = ()
    role: str = ""
    preemptable: bool = True
    creation: int = 0
    priority_class_name: str = ""


_JOB_OPTIONS = frozenset(f.name for f in dataclasses.fields(JobOptions))


def make_job(
    name: str,
    queue: str = "default",
    min_available: int | None = None,
    replicas: int = 1,
    cpu: Quantity = "1",
    memory: Quantity = "1Gi",
    namespace: str = "default",
    phase: JobPhase = JobPhase.INQUEUE,
    **fields: Any,
) -> JobSpec:
    """Return a PodGroup ``name`` with ``replicas`` identical pods ``<name>-<i>``.

    ``min_available`` defaults to ``replicas``; ``running_on`` lists nodes of the first pods,
    which are then Running there; ``min_resources="auto"`` sets minResources to the sum of
    the first ``min_available`` pods' requests. Pass ``tasks`` to give the pods explicitly
    (their ``job`` is set to this PodGroup). ``fields``: the :class:`JobOptions`, and what
    :func:`make_task` takes for each pod.
    """
    options, task_fields = _split_fields(JobOptions, _JOB_OPTIONS, fields)
    key = f"{namespace}/{name}"
    if options.tasks is None:
        built = []
        for i in range(replicas):
            on = options.running_on[i] if i < len(options.running_on) else ""
            built.append(
                make_task(
                    f"{name}-{i}",
                    key,
                    cpu,
                    memory,
                    namespace,
                    TaskStatus.RUNNING if on else TaskStatus.PENDING,
                    on,
                    priority=options.priority,
                    role=options.role,
                    preemptable=options.preemptable,
                    creation=options.creation,
                    **task_fields,
                )
            )
        pods = tuple(built)
    else:
        pods = tuple(replace(t, job=key) for t in options.tasks)
    minimum = len(pods) if min_available is None else min_available
    job = Job(
        uid=key,
        name=name,
        namespace=namespace,
        queue=queue,
        min_member=minimum,
        min_task_member=MappingProxyType(dict(options.min_task_member or {})),
        min_resources=_min_resources(options.min_resources, pods[:minimum]),
        priority=options.priority,
        priority_class_name=options.priority_class_name,
        phase=phase,
        creation=options.creation,
    )
    return JobSpec(job, pods)


def _min_resources(value: Mapping[str, Quantity] | str | None, first: Sequence[Task]) -> Resource | None:
    """A PodGroup's minResources: ``"auto"``, the sum of the ``first`` pods' requests; a map of
    Kubernetes quantities; else none."""
    if value == "auto":
        total = Resource()
        for t in first:
            total = total + t.requests
        return total
    if isinstance(value, Mapping):
        return Resource.from_dict({k: parse_resource(k, v) for k, v in value.items()})
    return None


def make_snapshot(
    nodes: Iterable[Node] = (),
    jobs: Iterable[JobSpec] = (),
    queues: Iterable[Queue] | None = None,
    tasks: Iterable[Task] = (),
    priority_classes: Iterable[PriorityClass] = (),
) -> Snapshot:
    """Return a snapshot; without ``queues`` a single ``default`` queue is created."""
    specs = list(jobs)
    return Snapshot.of(
        nodes=nodes,
        queues=[make_queue("default")] if queues is None else queues,
        jobs=[s.job for s in specs],
        tasks=[*(t for s in specs for t in s.tasks), *tasks],
        priority_classes=priority_classes,
    )


@dataclass(frozen=True)
class Scenario:
    """A table row: a cluster, a config and the expected outcome of one or more cycles.

    Expectations left as None are not checked. ``binds``/``pipelined`` map ``ns/pod`` → node
    (``"*"`` accepts any node); ``bound`` is a set of pods that must be bound on any node;
    ``evictions`` a set of pods; ``phases`` PodGroup → phase; ``reasons`` PodGroup → reason
    kind. With ``cycles`` > 1 binds and evictions accumulate and phases are the last ones.
    """

    id: str
    nodes: Sequence[Node] = ()
    jobs: Sequence[JobSpec] = ()
    queues: Sequence[Queue] | None = None
    tasks: Sequence[Task] = ()
    priority_classes: Sequence[PriorityClass] = ()
    config: str | SchedulerConfig = DEFAULT_CONFIG
    cycles: int = 1
    binds: Mapping[str, str] | None = None
    bound: frozenset[str] | None = None
    bind_count: int | None = None
    evictions: frozenset[str] | None = None
    pipelined: Mapping[str, str] | None = None
    phases: Mapping[str, str] | None = None
    reasons: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def snapshot(self) -> Snapshot:
        """Return the scenario's initial snapshot."""
        return make_snapshot(self.nodes, self.jobs, self.queues, self.tasks, self.priority_classes)

    def run(self) -> list[CycleResult]:
        """Run the cycles; return every cycle's result."""
        cfg = self.config if isinstance(self.config, SchedulerConfig) else parse_config(self.config)
        snap = self.snapshot()
        results = []
        for _ in range(self.cycles):
            result = run_cycle(snap, cfg)
            results.append(result)
            snap = advance(snap, result)
        return results

    def check(self) -> list[CycleResult]:
        """Run and assert every expectation; return the results for further checks."""
        results = self.run()
        binds: dict[str, str] = {}
        evicted: set[str] = set()
        phases: dict[str, str] = {}
        for r in results:
            binds.update(r.binds)
            evicted.update(e.task for e in r.evictions)
            phases.update(r.podgroups)
        last = results[-1]
        if self.binds is not None:
            got = {k: (v if self.binds.get(k) != "*" else "*") for k, v in binds.items()}
            assert got == dict(self.binds), f"binds: {binds}"
        if self.bound is not None:
            assert set(binds) == set(self.bound), f"bound: {sorted(binds)}"
        if self.bind_count is not None:
            assert len(binds) == self.bind_count, f"bind count {len(binds)}: {binds}"
        if self.evictions is not None:
            assert evicted == set(self.evictions), f"evictions: {sorted(evicted)}"
        if self.pipelined is not None:
            got_p = {k: (v if self.pipelined.get(k) != "*" else "*") for k, v in last.pipelined.items()}
            assert got_p == dict(self.pipelined), f"pipelined: {last.pipelined}"
        if self.phases is not None:
            for pg, phase in self.phases.items():
                assert phases.get(pg) == phase, f"phase of {pg}: {phases.get(pg)} ({phases})"
        if self.reasons is not None:
            got_r = {k: str(v.kind) for k, v in last.unschedulable.items()}
            assert got_r == dict(self.reasons), f"reasons: { {k: v.message for k, v in last.unschedulable.items()} }"
        return results
