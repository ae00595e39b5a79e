"""Snapshot: the cluster at cycle start, a read-only value built by structural sharing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict, Unpack

from scheduler.model import HyperNode, Job, JobPhase, Node, Queue, Task, TaskStatus
from scheduler.policies import PodDisruptionBudget, PriorityClass, ResourceQuota
from scheduler.vgpu import ASSIGNED_IDS, decode_pod_devices

if TYPE_CHECKING:
    from scheduler.result import CycleResult

__all__ = ["Snapshot", "SnapshotExtras", "advance"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The scheduler's input: nodes, queues, PodGroups (jobs), pods (tasks), priority classes.

    Holds tuples of immutable objects, so building a new snapshot that changes a few objects
    shares every other one (no deep copies). Order of each tuple is irrelevant to decisions:
    the session sorts by name/uid.
    """

    nodes: tuple[Node, ...] = ()
    queues: tuple[Queue, ...] = ()
    jobs: tuple[Job, ...] = ()
    tasks: tuple[Task, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()
    #: Namespace ResourceQuotas (read by the resourcequota plugin).
    resource_quotas: tuple[ResourceQuota, ...] = ()
    #: The caller's clock at cycle start, seconds since the Unix epoch (None: no clock given).
    #: Only the sla plugin reads it (how long a PodGroup has waited); the core reads no clock.
    now: float | None = None
    #: PodDisruptionBudgets (read by the pdb plugin).
    pod_disruption_budgets: tuple[PodDisruptionBudget, ...] = ()
    #: HyperNodes (the network topology; read by the topology-aware allocate and gang actions).
    hyper_nodes: tuple[HyperNode, ...] = ()

    @classmethod
    def of(
        cls,
        nodes: Iterable[Node] = (),
        queues: Iterable[Queue] = (),
        jobs: Iterable[Job] = (),
        tasks: Iterable[Task] = (),
        priority_classes: Iterable[PriorityClass] = (),
        **extras: Unpack[SnapshotExtras],
    ) -> Snapshot:
        """Return a snapshot from any iterables."""
        return cls(
            tuple(nodes),
            tuple(queues),
            tuple(jobs),
            tuple(tasks),
            tuple(priority_classes),
            tuple(extras.get("resource_quotas", ())),
            extras.get("now"),
            tuple(extras.get("pod_disruption_budgets", ())),
            tuple(extras.get("hyper_nodes", ())),
        )


class SnapshotExtras(TypedDict, total=False):
    """The rarely given parts of :meth:`Snapshot.of` (keyword arguments; a missing one is empty, or no
    clock)."""

    now: float | None
    resource_quotas: Iterable[ResourceQuota]
    pod_disruption_budgets: Iterable[PodDisruptionBudget]
    hyper_nodes: Iterable[HyperNode]


def advance(snapshot: Snapshot, result: CycleResult) -> Snapshot:
    """Return the snapshot of the next cycle after ``result`` was applied by a perfect cluster.

    Bound pods become Running on their node, evicted pods are gone, Releasing pods finish
    leaving, PodGroup phases take their new values. Unchanged objects are shared.
    """
    binds: Mapping[str, str] = result.binds
    evicted = {e.task for e in result.evictions}
    tasks: list[Task] = []
    for t in snapshot.tasks:
        key = t.key
        if key in evicted or t.status == TaskStatus.RELEASING:
            continue
        node = binds.get(key)
        if node is not None:
            t = replace(t, status=TaskStatus.RUNNING, node_name=node, nominated_node="")
            notes = result.bind_annotations.get(key)
            if notes and "volcano.sh/gpu-index" in notes:
                t = replace(t, gpu_index=tuple(int(c) for c in notes["volcano.sh/gpu-index"].split(",")))
            if notes and ASSIGNED_IDS in notes and t.vgpu is not None:
                t = replace(t, vgpu=replace(t.vgpu, devices=decode_pod_devices(notes[ASSIGNED_IDS])))
        elif t.status in (TaskStatus.BOUND, TaskStatus.BINDING):
            t = replace(t, status=TaskStatus.RUNNING)
        elif key in result.pipelined and t.nominated_node != result.pipelined[key]:
            t = replace(t, nominated_node=result.pipelined[key])
        tasks.append(t)
    phases = result.podgroups
    jobs = tuple(replace(j, phase=JobPhase(phases[j.key])) if j.key in phases else j for j in snapshot.jobs)
    return replace(snapshot, tasks=tuple(tasks), jobs=jobs)
