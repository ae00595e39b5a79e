"""The preempt and reclaim actions: evict running pods so starving jobs can be placed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from scheduler import vec
from scheduler.framework import Action, ArgSpec
from scheduler.info import JobInfo, QueueInfo, TaskInfo
from scheduler.model import TaskStatus
from scheduler.points import BoolArray, IntArray
from scheduler.pq import PriorityQueue
from scheduler.statement import Statement

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = ["PreemptAction", "ReclaimAction", "collect_starving"]

_VICTIM_STATUSES = (TaskStatus.BOUND, TaskStatus.RUNNING)


def _fits_with(ssn: SessionHandle, task: TaskInfo, node: int, victims: list[TaskInfo]) -> bool:
    avail = ssn.nodes.future_of(node)
    for v in victims:
        vec.iadd(avail, v.req)
    return vec.fits(task.req, avail)


def _candidates(ssn: SessionHandle, task: TaskInfo, scored: bool) -> list[int]:
    mask = ssn.predicate_mask(task, unresolvable_only=True)
    nodes = np.flatnonzero(mask)
    may = _may_fit(ssn, task, nodes)
    if not scored or len(nodes) <= 1:
        out: list[int] = nodes[may].tolist()
        return out
    # Scores over every candidate (set-normalised scores depend on the whole set), then drop
    # the nodes that cannot fit: the others keep their order.
    scores = ssn.node_scores(task, nodes)
    order = np.argsort(-scores, kind="stable")
    ranked: list[int] = nodes[order[may[order]]].tolist()
    return ranked


def _place_without_victims(ssn: SessionHandle, stmt: Statement, task: TaskInfo, candidates: list[int]) -> bool:
    """Pipeline ``task`` on the first candidate where it already fits (idle or being released).

    A deviation from Volcano, which scans nodes in order and evicts on the first node holding
    victims even when another node has room: a gang whose allocation was discarded (not ready)
    would otherwise evict for members that fit on free nodes (docs/scheduler.md, Deviations)."""
    for node in candidates:
        if ssn.fits_now(task, node):
            stmt.pipeline(task, node)
            return True
    return False


def _may_fit(ssn: SessionHandle, task: TaskInfo, nodes: IntArray) -> BoolArray:
    """Nodes where the task could fit if every pod holding resources there were evicted.

    Victims are a subset of the node's Bound/Running pods, whose requests sum to at most
    ``used - releasing``, so a node failing ``req ≤ future + used - releasing`` fails
    :func:`_fits_with` for any victim
    set; the victim votes are pure, so skipping such a node changes nothing (scores of the other
    nodes and their order are unaffected: the sort is stable)."""
    table = ssn.nodes
    ok = np.ones(len(nodes), dtype=np.bool_)
    for d, v in enumerate(task.req):
        if v > 0:
            ok &= (table.future[d, nodes] + table.used[d, nodes] - table.releasing[d, nodes]) >= v
    return ok


def _collect(
    ssn: SessionHandle,
) -> tuple[
    PriorityQueue[QueueInfo],
    dict[str, PriorityQueue[JobInfo]],
    dict[str, PriorityQueue[TaskInfo]],
    dict[str, list[JobInfo]],
    list[QueueInfo],
]:
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_less)
    seen: set[str] = set()
    all_queues: list[QueueInfo] = []
    preemptors: dict[str, PriorityQueue[JobInfo]] = {}
    tasks: dict[str, PriorityQueue[TaskInfo]] = {}
    starving: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or ssn.job_valid(job) is not None:
            continue
        queue = ssn.queues[job.queue]
        if queue.name not in seen:
            seen.add(queue.name)
            all_queues.append(queue)
        if not ssn.job_starving(job):
            continue
        if queue.name not in preemptors:
            preemptors[queue.name] = PriorityQueue(ssn.job_less)
        preemptors[queue.name].push(job)
        starving.setdefault(queue.name, []).append(job)
        tasks[job.key] = PriorityQueue(ssn.task_less, job.pending_tasks(), key=ssn.task_key)
    for q in all_queues:
        queues.push(q)
    return queues, preemptors, tasks, starving, all_queues


def collect_starving(ssn: SessionHandle) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
    """The queues of admitted, valid jobs (queue order) and each queue's starving jobs (job
    order), as preempt and reclaim collect them."""
    queues, preemptors, _, _, _ = _collect(ssn)
    return queues, preemptors


class PreemptAction(Action):
    """Within a queue: starving jobs evict lower-priority (per the preemptable vote) running
    tasks; the preemptor is pipelined and bound in a later cycle."""

    name = "preempt"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "enableTopologyAwarePreemption": ArgSpec("bool", False, "kube-scheduler-style dry-run preemption"),
        "topologyAwarePreemptWorkerNum": ArgSpec("int", 16, "accepted, no effect"),
        "minCandidateNodesPercentage": ArgSpec("int", 10, "accepted, no effect"),
        "minCandidateNodesAbsolute": ArgSpec("int", 1, "accepted, no effect"),
        "maxCandidateNodesAbsolute": ArgSpec("int", 100, "accepted, no effect"),
    }

    def execute(self, session: SessionHandle) -> None:
        """Run preemption."""
        queues, preemptors, tasks, starving, _ = _collect(session)
        while queues:
            queue = queues.pop()
            jobs = preemptors.get(queue.name)
            while jobs:
                pjob = jobs.pop()
                stmt = Statement(session, "preempt")
                pending = tasks[pjob.key]
                while session.job_starving(pjob) and pending:
                    t = pending.pop()
                    self._preempt(session, stmt, t, self._between_jobs(t, pjob))
                if session.job_pipelined(pjob):
                    stmt.commit()
                else:
                    stmt.discard()
            for job in starving.get(queue.name, []):
                order = PriorityQueue(session.task_less, job.pending_tasks(), key=session.task_key)
                while order:
                    t = order.pop()
                    stmt = Statement(session, "preempt")
                    if not self._preempt(session, stmt, t, self._within_job(t, job)):
                        stmt.discard()
                        break
                    stmt.commit()

    @staticmethod
    def _base(t: TaskInfo, v: TaskInfo) -> bool:
        return v.status in _VICTIM_STATUSES and v.preemptable and (not t.best_effort or v.best_effort)

    def _between_jobs(self, t: TaskInfo, pjob: JobInfo) -> Callable[[TaskInfo], bool]:
        return lambda v: self._base(t, v) and v.job is not pjob and v.job.queue == pjob.queue and v.job.key != ""

    def _within_job(self, t: TaskInfo, job: JobInfo) -> Callable[[TaskInfo], bool]:
        return lambda v: self._base(t, v) and v.job is job

    def _preempt(
        self, ssn: SessionHandle, stmt: Statement, preemptor: TaskInfo, allowed: Callable[[TaskInfo], bool]
    ) -> bool:
        if preemptor.task.preemption_policy == "Never":
            return False
        if self.args["enableTopologyAwarePreemption"]:
            return self._topology_aware(ssn, stmt, preemptor, allowed)
        queue = ssn.queues[preemptor.job.queue]
        table = ssn.nodes
        for node in _candidates(ssn, preemptor, scored=True):
            preemptees = [v for v in table.tasks[node].values() if allowed(v)]
            victims = ssn.preemptable(preemptor, preemptees)
            if not _fits_with(ssn, preemptor, node, victims):
                continue
            sub = Statement(ssn, "preempt")
            order = PriorityQueue(lambda a, b: ssn.victim_less(a, b, preemptor), victims)
            while True:
                if ssn.allocatable(queue, preemptor) and ssn.fits_now(preemptor, node):
                    break
                if not order:
                    break
                sub.evict(order.pop(), "preempt", preemptor)
            if ssn.allocatable(queue, preemptor) and ssn.fits_now(preemptor, node):
                sub.pipeline(preemptor, node)
                stmt.merge(sub)
                return True
            sub.discard()
        return False

    @staticmethod
    def _dry_run(
        ssn: SessionHandle, preemptor: TaskInfo, node: int, allowed: Callable[[TaskInfo], bool]
    ) -> list[TaskInfo] | None:
        """Volcano's ``SelectVictimsOnNode``: remove victims (victim order) until the preemptor
        fits (queue allocatable, future idle, predicates without them), then reprieve them from
        the most important down; return the victims, or None when the node is no candidate."""
        queue = ssn.queues[preemptor.job.queue]
        preemptees = [v for v in ssn.nodes.tasks[node].values() if allowed(v)]
        victims = ssn.preemptable(preemptor, preemptees)
        if not _fits_with(ssn, preemptor, node, victims):
            return None
        order = PriorityQueue(lambda a, b: ssn.victim_less(a, b, preemptor), victims)
        removed: list[TaskInfo] = []
        sub = Statement(ssn, "preempt")

        def fits() -> bool:
            gone = frozenset(v.uid for v in removed)
            return ssn.allocatable(queue, preemptor) and ssn.fits_without(preemptor, node, gone)

        while order:
            v = order.pop()
            removed.append(v)
            sub.evict(v, "preempt", preemptor)
            if fits():
                break
        if not removed or not fits():
            sub.discard()
            return None
        chosen = list(reversed(removed))  # reprieve the most important first
        for v in list(chosen):
            trial = [x for x in chosen if x is not v]
            sub.discard()
            for x in trial:
                sub.evict(x, "preempt", preemptor)
            removed = trial
            if fits():
                chosen = trial
        sub.discard()
        return chosen

    def _topology_aware(
        self, ssn: SessionHandle, stmt: Statement, preemptor: TaskInfo, allowed: Callable[[TaskInfo], bool]
    ) -> bool:
        """Dry-run every candidate node, pick the one whose victims matter least (lowest highest
        priority, then lowest priority sum, then fewest victims, then node order), evict them and
        pipeline the preemptor there."""
        best: tuple[tuple[int, int, int, int], int, list[TaskInfo]] | None = None
        for rank, node in enumerate(_candidates(ssn, preemptor, scored=False)):
            victims = self._dry_run(ssn, preemptor, node, allowed)
            if victims is None:
                continue
            prios = [v.priority for v in victims]
            key = (max(prios, default=-(2**31)), sum(prios), len(victims), rank)
            if best is None or key < best[0]:
                best = (key, node, victims)
        if best is None:
            return False
        _, node, victims = best
        sub = Statement(ssn, "preempt")
        for v in victims:
            sub.evict(v, "preempt", preemptor)
        queue = ssn.queues[preemptor.job.queue]
        if not (
            ssn.allocatable(queue, preemptor) and ssn.fits_without(preemptor, node, frozenset(v.uid for v in victims))
        ):
            sub.discard()
            return False
        sub.pipeline(preemptor, node)
        stmt.merge(sub)
        return True


class ReclaimAction(Action):
    """Across queues: starving jobs of queues that may reclaim (preemptive) evict running,
    preemptable tasks of other, reclaimable queues that the reclaimable vote selects."""

    name = "reclaim"

    def execute(self, session: SessionHandle) -> None:
        """Run reclaim."""
        queues, preemptors, tasks, _, _ = _collect(session)
        while queues:
            queue = queues.pop()
            if session.overused(queue):
                continue
            jobs = preemptors.get(queue.name)
            while jobs:
                job = jobs.pop()
                stmt = Statement(session, "reclaim")
                pending = tasks[job.key]
                while session.job_starving(job) and pending:
                    t = pending.pop()
                    if t.task.preemption_policy == "Never":
                        continue
                    if not session.preemptive(queue, t):
                        continue
                    self._reclaim(session, stmt, t, job)
                # Without an eviction there is nothing to reclaim: Volcano leaves pods that fit
                # free room to allocate (it only visits nodes holding reclaimees).
                if session.job_pipelined(job) and stmt.has_evictions():
                    stmt.commit()
                else:
                    stmt.discard()

    @staticmethod
    def _reclaim(ssn: SessionHandle, stmt: Statement, task: TaskInfo, job: JobInfo) -> bool:
        table = ssn.nodes
        candidates = _candidates(ssn, task, scored=False)
        if _place_without_victims(ssn, stmt, task, candidates):
            return True
        for node in candidates:
            reclaimees = [
                v
                for v in table.tasks[node].values()
                if v.status == TaskStatus.RUNNING
                and v.preemptable
                and v.job.key
                and v.job.queue != job.queue
                and ssn.queues[v.job.queue].reclaimable
            ]
            if not reclaimees:
                continue
            victims = ssn.reclaimable(task, reclaimees)
            if not victims or not _fits_with(ssn, task, node, victims):
                continue
            sub = Statement(ssn, "reclaim")
            order = PriorityQueue(lambda a, b: ssn.victim_less(a, b, task), victims)
            available = table.future_of(node)
            while order and not vec.fits(task.req, available):
                v = order.pop()
                sub.evict(v, "reclaim", task)
                vec.iadd(available, v.req)
            if vec.fits(task.req, available) and ssn.fits_now(task, node):
                sub.pipeline(task, node)
                stmt.merge(sub)
                return True
            sub.discard()
        return False
