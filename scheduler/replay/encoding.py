"""Snapshot → JSON data, object by object (fields at their default omitted), and :class:`SnapshotEncoder`,
which keeps each object's text between calls so that only new or changed objects are encoded again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.model import (
    HyperNode,
    Job,
    NetworkTopology,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    Queue,
    Resource,
    SubGroupPolicy,
    Task,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from scheduler.policies import PodDisruptionBudget, PriorityClass, ResourceQuota
from scheduler.replay.format import DEFAULT_JOB, DEFAULT_QUEUE, DEFAULT_TASK, dumps
from scheduler.snapshot import Snapshot
from scheduler.vgpu import VgpuPod


def _res(r: Resource | None) -> dict[str, int] | None:
    if r is None:
        return None
    out: dict[str, int] = {"cpu": r.cpu, "memory": r.memory, "pods": r.pods}
    for k in sorted(r.scalars):
        out[k] = r.scalars[k]
    return out


def _req(r: NodeSelectorRequirement) -> list[Any]:
    return [r.key, r.operator, list(r.values)]


def _term(t: NodeSelectorTerm) -> dict[str, Any]:
    return {"e": [_req(r) for r in t.match_expressions], "f": [_req(r) for r in t.match_fields]}


def _pairs(labels: tuple[tuple[str, str], ...] | None) -> list[list[str]] | None:
    # None (a nil selector, matching nothing) and () (an empty one, matching everything) differ.
    return None if labels is None else [[k, v] for k, v in labels]


def _anti(a: PodAffinityTerm) -> list[Any]:
    return [a.topology_key, _pairs(a.match_labels), [_req(r) for r in a.match_expressions], list(a.namespaces)]


def _weighted(w: WeightedPodAffinityTerm) -> list[Any]:
    return [w.weight, _anti(w.term)]


def _spread(c: TopologySpreadConstraint) -> list[Any]:
    return [
        c.max_skew,
        c.topology_key,
        c.when_unsatisfiable,
        _pairs(c.match_labels),
        [_req(r) for r in c.match_expressions],
    ]


def encode_node(n: Node) -> dict[str, Any]:
    """Return a node as JSON data."""
    out: dict[str, Any] = {"name": n.name, "allocatable": _res(n.allocatable)}
    if n.labels:
        out["labels"] = dict(n.labels)
    if n.taints:
        out["taints"] = [[t.key, t.value, t.effect] for t in n.taints]
    if n.unschedulable:
        out["unschedulable"] = True
    if n.usage:
        out["usage"] = {p: dict(v) for p, v in n.usage.items()}
    if n.usage_time is not None:
        out["usage_time"] = n.usage_time
    if n.unhealthy_gpus:
        out["unhealthy_gpus"] = list(n.unhealthy_gpus)
    if n.numa is not None:
        m = n.numa
        out["numa"] = {
            "cpu_manager_policy": m.cpu_manager_policy,
            "topology_policy": m.topology_policy,
            "cpus": [list(c) for c in m.cpus],
            "allocatable": None if m.allocatable is None else list(m.allocatable),
            "reserved_cpu": m.reserved_cpu,
        }
    if n.vgpu:
        out["vgpu"] = [[c.index, c.uuid, c.number, c.memory, c.type, c.health] for c in n.vgpu]
    return out


def _vgpu_pod(v: VgpuPod) -> dict[str, Any]:
    out: dict[str, Any] = {
        "requests": [[r.number, r.memory, r.percentage, r.cores] for r in v.requests],
        "devices": [[[u.uuid, u.type, u.memory, u.cores] for u in c] for c in v.devices],
    }
    for name in ("mode", "use_types", "nouse_types"):
        if getattr(v, name) is not None:
            out[name] = getattr(v, name)
    for name in ("use_uuids", "nouse_uuids", "group"):
        if getattr(v, name):
            out[name] = getattr(v, name)
    if v.spread:
        out["spread"] = True
    return out


def encode_task(t: Task) -> dict[str, Any]:
    """Return a pod as JSON data (fields at their default omitted)."""
    out: dict[str, Any] = {"uid": t.uid, "name": t.name}
    _encode_task_basics(t, out)
    _encode_task_node_placement(t, out)
    _encode_task_state(t, out)
    _encode_task_pod_placement(t, out)
    _encode_task_plugin_fields(t, out)
    return out


def _encode_task_basics(t: Task, out: dict[str, Any]) -> None:
    """Add the pod's names, requests, status, priority, preemptability and node selector to ``out``."""
    d = DEFAULT_TASK
    for name in ("namespace", "job", "node_name", "priority_class_name", "preemption_policy", "role"):
        value = getattr(t, name)
        if value != getattr(d, name):
            out[name] = value
    if t.requests.cpu or t.requests.memory or t.requests.pods or t.requests.scalars:
        out["requests"] = _res(t.requests)
    if t.status != d.status:
        out["status"] = str(t.status)
    if t.priority is not None:
        out["priority"] = t.priority
    if t.preemptable is not True:
        out["preemptable"] = t.preemptable
    if t.node_selector:
        out["node_selector"] = dict(t.node_selector)


def _encode_task_node_placement(t: Task, out: dict[str, Any]) -> None:
    """Add the pod's node affinity and tolerations to ``out``."""
    if t.required_affinity:
        out["required_affinity"] = [_term(x) for x in t.required_affinity]
    if t.preferred_affinity:
        out["preferred_affinity"] = [[p.weight, _term(p.term)] for p in t.preferred_affinity]
    if t.tolerations:
        out["tolerations"] = [[x.key, x.operator, x.value, x.effect] for x in t.tolerations]


def _encode_task_state(t: Task, out: dict[str, Any]) -> None:
    """Add the pod's scheduling gate, nominated node, creation order and labels to ``out``."""
    if t.scheduling_gated:
        out["scheduling_gated"] = True
    if t.nominated_node:
        out["nominated_node"] = t.nominated_node
    if t.creation:
        out["creation"] = t.creation
    if t.labels:
        out["labels"] = dict(t.labels)


def _encode_task_pod_placement(t: Task, out: dict[str, Any]) -> None:
    """Add the pod's inter-pod (anti-)affinity and topology spread constraints to ``out``."""
    if t.anti_affinity:
        out["anti_affinity"] = [_anti(a) for a in t.anti_affinity]
    if t.pod_affinity:
        out["pod_affinity"] = [_anti(a) for a in t.pod_affinity]
    if t.preferred_pod_affinity:
        out["preferred_pod_affinity"] = [_weighted(w) for w in t.preferred_pod_affinity]
    if t.preferred_anti_affinity:
        out["preferred_anti_affinity"] = [_weighted(w) for w in t.preferred_anti_affinity]
    if t.topology_spread:
        out["topology_spread"] = [_spread(c) for c in t.topology_spread]


def _encode_task_plugin_fields(t: Task, out: dict[str, Any]) -> None:
    """Add what single plugins read (cooldown, scheduled time, revocable zone, resource strategy, GPUs,
    NUMA, limits, vGPUs) to ``out``."""
    if t.cooldown is not None:
        out["cooldown"] = t.cooldown
    if t.scheduled_at:
        out["scheduled_at"] = t.scheduled_at
    if t.revocable_zone:
        out["revocable_zone"] = t.revocable_zone
    if t.scoring_type:
        out["scoring_type"] = t.scoring_type
    if t.scoring_weights:
        out["scoring_weights"] = t.scoring_weights
    if t.gpu_index:
        out["gpu_index"] = list(t.gpu_index)
    if t.numa_policy:
        out["numa_policy"] = t.numa_policy
    if t.guaranteed_cpus:
        out["guaranteed_cpus"] = list(t.guaranteed_cpus)
    if t.limits.cpu or t.limits.memory or t.limits.scalars:
        out["limits"] = _res(t.limits)
    if t.vgpu is not None:
        out["vgpu"] = _vgpu_pod(t.vgpu)


def encode_job(j: Job) -> dict[str, Any]:
    """Return a PodGroup as JSON data (fields at their default omitted)."""
    out: dict[str, Any] = {"uid": j.uid, "name": j.name}
    d = DEFAULT_JOB
    for name in ("namespace", "queue", "min_member", "priority_class_name", "preemptable", "creation"):
        value = getattr(j, name)
        if value != getattr(d, name):
            out[name] = value
    if j.min_task_member:
        out["min_task_member"] = dict(j.min_task_member)
    if j.min_resources is not None:
        out["min_resources"] = _res(j.min_resources)
    if j.priority is not None:
        out["priority"] = j.priority
    if j.phase != d.phase:
        out["phase"] = str(j.phase)
    if j.created_at != d.created_at:
        out["created_at"] = j.created_at
    if j.sla_waiting_time is not None:
        out["sla_waiting_time"] = j.sla_waiting_time
    _encode_job_plugin_fields(j, out)
    return out


def _encode_job_plugin_fields(j: Job, out: dict[str, Any]) -> None:
    """Add what single plugins read (disruption budget, task topology, network topology, sub-groups) and the pod
    templates to ``out``."""
    if j.jdb_min_available:
        out["jdb_min_available"] = j.jdb_min_available
    if j.jdb_max_unavailable:
        out["jdb_max_unavailable"] = j.jdb_max_unavailable
    for name in ("task_affinity", "task_anti_affinity", "task_order"):
        if getattr(j, name) is not None:
            out[name] = getattr(j, name)
    if j.network_topology is not None:
        out["network_topology"] = _topology(j.network_topology)
    if j.sub_group_policies:
        out["sub_group_policies"] = [_sub_group(p) for p in j.sub_group_policies]
    if j.pod_templates:
        out["pod_templates"] = [[encode_task(t), n] for t, n in j.pod_templates]


def _sub_group(p: SubGroupPolicy) -> dict[str, Any]:
    return {
        "name": p.name,
        "size": p.size,
        "min_groups": p.min_groups,
        "match_label_keys": list(p.match_label_keys),
        "selector": _pairs(p.selector),
        "selector_expressions": [_req(r) for r in p.selector_expressions],
        "network_topology": None if p.network_topology is None else _topology(p.network_topology),
    }


def _topology(nt: NetworkTopology) -> dict[str, Any]:
    return {"mode": nt.mode, "highest_tier_allowed": nt.highest_tier_allowed, "highest_tier_name": nt.highest_tier_name}


def encode_hyper_node(h: HyperNode) -> dict[str, Any]:
    """Return a HyperNode as JSON data."""
    return {
        "name": h.name,
        "tier": h.tier,
        "tier_name": h.tier_name,
        "members": [
            {
                "type": m.type,
                "exact": m.exact,
                "regex": m.regex,
                "match_labels": _pairs(m.match_labels),
                "match_expressions": [_req(r) for r in m.match_expressions],
            }
            for m in h.members
        ],
    }


def encode_queue(q: Queue) -> dict[str, Any]:
    """Return a queue as JSON data (fields at their default omitted)."""
    out: dict[str, Any] = {"name": q.name}
    d = DEFAULT_QUEUE
    for name in ("weight", "parent", "reclaimable", "priority", "hierarchy", "hierarchy_weights", "creation", "uid"):
        value = getattr(q, name)
        if value != getattr(d, name):
            out[name] = value
    for name in ("capability", "guarantee", "deserved"):
        value = getattr(q, name)
        if value is not None:
            out[name] = _res(value)
    if q.state != d.state:
        out["state"] = str(q.state)
    if q.node_group_affinity is not None:
        a = q.node_group_affinity
        out["node_group_affinity"] = [
            list(a.required),
            list(a.preferred),
            list(a.anti_required),
            list(a.anti_preferred),
        ]
    if q.node_group_resource_limits:
        out["node_group_resource_limits"] = q.node_group_resource_limits
    return out


def encode_priority_class(p: PriorityClass) -> dict[str, Any]:
    """Return a priority class as JSON data."""
    return {
        "name": p.name,
        "value": p.value,
        "global_default": p.global_default,
        "preemption_policy": p.preemption_policy,
    }


def encode_resource_quota(q: ResourceQuota) -> dict[str, Any]:
    """Return a namespace ResourceQuota as JSON data."""
    out: dict[str, Any] = {"name": q.name, "namespace": q.namespace, "hard": dict(q.hard)}
    if q.used:
        out["used"] = dict(q.used)
    return out


def encode_pod_disruption_budget(b: PodDisruptionBudget) -> dict[str, Any]:
    """Return a PodDisruptionBudget as JSON data."""
    out: dict[str, Any] = {"name": b.name, "namespace": b.namespace}
    if b.match_labels is not None:
        out["match_labels"] = [list(pair) for pair in b.match_labels]
    if b.match_expressions:
        out["match_expressions"] = [_req(r) for r in b.match_expressions]
    if b.disruptions_allowed:
        out["disruptions_allowed"] = b.disruptions_allowed
    if b.disrupted_pods:
        out["disrupted_pods"] = sorted(b.disrupted_pods)
    return out


def encode_clock(now: float | None) -> str:
    """Return the clock's part of an encoded snapshot (see :meth:`SnapshotEncoder.encode_parts`)."""
    return "" if now is None else ',"now":' + dumps(now)


class SnapshotEncoder:
    """Encode snapshots as JSON text, reusing the text of objects seen in the previous call.

    Objects are immutable, so the very same object encodes the same: only new or changed objects
    are encoded again. The cache maps the ids of the previous call's objects to their texts and keeps
    those objects' sequences alive, so that no new object can have one of those ids meanwhile.
    """

    def __init__(self) -> None:
        self._cache: dict[int, str] = {}
        self._alive: list[Sequence[object]] = []

    def encode(self, snapshot: Snapshot) -> str:
        """Return ``snapshot`` as a JSON object's text (lists in snapshot order)."""
        return "".join(self.encode_parts(snapshot))

    def encode_parts(self, snapshot: Snapshot) -> tuple[str, str, str]:
        """Return the text of :meth:`encode` in three parts: before the clock, the clock, after it.

        The middle part is ``,"now":<seconds>`` (empty without a clock): a recorder can keep the parts
        around it once for a run of cycles that differ only in their clock.
        """
        old = self._cache
        new: dict[int, str] = {}
        alive: list[Sequence[object]] = []

        def enc(objects: Sequence[Any], fn: Any) -> str:
            ids = list(map(id, objects))
            texts: list[Any] = list(map(old.get, ids))  # None: not in the previous call
            for i in [i for i, text in enumerate(texts) if text is None]:
                texts[i] = dumps(fn(objects[i]))
            new.update(zip(ids, texts, strict=True))
            alive.append(objects)
            return "[" + ",".join(texts) + "]"

        # Keys in sorted order (as ``dumps`` writes them); ``now``, ``pod_disruption_budgets`` and
        # ``resource_quotas`` only when set, so that snapshots without them encode as they always did.
        now = encode_clock(snapshot.now)
        quotas = (
            ',"resource_quotas":' + dumps([encode_resource_quota(q) for q in snapshot.resource_quotas])
            if snapshot.resource_quotas
            else ""
        )
        hyper = (
            '"hyper_nodes":' + dumps([encode_hyper_node(h) for h in snapshot.hyper_nodes]) + ","
            if snapshot.hyper_nodes
            else ""
        )
        budgets = (
            ',"pod_disruption_budgets":'
            + dumps([encode_pod_disruption_budget(b) for b in snapshot.pod_disruption_budgets])
            if snapshot.pod_disruption_budgets
            else ""
        )
        before = (
            "{" + hyper + '"jobs":' + enc(snapshot.jobs, encode_job) + ',"nodes":' + enc(snapshot.nodes, encode_node)
        )
        after = (
            budgets
            + ',"priority_classes":' + dumps([encode_priority_class(p) for p in snapshot.priority_classes])
            + ',"queues":' + enc(snapshot.queues, encode_queue)
            + quotas
            + ',"tasks":' + enc(snapshot.tasks, encode_task)
            + "}"
        )  # fmt: skip
        self._cache, self._alive = new, alive
        return before, now, after


def encode_snapshot(snapshot: Snapshot) -> str:
    """Return ``snapshot`` as JSON text (see :class:`SnapshotEncoder`)."""
    return SnapshotEncoder().encode(snapshot)
