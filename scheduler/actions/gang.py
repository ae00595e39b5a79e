"""The gangpreempt and gangreclaim actions: evict whole jobs' worth of pods for a starving gang.

Volcano 1.15's gang-aware eviction. Where ``preempt`` and ``reclaim`` find victims task by task,
node by node, these look at the whole job: its pending pods' summed request is the need, victims
come in *bundles* per victim job (a *safe* bundle keeps the victim job at or above its
``minAvailable`` and role minimums, a *whole* bundle takes the rest of its pods there, which
breaks the gang), and bundles are taken in order until the need fits the freed room plus what is
idle or releasing. Then a dry run evicts the victims and pipelines the job's pending pods (queue
``allocatable``, unresolvable predicates, future idle, node order); the plan is kept only if the
job ends up pipelined.

The search runs domain by domain (Volcano's ``GetCandidateDomains``): the HyperNodes of the
job's eviction gradients (network-topology-aware: its highest allowed tier first, the widest
domains first, at most its ``hypernode.gradient.evict.max-hypernodes``), the first
``maxDomains`` of them, or the whole cluster (the top HyperNode) for a job without a hard
topology. In a domain only its nodes' pods are victims and its nodes' idle and releasing
resources count; a hard-topology job's dry run tries the HyperNodes of its gradients inside
the domain in turn and keeps the first where it is pipelined. Sub-jobs are not modelled: a
job is one sub-job (so no sub-job nomination is kept for the next cycle's allocate).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, cast

import numpy as np
import numpy.typing as npt

from scheduler import vec
from scheduler.actions.common import prioritize
from scheduler.actions.evict import collect_starving
from scheduler.framework import Action, ArgSpec, GangEvictable, intersect_victims
from scheduler.info import JobInfo, QueueInfo, TaskInfo
from scheduler.model import TaskStatus
from scheduler.pq import PriorityQueue
from scheduler.statement import Statement
from scheduler.topology import CLUSTER_TOP

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = ["GangPreemptAction", "GangReclaimAction", "gang_evictable", "pick_domains"]

_SAFE, _WHOLE = 0, 1
_DEFAULT_MAX_DOMAINS = 8


@dataclass
class _Bundle:
    """Victims of one job: ``kind`` safe (0) or whole (1); ``whole_req`` is every pod of the
    job's request for a whole bundle (what breaking the gang costs), None for a safe one."""

    kind: int
    job: JobInfo
    tasks: list[TaskInfo]
    whole_req: Sequence[float] | None

    def local(self) -> list[float]:
        total = [0.0] * len(self.job.allocated)
        for t in self.tasks:
            vec.iadd(total, t.req)
        return total


def pick_domains(gradients: Sequence[Sequence[str]], max_domains: int, fallback: str) -> list[str]:
    """Volcano's ``PickDomainsFromGradients``: the gradients' HyperNodes in order, each once, at
    most ``max_domains`` (<= 0: all); ``fallback`` alone when there are none (and it is set)."""
    seen: set[str] = set()
    out: list[str] = []
    for group in gradients:
        for name in group:
            if name in seen:
                continue
            seen.add(name)
            out.append(name)
            if 0 < max_domains <= len(out):
                return out
    if not out and fallback:
        out.append(fallback)
    return out


def gang_evictable(ssn: SessionHandle, action: str, job: JobInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    """Volcano's ``UnifiedEvictable``: the preemptable combine rule over the configured plugins
    implementing :class:`GangEvictable` (no switch), tier by tier."""
    return intersect_victims(
        ssn.tiers, lambda p: p.gang_evictable(action, job, candidates) if isinstance(p.plugin, GangEvictable) else None
    )


def _pending(ssn: SessionHandle, job: JobInfo) -> list[TaskInfo]:
    """The job's pending, non-gated pods that request something, in task order."""
    tasks = [t for t in job.pending_tasks() if not t.best_effort]
    order = PriorityQueue(ssn.task_less, tasks, key=ssn.task_key)
    out = []
    while order:
        out.append(order.pop())
    return out


def _evictable_job(job: JobInfo) -> bool:
    """A PodGroup's ``volcano.sh/preemptable`` flag, when set, decides; unset means yes."""
    return job.job.preemptable is not False


def _job_bundles(job: JobInfo, tasks: list[TaskInfo]) -> list[_Bundle]:
    """Split a victim job's candidate pods into its safe and whole bundles (lowest priority,
    then uid, first): a pod is safe while the job keeps more than ``minAvailable`` ready pods
    and, when roles are checked, its role more than its minimum."""
    tasks = sorted(tasks, key=lambda t: (t.priority, t.uid))
    surplus = job.ready_num - job.min_available
    if surplus < 0:  # already below its gang: nothing more to break
        return [_Bundle(_SAFE, job, tasks, None)]
    roles: dict[str, int] = {}
    if job.task_min and job.min_available >= job.task_min_total:
        ready = {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED}
        for t in job.tasks.values():
            if t.role in job.task_min and (t.status in ready or (t.status == TaskStatus.PENDING and t.best_effort)):
                roles[t.role] = roles.get(t.role, 0) + 1
        roles = {r: roles.get(r, 0) - m for r, m in job.task_min.items()}
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for t in tasks:
        role_ok = t.role not in roles or roles[t.role] > 0
        if surplus > 0 and role_ok:
            safe.append(t)
            surplus -= 1
            if t.role in roles:
                roles[t.role] -= 1
        else:
            whole.append(t)
    out = []
    if safe:
        out.append(_Bundle(_SAFE, job, safe, None))
    if whole:
        out.append(_Bundle(_WHOLE, job, whole, job.total_request))
    return out


def _roi(b: _Bundle, need: Sequence[float]) -> float:
    """What a bundle frees toward the need (capped at it) over what breaking its job costs
    (a safe bundle costs nothing: infinite)."""
    if b.whole_req is None:
        return float("inf")
    local = b.local()
    freed = sum(min(local[d], n) / n for d, n in enumerate(need) if n > 0)
    cost = sum(b.whole_req[d] / n for d, n in enumerate(need) if n > 0)
    return float("inf") if cost == 0 else freed / cost


def _sort(bundles: list[_Bundle], need: Sequence[float], victim_first: Callable[[_Bundle, _Bundle], bool]) -> None:
    """Safe bundles first; then ``victim_first`` (when it tells the two apart); then the larger
    return on the need; then job uid, first pod uid, size."""

    def less(a: _Bundle, b: _Bundle) -> bool:
        if a.kind != b.kind:
            return a.kind < b.kind
        ab, ba = victim_first(a, b), victim_first(b, a)
        if ab != ba:
            return ab
        ra, rb = _roi(a, need), _roi(b, need)
        if ra != rb:
            return ra > rb
        ka = (a.job.uid, a.tasks[0].uid if a.tasks else "", len(a.tasks))
        kb = (b.job.uid, b.tasks[0].uid if b.tasks else "", len(b.tasks))
        return ka < kb

    bundles.sort(key=functools.cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0)))


def _allowed(bundles: list[_Bundle], allowed: set[str]) -> list[_Bundle]:
    """Keep a whole bundle only if every pod is allowed; cut a safe one to its allowed pods."""
    out = []
    for b in bundles:
        ok = [t for t in b.tasks if t.uid in allowed]
        if b.kind == _WHOLE:
            if len(ok) == len(b.tasks):
                out.append(b)
        elif ok:
            out.append(_Bundle(_SAFE, b.job, ok, None))
    return out


class _GangEviction(Action):
    """What gangpreempt and gangreclaim share: the per-queue loop, bundles and the dry run."""

    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "maxDomains": ArgSpec("int", _DEFAULT_MAX_DOMAINS, "HyperNode domains tried per job (<= 0: 8)"),
        "allowWholeBundle": ArgSpec("bool", True, "may take a victim job's pods below its minAvailable"),
    }

    def __init__(self, args: Mapping[str, object]) -> None:
        super().__init__(args)
        if cast(int, self.args["maxDomains"]) <= 0:  # Volcano falls back to its default
            self.args = {**self.args, "maxDomains": _DEFAULT_MAX_DOMAINS}

    def execute(self, session: SessionHandle) -> None:
        """For each queue in queue order, for each starving job in job order: find victims and
        keep the plan if the job is then pipelined."""
        queues, preemptors = collect_starving(session)
        while queues:
            queue = queues.pop()
            if self._skip_queue(session, queue):
                continue
            jobs = preemptors.get(queue.name)
            while jobs:
                job = jobs.pop()
                stmt = Statement(session, self.name)
                self._evict_for(session, stmt, queue, job)
                if session.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()

    def _skip_queue(self, ssn: SessionHandle, queue: QueueInfo) -> bool:
        return False

    def _may_evict(self, ssn: SessionHandle, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        return True

    def _candidate(self, ssn: SessionHandle, job: JobInfo, v: TaskInfo) -> bool:
        raise NotImplementedError

    def _victim_first(self, ssn: SessionHandle, job: JobInfo) -> Callable[[_Bundle, _Bundle], bool]:
        raise NotImplementedError

    def _bundles(self, ssn: SessionHandle, job: JobInfo, need: Sequence[float], nodes: Sequence[int]) -> list[_Bundle]:
        """The victim bundles on ``nodes``, best first, that the plugins allow."""
        by_job: dict[str, list[TaskInfo]] = {}
        table = ssn.nodes
        for node in nodes:
            for v in table.tasks[node].values():
                vjob = v.job
                if vjob.key in ssn.jobs and vjob is not job and _evictable_job(vjob) and self._candidate(ssn, job, v):
                    by_job.setdefault(vjob.key, []).append(v)
        bundles = [b for key, tasks in by_job.items() for b in _job_bundles(ssn.jobs[key], tasks)]
        if not bundles:
            return []
        first = self._victim_first(ssn, job)
        _sort(bundles, need, first)
        flat = [t for b in bundles for t in b.tasks]
        allowed = {t.uid for t in gang_evictable(ssn, self.name, job, flat)}
        valid = _allowed(bundles, allowed)
        _sort(valid, need, first)
        if not self.args["allowWholeBundle"]:
            valid = [b for b in valid if b.kind != _WHOLE]
        return valid

    def _evict_for(self, ssn: SessionHandle, stmt: Statement, queue: QueueInfo, job: JobInfo) -> None:
        pending = _pending(ssn, job)
        if not pending or not self._may_evict(ssn, queue, pending):
            return
        need = [0.0] * len(job.allocated)
        for t in pending:
            vec.iadd(need, t.req)
        table = ssn.nodes
        for domain in self._domains(ssn, job):
            if domain == CLUSTER_TOP:
                nodes: Sequence[int] = range(len(table))
                room = (table.idle.sum(axis=1) + table.releasing.sum(axis=1)).tolist()
            else:
                idx = ssn.topology.nodes[domain]
                if len(idx) == 0:
                    continue
                nodes = idx.tolist()
                room = (table.idle[:, idx].sum(axis=1) + table.releasing[:, idx].sum(axis=1)).tolist()
            bundles = self._bundles(ssn, job, need, nodes)
            if not bundles:
                continue
            victims: list[TaskInfo] = []
            for b in bundles:
                victims.extend(b.tasks)
                free = list(room)
                for v in victims:
                    vec.iadd(free, v.req)
                if not all(n <= f for n, f in zip(need, free, strict=True)):
                    continue
                if self._plan_in(ssn, stmt, queue, job, victims, domain, need):
                    return

    def _domains(self, ssn: SessionHandle, job: JobInfo) -> list[str]:
        """Volcano's ``GetCandidateDomains``: the job's eviction gradients from the top HyperNode,
        the first ``maxDomains``; the top HyperNode for a job without a hard topology."""
        topology = ssn.job_topology(job)
        hard = topology is not None and topology.hard
        if not hard:  # the gradient of such a job is the top HyperNode alone
            return [CLUSTER_TOP]
        minimum = list(job.min_resources) if job.min_resources is not None else [0.0] * ssn.ndims
        allocated = ssn.allocated_hyper_node(job) if hard else ""
        gradients = ssn.hyper_node_gradient(job, CLUSTER_TOP, allocated, minimum, "evict")
        return pick_domains(gradients, cast(int, self.args["maxDomains"]), "" if hard else CLUSTER_TOP)

    def _plan_in(
        self,
        ssn: SessionHandle,
        stmt: Statement,
        queue: QueueInfo,
        job: JobInfo,
        victims: list[TaskInfo],
        domain: str,
        need: Sequence[float],
    ) -> bool:
        """The dry run in ``domain``: over its nodes, or for a hard-topology job in the first
        HyperNode of its gradients under the domain where it works."""
        topology = ssn.job_topology(job)
        if topology is None or not topology.hard:
            return self._plan(
                ssn, stmt, queue, job, victims, None if domain == CLUSTER_TOP else ssn.topology.mask(domain)
            )
        allocated = ssn.allocated_hyper_node(job)
        for group in ssn.hyper_node_gradient(job, domain, allocated, list(need), "evict"):
            for hn in group:
                if self._plan(ssn, stmt, queue, job, victims, ssn.topology.mask(hn)):
                    return True
        return False

    def _plan(
        self,
        ssn: SessionHandle,
        stmt: Statement,
        queue: QueueInfo,
        job: JobInfo,
        victims: list[TaskInfo],
        inside: npt.NDArray[np.bool_] | None = None,
    ) -> bool:
        """Evict ``victims`` and pipeline the job's pending pods (on the nodes ``inside``, all when
        None); keep it all in ``stmt`` only if the job is then pipelined (else undo it)."""
        sub = Statement(ssn, self.name)
        for v in victims:
            sub.evict(v, self.name)
        tasks = _pending(ssn, job)
        ok = bool(tasks)
        for t in tasks:
            if not ssn.allocatable(queue, t):
                ok = False
                break
            mask = ssn.predicate_mask(t, unresolvable_only=True)
            if inside is not None:
                mask &= inside
            for d, r in enumerate(t.req):
                if r > 0:
                    mask &= ssn.nodes.future[d] >= r
            nodes = mask.nonzero()[0]
            if len(nodes) == 0:
                ok = False
                break
            node, _ = prioritize(ssn, t, nodes)
            sub.pipeline(t, node)
        if ok and ssn.job_pipelined(job):
            stmt.merge(sub)
            return True
        sub.discard()
        return False


class GangPreemptAction(_GangEviction):
    """Within a queue: a starving job evicts bundles of lower-priority jobs' running pods."""

    name = "gangpreempt"

    def _candidate(self, ssn: SessionHandle, job: JobInfo, v: TaskInfo) -> bool:
        # Unlike preempt, a BestEffort preemptor may take any victim (the plugins decide).
        return (
            v.status in (TaskStatus.BOUND, TaskStatus.RUNNING)
            and v.preemptable
            and v.job.queue == job.queue
            and v.job.priority < job.priority
        )

    def _victim_first(self, ssn: SessionHandle, job: JobInfo) -> Callable[[_Bundle, _Bundle], bool]:
        # The job that job order serves later gives its pods first.
        return lambda a, b: a.job is not b.job and not ssn.job_less(a.job, b.job)


class GangReclaimAction(_GangEviction):
    """Across queues: a starving job of a queue that may reclaim (not overused, preemptive for
    the job's pending pods) evicts bundles of other, reclaimable queues' running pods."""

    name = "gangreclaim"

    def _skip_queue(self, ssn: SessionHandle, queue: QueueInfo) -> bool:
        return ssn.overused(queue)

    def _may_evict(self, ssn: SessionHandle, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        return ssn.preemptive(queue, _Demand.of(pending))

    def _candidate(self, ssn: SessionHandle, job: JobInfo, v: TaskInfo) -> bool:
        if v.status != TaskStatus.RUNNING or not v.preemptable or v.job.queue == job.queue:
            return False
        queue = ssn.queues.get(v.job.queue)
        return queue is not None and queue.reclaimable

    def _victim_first(self, ssn: SessionHandle, job: JobInfo) -> Callable[[_Bundle, _Bundle], bool]:
        mine = ssn.queues.get(job.queue)

        def first(a: _Bundle, b: _Bundle) -> bool:
            qa, qb = ssn.queues[a.job.queue], ssn.queues[b.job.queue]
            return qa is not qb and ssn.victim_queue_less(qa, qb, mine)

        return first


class _Demand:
    """Pods asked about together (Volcano's ``Preemptive(queue, tasks)`` sums their requests):
    the ``req`` and ``job`` a ``preemptive`` plugin reads of a task."""

    __slots__ = ("job", "req")

    def __init__(self, job: JobInfo, req: tuple[float, ...]) -> None:
        self.job = job
        self.req = req

    @staticmethod
    def of(tasks: list[TaskInfo]) -> TaskInfo:
        total = [0.0] * len(tasks[0].req)
        for t in tasks:
            vec.iadd(total, t.req)
        return cast(TaskInfo, _Demand(tasks[0].job, tuple(total)))
