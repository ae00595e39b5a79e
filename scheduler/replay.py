"""Cycle input files: a snapshot and a configuration as one JSON document, replayable offline.

A *cycle input* is everything :func:`scheduler.run_cycle` needs, written losslessly::

    {"apiVersion": "volcanoweb.io/v1", "kind": "CycleInput", "cycle": 42,
     "config": "<Volcano scheduler YAML>", "snapshot": {"nodes": [...], "queues": [...], ...},
     "recorded": {<the cycle's decisions, the simulator's compact shape>}}

Unlike the manifest form (``scheduler.decode``), every field of every model object and of the
snapshot is kept (resolved priorities, creation order, uids, nominated nodes, pod labels,
anti-affinity and spread constraints, PodGroup creation times and SLA waiting times, the cycle's
clock ``now``, namespace ResourceQuotas), so replaying the file decides exactly what the recorded
cycle decided (``tests/scheduler/test_replay.py`` fails when a model field is not round-tripped).
Fields equal to their default are left out to keep files small.

:class:`SnapshotEncoder` keeps the encoded form of each object between calls: a caller that passes
snapshots sharing unchanged objects (the web app's snapshot memo) only encodes what changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config import SchedulerConfig, dump_config, parse_config
from scheduler.model import (
    HyperNode,
    HyperNodeMember,
    Job,
    JobPhase,
    NetworkTopology,
    Node,
    NodeGroupAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NumaTopology,
    PodAffinityTerm,
    PodDisruptionBudget,
    PreferredSchedulingTerm,
    PriorityClass,
    Queue,
    QueueState,
    Resource,
    ResourceQuota,
    Taint,
    Task,
    TaskStatus,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from scheduler.snapshot import Snapshot

__all__ = [
    "API_VERSION",
    "KIND",
    "CycleInputError",
    "SnapshotEncoder",
    "cycle_input_text",
    "decode_snapshot",
    "encode_clock",
    "encode_snapshot",
    "is_cycle_input",
    "load_cycle_input",
]

API_VERSION = "volcanoweb.io/v1"
KIND = "CycleInput"
_DEFAULT_TASK = Task(uid="", name="")
_DEFAULT_JOB = Job(uid="", name="")
_DEFAULT_QUEUE = Queue(name="")


class CycleInputError(ValueError):
    """A cycle input file is malformed; ``field`` names where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.detail = message


# --------------------------------------------------------------------------- encode


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
    return out


def encode_task(t: Task) -> dict[str, Any]:
    """Return a pod as JSON data (fields at their default omitted)."""
    out: dict[str, Any] = {"uid": t.uid, "name": t.name}
    d = _DEFAULT_TASK
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
    if t.required_affinity:
        out["required_affinity"] = [_term(x) for x in t.required_affinity]
    if t.preferred_affinity:
        out["preferred_affinity"] = [[p.weight, _term(p.term)] for p in t.preferred_affinity]
    if t.tolerations:
        out["tolerations"] = [[x.key, x.operator, x.value, x.effect] for x in t.tolerations]
    if t.scheduling_gated:
        out["scheduling_gated"] = True
    if t.nominated_node:
        out["nominated_node"] = t.nominated_node
    if t.creation:
        out["creation"] = t.creation
    if t.labels:
        out["labels"] = dict(t.labels)
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
    return out


def encode_job(j: Job) -> dict[str, Any]:
    """Return a PodGroup as JSON data (fields at their default omitted)."""
    out: dict[str, Any] = {"uid": j.uid, "name": j.name}
    d = _DEFAULT_JOB
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
    if j.jdb_min_available:
        out["jdb_min_available"] = j.jdb_min_available
    if j.jdb_max_unavailable:
        out["jdb_max_unavailable"] = j.jdb_max_unavailable
    for name in ("task_affinity", "task_anti_affinity", "task_order"):
        if getattr(j, name) is not None:
            out[name] = getattr(j, name)
    nt = j.network_topology
    if nt is not None:
        out["network_topology"] = {
            "mode": nt.mode,
            "highest_tier_allowed": nt.highest_tier_allowed,
            "highest_tier_name": nt.highest_tier_name,
        }
    if j.pod_templates:
        out["pod_templates"] = [[encode_task(t), n] for t, n in j.pod_templates]
    return out


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
    d = _DEFAULT_QUEUE
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


def _dumps(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def encode_clock(now: float | None) -> str:
    """Return the clock's part of an encoded snapshot (see :meth:`SnapshotEncoder.encode_parts`)."""
    return "" if now is None else ',"now":' + _dumps(now)


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
                texts[i] = _dumps(fn(objects[i]))
            new.update(zip(ids, texts, strict=True))
            alive.append(objects)
            return "[" + ",".join(texts) + "]"

        # Keys in sorted order (as ``_dumps`` writes them); ``now``, ``pod_disruption_budgets`` and
        # ``resource_quotas`` only when set, so that snapshots without them encode as they always did.
        now = encode_clock(snapshot.now)
        quotas = (
            ',"resource_quotas":' + _dumps([encode_resource_quota(q) for q in snapshot.resource_quotas])
            if snapshot.resource_quotas
            else ""
        )
        hyper = (
            '"hyper_nodes":' + _dumps([encode_hyper_node(h) for h in snapshot.hyper_nodes]) + ","
            if snapshot.hyper_nodes
            else ""
        )
        budgets = (
            ',"pod_disruption_budgets":'
            + _dumps([encode_pod_disruption_budget(b) for b in snapshot.pod_disruption_budgets])
            if snapshot.pod_disruption_budgets
            else ""
        )
        before = (
            "{" + hyper + '"jobs":' + enc(snapshot.jobs, encode_job) + ',"nodes":' + enc(snapshot.nodes, encode_node)
        )
        after = (
            budgets
            + ',"priority_classes":' + _dumps([encode_priority_class(p) for p in snapshot.priority_classes])
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


# --------------------------------------------------------------------------- decode


def _dres(value: Any, field: str) -> Resource:
    if not isinstance(value, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value.values()
    ):
        raise CycleInputError(field, "expected a mapping of resource name to integer")
    return Resource.from_dict(value)


def _dres_opt(value: Any, field: str) -> Resource | None:
    return None if value is None else _dres(value, field)


def _dreq(value: Any) -> NodeSelectorRequirement:
    key, operator, values = value
    return NodeSelectorRequirement(str(key), str(operator), tuple(str(v) for v in values))


def _dterm(value: Mapping[str, Any]) -> NodeSelectorTerm:
    return NodeSelectorTerm(tuple(_dreq(r) for r in value.get("e", ())), tuple(_dreq(r) for r in value.get("f", ())))


def _dpairs(value: Any) -> tuple[tuple[str, str], ...] | None:
    return None if value is None else tuple((str(k), str(v)) for k, v in value)


def _danti(value: Any) -> PodAffinityTerm:
    key, labels, exprs, namespaces = value
    return PodAffinityTerm(str(key), _dpairs(labels), tuple(_dreq(r) for r in exprs), tuple(str(n) for n in namespaces))


def _dweighted(value: Any) -> WeightedPodAffinityTerm:
    weight, term = value
    return WeightedPodAffinityTerm(int(weight), _danti(term))


def _dspread(value: Any) -> TopologySpreadConstraint:
    skew, key, when, labels, exprs = value
    return TopologySpreadConstraint(int(skew), str(key), str(when), _dpairs(labels), tuple(_dreq(r) for r in exprs))


def _seconds(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CycleInputError(field, f"expected a number of seconds, got {value!r}")
    return float(value)


def _amounts(value: Any, field: str) -> dict[str, int]:
    if not isinstance(value, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value.values()
    ):
        raise CycleInputError(field, "expected a mapping of resource name to integer")
    return {str(k): int(v) for k, v in value.items()}


def _node(d: Mapping[str, Any], field: str) -> Node:
    return Node(
        name=str(d["name"]),
        allocatable=_dres(d["allocatable"], f"{field}.allocatable"),
        labels=dict(d.get("labels") or {}),
        taints=tuple(Taint(str(k), str(v), str(e)) for k, v, e in d.get("taints") or ()),
        unschedulable=bool(d.get("unschedulable", False)),
        usage={str(p): {str(k): float(x) for k, x in v.items()} for p, v in (d.get("usage") or {}).items()},
        usage_time=None if d.get("usage_time") is None else _seconds(d["usage_time"], f"{field}.usage_time"),
        unhealthy_gpus=tuple(int(x) for x in d.get("unhealthy_gpus") or ()),
        numa=_numa(d.get("numa")),
    )


def _numa(d: Mapping[str, Any] | None) -> NumaTopology | None:
    if d is None:
        return None
    free = d.get("allocatable")
    return NumaTopology(
        cpu_manager_policy=str(d.get("cpu_manager_policy", "static")),
        topology_policy=str(d.get("topology_policy", "none")),
        cpus=tuple((int(c), int(n), int(s), int(k)) for c, n, s, k in d.get("cpus") or ()),
        allocatable=None if free is None else tuple(int(c) for c in free),
        reserved_cpu=int(d.get("reserved_cpu", 0)),
    )


def _task(d: Mapping[str, Any], field: str) -> Task:
    t = _DEFAULT_TASK
    return Task(
        uid=str(d["uid"]),
        name=str(d["name"]),
        namespace=str(d.get("namespace", t.namespace)),
        job=str(d.get("job", t.job)),
        requests=_dres(d["requests"], f"{field}.requests") if "requests" in d else t.requests,
        status=TaskStatus(d.get("status", t.status)),
        node_name=str(d.get("node_name", t.node_name)),
        priority=d.get("priority"),
        priority_class_name=str(d.get("priority_class_name", t.priority_class_name)),
        preemption_policy=str(d.get("preemption_policy", t.preemption_policy)),
        preemptable=bool(d.get("preemptable", True)),
        role=str(d.get("role", t.role)),
        node_selector=dict(d.get("node_selector") or {}),
        required_affinity=tuple(_dterm(x) for x in d.get("required_affinity") or ()),
        preferred_affinity=tuple(
            PreferredSchedulingTerm(int(w), _dterm(term)) for w, term in d.get("preferred_affinity") or ()
        ),
        tolerations=tuple(Toleration(str(k), str(o), str(v), str(e)) for k, o, v, e in d.get("tolerations") or ()),
        scheduling_gated=bool(d.get("scheduling_gated", False)),
        nominated_node=str(d.get("nominated_node", "")),
        creation=int(d.get("creation", 0)),
        labels={str(k): str(v) for k, v in (d.get("labels") or {}).items()},
        anti_affinity=tuple(_danti(a) for a in d.get("anti_affinity") or ()),
        pod_affinity=tuple(_danti(a) for a in d.get("pod_affinity") or ()),
        preferred_pod_affinity=tuple(_dweighted(w) for w in d.get("preferred_pod_affinity") or ()),
        preferred_anti_affinity=tuple(_dweighted(w) for w in d.get("preferred_anti_affinity") or ()),
        topology_spread=tuple(_dspread(c) for c in d.get("topology_spread") or ()),
        cooldown=None if d.get("cooldown") is None else _seconds(d["cooldown"], f"{field}.cooldown"),
        scheduled_at=_seconds(d.get("scheduled_at", 0.0), f"{field}.scheduled_at"),
        revocable_zone=str(d.get("revocable_zone", "")),
        scoring_type=str(d.get("scoring_type", "")),
        scoring_weights=str(d.get("scoring_weights", "")),
        gpu_index=tuple(int(x) for x in d.get("gpu_index") or ()),
        numa_policy=str(d.get("numa_policy", "")),
        guaranteed_cpus=tuple(int(x) for x in d.get("guaranteed_cpus") or ()),
    )


def _job(d: Mapping[str, Any], field: str) -> Job:
    j = _DEFAULT_JOB
    return Job(
        uid=str(d["uid"]),
        name=str(d["name"]),
        namespace=str(d.get("namespace", j.namespace)),
        queue=str(d.get("queue", j.queue)),
        min_member=int(d.get("min_member", j.min_member)),
        min_task_member={str(k): int(v) for k, v in (d.get("min_task_member") or {}).items()},
        min_resources=_dres_opt(d.get("min_resources"), f"{field}.min_resources"),
        priority=d.get("priority"),
        priority_class_name=str(d.get("priority_class_name", j.priority_class_name)),
        phase=JobPhase(d.get("phase", j.phase)),
        preemptable=None if d.get("preemptable") is None else bool(d["preemptable"]),
        creation=int(d.get("creation", 0)),
        created_at=_seconds(d.get("created_at", j.created_at), f"{field}.created_at"),
        sla_waiting_time=(
            None if d.get("sla_waiting_time") is None else _seconds(d["sla_waiting_time"], f"{field}.sla_waiting_time")
        ),
        network_topology=_dtopology(d.get("network_topology")),
        jdb_min_available=str(d.get("jdb_min_available", "")),
        jdb_max_unavailable=str(d.get("jdb_max_unavailable", "")),
        task_affinity=None if d.get("task_affinity") is None else str(d["task_affinity"]),
        task_anti_affinity=None if d.get("task_anti_affinity") is None else str(d["task_anti_affinity"]),
        task_order=None if d.get("task_order") is None else str(d["task_order"]),
        pod_templates=tuple(
            (_task(t, f"{field}.pod_templates[{i}]"), int(n)) for i, (t, n) in enumerate(d.get("pod_templates") or ())
        ),
    )


def _dtopology(value: Any) -> NetworkTopology | None:
    if value is None:
        return None
    allowed = value.get("highest_tier_allowed")
    return NetworkTopology(
        str(value.get("mode", "hard")),
        None if allowed is None else int(allowed),
        str(value.get("highest_tier_name", "")),
    )


def _hyper_node(d: Mapping[str, Any], field: str) -> HyperNode:
    return HyperNode(
        name=str(d["name"]),
        tier=int(d["tier"]),
        tier_name=str(d.get("tier_name", "")),
        members=tuple(
            HyperNodeMember(
                type=str(m["type"]),
                exact=str(m.get("exact", "")),
                regex=str(m.get("regex", "")),
                match_labels=_dpairs(m.get("match_labels")),
                match_expressions=tuple(_dreq(r) for r in m.get("match_expressions") or ()),
            )
            for m in d.get("members") or ()
        ),
    )


def _queue(d: Mapping[str, Any], field: str) -> Queue:
    q = _DEFAULT_QUEUE
    return Queue(
        name=str(d["name"]),
        weight=int(d.get("weight", q.weight)),
        capability=_dres_opt(d.get("capability"), f"{field}.capability"),
        guarantee=_dres_opt(d.get("guarantee"), f"{field}.guarantee"),
        deserved=_dres_opt(d.get("deserved"), f"{field}.deserved"),
        parent=str(d.get("parent", q.parent)),
        reclaimable=bool(d.get("reclaimable", q.reclaimable)),
        state=QueueState(d.get("state", q.state)),
        priority=int(d.get("priority", q.priority)),
        hierarchy=str(d.get("hierarchy", q.hierarchy)),
        hierarchy_weights=str(d.get("hierarchy_weights", q.hierarchy_weights)),
        creation=int(d.get("creation", 0)),
        uid=str(d.get("uid", "")),
        node_group_affinity=_dgroups(d.get("node_group_affinity")),
        node_group_resource_limits=str(d.get("node_group_resource_limits", "")),
    )


def _dgroups(value: Any) -> NodeGroupAffinity | None:
    if value is None:
        return None
    required, preferred, anti_required, anti_preferred = (tuple(str(g) for g in groups) for groups in value)
    return NodeGroupAffinity(required, preferred, anti_required, anti_preferred)


def _priority_class(d: Mapping[str, Any], field: str) -> PriorityClass:
    return PriorityClass(
        name=str(d["name"]),
        value=int(d["value"]),
        global_default=bool(d.get("global_default", False)),
        preemption_policy=str(d.get("preemption_policy", "PreemptLowerPriority")),
    )


def _resource_quota(d: Mapping[str, Any], field: str) -> ResourceQuota:
    return ResourceQuota(
        name=str(d["name"]),
        namespace=str(d["namespace"]),
        hard=_amounts(d.get("hard") or {}, f"{field}.hard"),
        used=_amounts(d.get("used") or {}, f"{field}.used"),
    )


def _pod_disruption_budget(d: Mapping[str, Any], field: str) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        name=str(d["name"]),
        namespace=str(d["namespace"]),
        match_labels=_dpairs(d.get("match_labels")),
        match_expressions=tuple(_dreq(r) for r in d.get("match_expressions") or ()),
        disruptions_allowed=int(d.get("disruptions_allowed", 0)),
        disrupted_pods=frozenset(str(n) for n in d.get("disrupted_pods") or ()),
    )


_DECODERS: dict[str, Any] = {
    "nodes": _node,
    "queues": _queue,
    "jobs": _job,
    "tasks": _task,
    "priority_classes": _priority_class,
    "resource_quotas": _resource_quota,
    "pod_disruption_budgets": _pod_disruption_budget,
    "hyper_nodes": _hyper_node,
}


def decode_snapshot(data: Any) -> Snapshot:
    """Return the snapshot encoded by :class:`SnapshotEncoder` (raises :class:`CycleInputError`)."""
    if not isinstance(data, Mapping):
        raise CycleInputError("snapshot", "expected a mapping")
    parts: dict[str, list[Any]] = {}
    for key, decode in _DECODERS.items():
        items = data.get(key, [])
        if not isinstance(items, list):
            raise CycleInputError(f"snapshot.{key}", "expected a list")
        decoded = []
        for i, item in enumerate(items):
            field = f"snapshot.{key}[{i}]"
            if not isinstance(item, Mapping):
                raise CycleInputError(field, "expected a mapping")
            try:
                decoded.append(decode(item, field))
            except CycleInputError:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise CycleInputError(field, f"invalid value ({type(exc).__name__}: {exc})") from None
        parts[key] = decoded
    now = data.get("now")
    return Snapshot.of(
        parts["nodes"],
        parts["queues"],
        parts["jobs"],
        parts["tasks"],
        parts["priority_classes"],
        now=None if now is None else _seconds(now, "snapshot.now"),
        resource_quotas=parts["resource_quotas"],
        pod_disruption_budgets=parts["pod_disruption_budgets"],
        hyper_nodes=parts["hyper_nodes"],
    )


# --------------------------------------------------------------------------- the file


def cycle_input_text(
    snapshot_text: str,
    config: SchedulerConfig | str,
    *,
    cycle: int = 0,
    recorded: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    """Return the text of a cycle input file: encoded snapshot text plus a configuration (or its YAML).

    ``recorded`` is what the live cycle decided (``scheduler.result.cycle_json``), kept so that a replay
    can be compared with it; ``metadata`` is free-form information (time, configuration version).
    """
    head: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "cycle": cycle,
        "config": config if isinstance(config, str) else dump_config(config),
    }
    if metadata:
        head["metadata"] = dict(metadata)
    if recorded is not None:
        head["recorded"] = dict(recorded)
    return _dumps(head)[:-1] + ',"snapshot":' + snapshot_text + "}\n"


def is_cycle_input(text: str) -> bool:
    """Return whether ``text`` looks like a cycle input file (JSON with our apiVersion/kind)."""
    head = text.lstrip()[:1]
    if head != "{":
        return False
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("kind") == KIND and data.get("apiVersion") == API_VERSION


def load_cycle_input(text: str) -> tuple[Snapshot, SchedulerConfig, dict[str, Any]]:
    """Return the snapshot, the configuration and the whole document of a cycle input file."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CycleInputError("(file)", f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("apiVersion") != API_VERSION:
        raise CycleInputError("kind", f"expected apiVersion {API_VERSION} and kind {KIND}")
    config_text = data.get("config")
    if not isinstance(config_text, str):
        raise CycleInputError("config", "expected the scheduler configuration as YAML text")
    config = parse_config(config_text)
    return decode_snapshot(data.get("snapshot")), config, data
