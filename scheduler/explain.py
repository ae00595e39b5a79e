"""Plugin hooks' answers on a freshly opened session, as data (``python -m scheduler simulate --explain-*``).

Many of Volcano's plugin tests check one hook's answer directly instead of a cycle's outcome: the node
scores of a pod (``ssn.NodeOrderFn`` / ``BatchNodeOrderFn``), predicate codes (``ssn.PredicateFn``), job
order, whether a job is enqueueable, which running pods a job's pods may preempt or reclaim, a job's
HyperNode gradients and scores, the pods the plugins want evicted (``ssn.VictimTasks``). These
functions open a session over a snapshot (no action runs) and return those answers as JSON-ready
dicts, in name order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.config_types import SchedulerConfig
from scheduler.info import JobInfo, TaskInfo
from scheduler.model import JobPhase, TaskStatus
from scheduler.pq import PriorityQueue
from scheduler.registry import Registry, default_registry
from scheduler.session import Session
from scheduler.snapshot import Snapshot
from scheduler.topology import CLUSTER_TOP

__all__ = ["explain", "open_session"]

#: Volcano's ``PreemptableStatus``: the statuses a victim may have.
_VICTIM_STATUSES = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})


def open_session(snapshot: Snapshot, config: SchedulerConfig, registry: Registry | None = None) -> Session:
    """A session opened over ``snapshot`` (plugins opened, no action run)."""
    return Session(snapshot, config, registry or default_registry())


def _pending(session: Session, task: str | None) -> list[TaskInfo]:
    """The pending pods, or the pod ``task`` whatever its status (Volcano's tests score bound pods too)."""
    every = (t for j in session.jobs.values() for t in j.tasks.values())
    if task:
        found = [t for t in every if t.key == task]
        if not found:
            raise KeyError(f"no pod {task} of a PodGroup in the snapshot")
        return found
    return sorted((t for t in every if t.status == TaskStatus.PENDING), key=lambda t: t.key)


def node_scores(
    session: Session, task: str | None = None, nodes: Sequence[str] = (), spans: str | None = None
) -> dict[str, dict[str, float]]:
    """``{pod: {node: score}}``: the summed node-order scores of each pending pod (or of ``task``) over
    ``nodes`` (every node when empty), the candidates scored together (ties that add a bonus look
    at them only). The HyperNode a pod's job spans, which allocate tells network-topology-aware before it
    scores, is ``spans`` when given (what allocate says while it tries the job inside that HyperNode), else,
    for a job with a network topology, the one its placed pods span."""
    names = list(session.nodes.names)
    chosen = list(nodes) or names
    idx = np.array([session.nodes.index[n] for n in chosen], dtype=np.intp)
    if spans is not None and spans not in session.topology.tier:
        raise KeyError(f"no HyperNode {spans} in the snapshot")
    out: dict[str, dict[str, float]] = {}
    for t in _pending(session, task):
        if spans is not None:
            session.job_hyper_nodes[t.job.key] = spans
        elif t.job.job.network_topology is not None:
            session.job_hyper_nodes[t.job.key] = session.allocated_hyper_node(t.job)
        scores = session.node_scores(t, idx)
        out[t.key] = {n: float(s) for n, s in zip(chosen, scores.tolist(), strict=True)}
    return out


def predicates(session: Session, task: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``{pod: {node: {code, plugin, reason}}}``: the first failing filter of each node (code 0
    Success, 2 Unschedulable, 3 UnschedulableAndUnresolvable, Volcano's status codes)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for t in _pending(session, task):
        filters = session.filters(t)
        per: dict[str, dict[str, Any]] = {}
        for i, name in enumerate(session.nodes.names):
            failing = next((f for f in filters if not f.passed[i]), None)
            if failing is None:
                per[name] = {"code": 0}
            else:
                code = 3 if failing.unresolvable else 2
                per[name] = {"code": code, "plugin": failing.plugin, "reason": failing.reason_at(i)}
        out[t.key] = per
    return out


def job_order(session: Session) -> list[str]:
    """Every job in job order (``ssn.JobOrderFn``; creation, then uid, last)."""
    order = PriorityQueue(session.job_less, session.jobs.values(), key=session.job_key)
    out = []
    while order:
        out.append(order.pop().key)
    return out


def enqueue(session: Session) -> dict[str, bool]:
    """``{job: enqueueable}`` for every Pending PodGroup (``ssn.JobEnqueueable``)."""
    return {key: session.job_enqueueable(j) for key, j in sorted(session.jobs.items()) if j.phase == JobPhase.PENDING}


def victims(session: Session, job: str) -> dict[str, Any]:
    """For each pending pod of ``job``: the running pods the ``preemptable`` vote lets it evict
    (candidates: Running/Bound preemptable pods of other jobs of its queue) and the ``reclaimable``
    vote (of other, reclaimable queues), Volcano's ``ssn.Preemptable`` / ``ssn.Reclaimable``."""
    info = session.jobs.get(job)
    if info is None:
        raise KeyError(f"no PodGroup {job} in the snapshot")
    running = [
        t
        for j in session.jobs.values()
        if j is not info
        for t in j.tasks.values()
        if t.status in _VICTIM_STATUSES and t.preemptable
    ]
    running.sort(key=lambda t: t.key)
    out: dict[str, Any] = {}
    for t in sorted((t for t in info.tasks.values() if t.status == TaskStatus.PENDING), key=lambda t: t.key):
        same = [v for v in running if v.job.queue == info.queue]
        other = [v for v in running if v.job.queue != info.queue and _reclaimable_queue(session, v.job)]
        out[t.key] = {
            "preemptable": sorted(v.key for v in session.preemptable(t, same)) if same else [],
            "reclaimable": sorted(v.key for v in session.reclaimable(t, other)) if other else [],
        }
    return out


def _reclaimable_queue(session: Session, job: JobInfo) -> bool:
    queue = session.queues.get(job.queue)
    return queue is not None and queue.reclaimable


def hyper_nodes(session: Session, job: str) -> dict[str, Any]:
    """A job's network topology as the session reads it: its effective topology, the HyperNode its
    pods span, its allocation gradients from the top HyperNode and every HyperNode's score."""
    info = session.jobs.get(job)
    if info is None:
        raise KeyError(f"no PodGroup {job} in the snapshot")
    topology = session.job_topology(info)
    spans = session.allocated_hyper_node(info)
    minimum = list(info.min_resources) if info.min_resources is not None else [0.0] * session.ndims
    names = sorted(session.topology.tier)
    return {
        "topology": None if topology is None else {"hard": topology.hard, "highestTierAllowed": topology.highest},
        "spans": spans,
        "gradients": session.hyper_node_gradient(info, CLUSTER_TOP, spans, minimum, "allocate"),
        "eviction_gradients": session.hyper_node_gradient(info, CLUSTER_TOP, spans, minimum, "evict"),
        "scores": session.hyper_node_scores(info, names),
    }


def explain(
    snapshot: Snapshot,
    config: SchedulerConfig,
    what: Sequence[str],
    *,
    task: str | None = None,
    nodes: Sequence[str] = (),
    job: str | None = None,
    spans: str | None = None,
) -> dict[str, Any]:
    """The answers named by ``what`` (``node-scores``, ``predicates``, ``job-order``, ``enqueue``,
    ``victim-tasks``, ``victims``, ``hypernodes``; the last two need ``job``) on one opened session
    (``spans``: see :func:`node_scores`)."""
    session = open_session(snapshot, config)
    out: dict[str, Any] = {}
    for item in what:
        if item == "node-scores":
            out["node_scores"] = node_scores(session, task, nodes, spans)
        elif item == "predicates":
            out["predicates"] = predicates(session, task)
        elif item == "job-order":
            out["job_order"] = job_order(session)
        elif item == "enqueue":
            out["enqueue"] = enqueue(session)
        elif item == "victim-tasks":
            out["victim_tasks"] = [t.key for t in session.victim_tasks()]
        elif item in ("victims", "hypernodes"):
            if not job:
                raise KeyError(f"--explain-{item} needs a PodGroup (namespace/name)")
            out[item] = victims(session, job) if item == "victims" else hyper_nodes(session, job)
        else:
            raise KeyError(f"unknown explanation {item!r}")
    return out
