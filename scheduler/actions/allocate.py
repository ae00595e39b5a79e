"""The allocate action: gang placement of pending tasks, queue by queue, job by job."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from scheduler.actions.common import (
    feasible_count,
    feasible_inside,
    prioritize,
    record_fit_error,
    record_job_failure,
    select_node,
)
from scheduler.actions.subgroups import SubGroupSearch
from scheduler.framework import Action, ArgSpec
from scheduler.info import JobInfo, QueueInfo, TaskInfo
from scheduler.model import JobPhase, TaskStatus
from scheduler.pq import PriorityQueue
from scheduler.quantity import format_quantity
from scheduler.result import JobReason, ReasonKind
from scheduler.statement import Statement
from scheduler.topology import CLUSTER_TOP

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = ["AllocateAction", "need_continue"]


def _node_failure(job: JobInfo) -> dict[str, int] | None:
    """The fit errors of a job whose allocation just failed for want of a node only (no quota
    refusal: one fit error recorded, the predicates' reason), else None."""
    reason = job.reason
    if reason is None or reason.kind != ReasonKind.PREDICATE_FAILURE or len(job.fit_errors) != 1:
        return None
    return next(iter(job.fit_errors.values()))[1]


def _failure_key(shape: object, queue: str, job: JobInfo, n_tasks: int) -> tuple[object, ...]:
    """What makes two jobs' allocation attempts identical while no node changes (the failure memo)."""
    return (shape, queue, job.min_available, len(job.tasks), tuple(job.counts.values()), job.be_pending, n_tasks)


def ssn_fit_text(errors: dict[str, int]) -> str:
    """``"3 Insufficient cpu, 1 node(s) had taints"``: a fit-error histogram as text."""
    return ", ".join(f"{n} {reason}" for reason, n in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))


def need_continue(job: JobInfo, failed_roles: set[str]) -> bool:
    """Volcano's NeedContinueAllocating after a task of ``job`` failed predicates."""
    if job.min_available == len(job.tasks):
        return False
    if job.min_available < job.task_min_total:
        pending_ok = sum(1 for t in job.tasks.values() if t.status == TaskStatus.PENDING and t.role not in failed_roles)
        return job.ready_num + pending_ok >= job.min_available
    for role in failed_roles:
        minimum = job.task_min.get(role, 0)
        if minimum <= 0:
            continue
        have = sum(
            1
            for t in job.tasks.values()
            if t.role == role
            and (
                t.status
                in (
                    TaskStatus.ALLOCATED,
                    TaskStatus.BINDING,
                    TaskStatus.BOUND,
                    TaskStatus.RUNNING,
                    TaskStatus.SUCCEEDED,
                )
                or (t.status == TaskStatus.PENDING and t.best_effort)
            )
        )
        if have < minimum:
            return False
    return True


@dataclass(slots=True)
class _Work:
    """What one allocate run serves: the queues in order, each queue's jobs, each job's pending
    tasks, and the memo of failures for want of a node (see ``AllocateAction._collect``)."""

    queues: PriorityQueue[QueueInfo]
    #: Whether every plugin consulted fails a task the same way while no node changes.
    repeatable: bool
    jobs: dict[str, PriorityQueue[JobInfo]] = field(default_factory=dict)
    tasks: dict[str, PriorityQueue[TaskInfo]] = field(default_factory=dict)
    #: Per job whose pending tasks all have one shape, that shape.
    shapes: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: The jobs with a hard network topology: the HyperNode search.
    hard: set[str] = field(default_factory=set)
    #: The jobs with sub-group policies: the sub-group search (``actions/subgroups.py``), when any.
    grouped: SubGroupSearch | None = None
    #: Per shape, the generation (``len(nodes.changes)``) of its last recorded failure.
    failing: dict[tuple[Any, ...], int] = field(default_factory=dict)
    failures: dict[tuple[Any, ...], tuple[int, dict[str, int]]] = field(default_factory=dict)


class AllocateAction(Action):
    """Places pending (non-BestEffort) tasks; a job's statement is committed once the gang is
    ready, kept (unbound) if only pipelined, and discarded otherwise."""

    name = "allocate"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "predicateErrorCacheEnable": ArgSpec("bool", True, "skip siblings of a failed task"),
        "minimumFeasibleNodes": ArgSpec("int", 100, "extension: --minimum-feasible-nodes"),
        "percentageNodesToFind": ArgSpec("int", 0, "extension: --percentage-nodes-to-find"),
        "minimumPercentageNodesToFind": ArgSpec("int", 5, "extension: --minimum-percentage-nodes-to-find"),
    }

    def _sample(self, session: SessionHandle) -> int | None:
        n = len(session.nodes)
        k = feasible_count(
            n,
            int(self.args["minimumFeasibleNodes"]),
            int(self.args["percentageNodesToFind"]),
            int(self.args["minimumPercentageNodesToFind"]),
        )
        return None if k >= n else k

    def execute(self, session: SessionHandle) -> None:
        """Run allocation."""
        self.sample = self._sample(session)
        work = self._collect(session)
        not_overused: dict[str, int] = {}  # queue -> generation it was last found not overused at
        queues = work.queues
        while queues:
            queue = queues.pop()
            pending_jobs = work.jobs[queue.name]
            if not work.repeatable or not_overused.get(queue.name) != len(session.nodes.changes):
                if session.overused(queue):
                    self._overused(session, queue, pending_jobs)
                    continue
                not_overused[queue.name] = len(session.nodes.changes)
            if not pending_jobs:
                continue
            self._serve_job(session, work, queue, pending_jobs.pop())
            queues.push(queue)

    def _collect(self, session: SessionHandle) -> _Work:
        """The jobs to serve, by queue, with their pending tasks in order (an Inqueue job's, or,
        without the enqueue action, a Pending one's, which is admitted here)."""
        enqueue_configured = "enqueue" in session.config.actions
        # A job whose pending tasks all have one shape and that fails only for want of a node
        # fails the same way, with the same fit errors, as an earlier job with the same key (shape,
        # queue, minAvailable, task count, status counts) when no node changed in between: its
        # failure is then recorded without trying again (see _repeat_failure).
        work = _Work(PriorityQueue(session.queue_less), session.failures_repeatable)
        for job in session.jobs.values():
            if job.is_pending():
                if enqueue_configured:
                    continue
                job.phase = JobPhase.INQUEUE
            pending = self._pending_tasks(session, job)
            if pending is None:
                continue
            if job.grouped:
                if not self._collect_grouped(session, work, job):
                    continue
            elif job.job.network_topology is not None and self._topology_blocked(session, job, work.hard):
                continue
            else:
                work.tasks[job.key] = PriorityQueue(session.task_less, pending, key=session.task_key)
            if work.repeatable and not job.task_min and job.key in work.tasks and job.key not in work.hard:
                first = pending[0]
                one = (first.req, first.sig, first.role)
                if all((t.req, t.sig, t.role) == one and not t.task.nominated_node for t in pending):
                    work.shapes[job.key] = one
            if job.queue not in work.jobs:
                work.jobs[job.queue] = PriorityQueue(session.job_less, key=session.job_key)
                work.queues.push(session.queues[job.queue])
            work.jobs[job.queue].push(job)
        return work

    def _collect_grouped(self, session: SessionHandle, work: _Work, job: JobInfo) -> bool:
        """Whether a job with sub-group policies is served (its worksheet not empty), by the sub-group search; a
        job or sub-job with a network topology waits for the HyperNodes to be ready (its reason recorded)."""
        if not session.topology.ready and (
            job.job.network_topology is not None or any(p.network_topology for p in job.job.sub_group_policies)
        ):
            return not self._topology_blocked(session, job, set())
        if work.grouped is None:
            work.grouped = SubGroupSearch(session, bool(self.args["predicateErrorCacheEnable"]))
        return not work.grouped.organize(job).empty()

    @staticmethod
    def _pending_tasks(session: SessionHandle, job: JobInfo) -> list[TaskInfo] | None:
        """The job's pending tasks allocate places (not BestEffort), or None when there are none
        or the job is not valid (its reason recorded)."""
        counts = job.counts
        if not (counts[TaskStatus.PENDING] or counts[TaskStatus.PIPELINED] or counts[TaskStatus.ALLOCATED]):
            # Nothing to place and, the job being admitted, no reason reported at close for
            # it: job_valid (a pure vote) need not be asked.
            return None
        fit = session.job_valid(job)
        if fit is not None:
            session.set_reason(
                job, JobReason(ReasonKind.INVALID, fit.message, fit.plugin, {}, {"valid": job.valid_task_num()})
            )
            return None
        if not counts[TaskStatus.PENDING]:
            return None
        pending = [t for t in job.pending_tasks() if not t.best_effort]
        return pending or None

    @staticmethod
    def _topology_blocked(session: SessionHandle, job: JobInfo, hard: set[str]) -> bool:
        """Whether a job with a network topology waits for the HyperNodes to be ready (its reason
        recorded); else a job with a hard one joins ``hard`` (the HyperNode search)."""
        if not session.topology.ready:
            session.set_reason(
                job,
                JobReason(
                    ReasonKind.TOPOLOGY,
                    f"HyperNodes are not ready for scheduling: {session.topology.problem}",
                    "network-topology-aware",
                ),
            )
            return True
        topology = session.job_topology(job)
        if topology is not None and topology.hard:
            hard.add(job.key)
        return False

    def _serve_job(self, session: SessionHandle, work: _Work, queue: QueueInfo, job: JobInfo) -> None:
        """Place the tasks of ``job``, the next of ``queue``: commit its statement once the gang
        is ready and serve it again later while tasks are left; remember a failure for want of a
        node only, and repeat an identical one (see :meth:`_collect`)."""
        pending_jobs = work.jobs[queue.name]
        if work.grouped is not None and job.grouped:
            self._serve_grouped(session, work.grouped, queue, job, pending_jobs)
            return
        job_tasks = work.tasks[job.key]
        shape = work.shapes.get(job.key) if job.reason is None and not job.fit_errors else None
        generation = n_tasks = 0
        if shape is not None:
            generation = len(session.nodes.changes)
            n_tasks = len(job_tasks)
            if work.failing.get(shape) == generation:
                hit = work.failures.get(_failure_key(shape, queue.name, job, n_tasks))
                if hit is not None and hit[0] == generation:
                    self._repeat_failure(session, job, job_tasks.pop(), hit[1])
                    return
        if job.key in work.hard:
            remaining = self._allocate_for_job(session, queue, job, job_tasks)
            if remaining is not None and session.job_ready(job):
                remaining[0].commit()
                if remaining[1]:
                    work.tasks[job.key] = PriorityQueue(session.task_less, remaining[1], key=session.task_key)
                    pending_jobs.push(job)
            return
        stmt = self._allocate_tasks(session, queue, job, job_tasks)
        if stmt is not None and session.job_ready(job):
            stmt.commit()
            if job_tasks:
                pending_jobs.push(job)
        elif shape is not None and stmt is None and len(session.nodes.changes) == generation:
            errors = _node_failure(job)
            if errors is not None:
                work.failing[shape] = generation
                work.failures[_failure_key(shape, queue.name, job, n_tasks)] = (generation, errors)

    def _serve_grouped(
        self,
        session: SessionHandle,
        search: SubGroupSearch,
        queue: QueueInfo,
        job: JobInfo,
        jobs: PriorityQueue[JobInfo],
    ) -> None:
        """A job with sub-group policies: commit its placement once the gang is ready and serve it again later while
        sub-jobs are left; record why it found no HyperNode."""
        stmt = search.allocate_for_job(queue, job)
        if stmt is not None and session.job_ready(job):
            stmt.commit()
            search.commit(job)
            if not search.sheets[job.key].empty():
                jobs.push(job)
        elif stmt is None:
            order = [t for ts in search.sheets[job.key].tasks.values() for t in ts]
            topologies = [
                session.job_topology(job),
                *(session.sub_job_topology(job, s) for s in job.sub_jobs().values()),
            ]
            hard = any(t is not None and t.hard for t in topologies)
            if hard:
                self._topology_failure(session, job, order, search.tried.get(job.key, []))
            else:
                record_job_failure(session, job, 0)

    @staticmethod
    def _repeat_failure(session: SessionHandle, job: JobInfo, first: TaskInfo, errors: dict[str, int]) -> None:
        """What :meth:`_allocate_tasks` does for a job that fails like an earlier one: its first
        task (all have one shape) finds no node, with the same fit errors; the others are skipped
        or fail alike; nothing is placed, so the statement is empty and discarded."""
        job.fit_errors[first.uid] = (first.task.name, dict(errors), len(session.nodes))
        record_job_failure(session, job, 0)

    @staticmethod
    def _overused(session: SessionHandle, queue: QueueInfo, jobs: PriorityQueue[JobInfo]) -> None:
        while jobs:
            job = jobs.pop()
            session.set_reason(
                job,
                JobReason(
                    ReasonKind.QUEUE_OVERUSED,
                    f"queue {queue.name} is overused: its allocation reached its deserved share",
                    "proportion",
                    {},
                    {"queue": queue.name},
                ),
            )

    # -- the HyperNode search (jobs with a hard network topology) ---------------------------------

    def _allocate_for_job(
        self, session: SessionHandle, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo]
    ) -> tuple[Statement, list[TaskInfo]] | None:
        """Volcano's ``allocateForJob`` for a job without sub-group policies (its one sub-job has
        the job's topology): the job's HyperNode gradients from the top HyperNode, lowest tier
        first; in the first gradient where some HyperNode takes the gang (ready or pipelined), the
        one whose sub-job placement scored best (the first on ties). Returns the statement of that
        placement (applied) and the tasks left to place, or None."""
        order: list[TaskInfo] = []
        while tasks:
            order.append(tasks.pop())
        allocated = session.allocated_hyper_node(job)
        minimum = list(job.min_resources) if job.min_resources is not None else [0.0] * session.ndims
        tried: list[str] = []
        topo = session.topology
        for group in session.hyper_node_gradient(job, CLUSTER_TOP, allocated, minimum, "allocate"):
            ranked = session.hyper_node_rank(job, group) if all(not topo.children.get(h) for h in group) else None
            if ranked is not None:
                placed = self._first_leaf(session, queue, job, order, ranked, allocated, tried)
                if placed is not None:
                    return placed
                continue
            best: tuple[float, str, str] | None = None  # (score, job HyperNode, chosen sub-HyperNode)
            for hn in group:
                tried.append(hn)
                found = self._allocate_for_subjob(session, queue, job, order, hn, allocated)
                if found is None:
                    continue
                score, sub, stmt, _ = found
                took = len(stmt) > 0 and (session.job_ready(job) or session.job_pipelined(job))
                if took and (best is None or score > best[0]):
                    best = (score, hn, sub)
                stmt.discard()
            if best is None:
                continue
            job.fit_errors.clear()
            placed = self._allocate_in(session, queue, job, order, best[2], allocated)
            if placed is not None:
                return placed
        self._topology_failure(session, job, order, tried)
        return None

    def _first_leaf(
        self,
        session: SessionHandle,
        queue: QueueInfo,
        job: JobInfo,
        order: list[TaskInfo],
        ranked: list[str],
        allocated: str,
        tried: list[str],
    ) -> tuple[Statement, list[TaskInfo]] | None:
        """The job-level search over a gradient of HyperNodes without children, in the order of
        :meth:`Session.hyper_node_rank`: the sub-job's search inside a leaf is the leaf alone (if
        its idle or future idle covers the pending pods), scored alone, so the first leaf that
        takes the job is the one Volcano's search over all of them keeps (the best score, the
        first on ties), and the others need no dry run."""
        minimum = [0.0] * session.ndims
        for t in order:
            for d, v in enumerate(t.req):
                minimum[d] += v
        for hn in ranked:
            tried.append(hn)
            if session.hyper_node_gradient(job, hn, allocated, minimum, "allocate") != [[hn]]:
                continue
            job.fit_errors.clear()
            placed = self._allocate_in(session, queue, job, order, hn, allocated)
            if placed is None:
                continue
            if len(placed[0]) and (session.job_ready(job) or session.job_pipelined(job)):
                return placed
            placed[0].discard()
        return None

    def _allocate_for_subjob(
        self, session: SessionHandle, queue: QueueInfo, job: JobInfo, order: list[TaskInfo], hn: str, allocated: str
    ) -> tuple[float, str, Statement, list[TaskInfo]] | None:
        """Volcano's ``allocateForSubJob`` inside HyperNode ``hn``: the sub-job's gradients under
        ``hn``; in the first where a HyperNode takes its pods, the best by HyperNode order (the
        first on ties). Returns (score, that HyperNode, its applied statement, tasks left)."""
        minimum = [0.0] * session.ndims
        for t in order:
            for d, v in enumerate(t.req):
                minimum[d] += v
        for group in session.hyper_node_gradient(job, hn, allocated, minimum, "allocate"):
            fits: list[str] = []
            for sub in group:
                job.fit_errors.clear()
                placed = self._allocate_in(session, queue, job, order, sub, allocated)
                if placed is None:
                    continue
                if len(placed[0]):
                    fits.append(sub)
                placed[0].discard()
            if not fits:
                continue
            scores = session.hyper_node_scores(job, fits)
            chosen = fits[0]
            for name in fits[1:]:
                if scores[name] > scores[chosen]:
                    chosen = name
            job.fit_errors.clear()
            placed = self._allocate_in(session, queue, job, order, chosen, allocated)
            if placed is None:  # the same run over the same state: cannot happen
                return None
            return scores[chosen], chosen, placed[0], placed[1]
        return None

    def _allocate_in(
        self, session: SessionHandle, queue: QueueInfo, job: JobInfo, order: list[TaskInfo], hn: str, allocated: str
    ) -> tuple[Statement, list[TaskInfo]] | None:
        """Volcano's ``allocateResourcesForTasks`` over the nodes of HyperNode ``hn``: tasks in
        order until the job is ready; the statement (applied) and the tasks not reached when the
        job is ready or pipelined, else None (discarded)."""
        topo = session.topology
        inside = topo.mask(hn)
        stmt = Statement(session, "allocate")
        failed_shapes: set[Any] = set()
        failed_roles: set[str] = set()
        cache = bool(self.args["predicateErrorCacheEnable"])
        spans = allocated
        i = 0
        while i < len(order):
            task = order[i]
            i += 1
            if not session.allocatable(queue, task):
                continue
            shape = (task.role, task.req, task.sig)
            if cache and shape in failed_shapes:
                continue
            nodes = feasible_inside(session, task, inside, job, topo.nodes[hn])
            if len(nodes) == 0:
                failed_shapes.add(shape)
                failed_roles.add(task.role)
                if need_continue(job, failed_roles):
                    continue
                break
            session.job_hyper_nodes[job.key] = spans
            node, fits_idle = prioritize(session, task, nodes)
            if fits_idle:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
            leaf = topo.leaf[node]
            if leaf:
                spans = topo.lca(leaf, spans)
            if session.job_ready(job):
                break
        if session.job_ready(job) or session.job_pipelined(job):
            return stmt, order[i:]
        stmt.discard()
        return None

    @staticmethod
    def _topology_failure(session: SessionHandle, job: JobInfo, order: list[TaskInfo], tried: list[str]) -> None:
        """Why no HyperNode took the gang: the tiers tried and, above them, the tiers its
        ``highestTierAllowed`` forbids."""
        topology = session.job_topology(job)
        topo = session.topology
        highest = topology.highest if topology is not None else topo.top_tier
        need = [0.0] * session.ndims
        for t in order:
            for d, v in enumerate(t.req):
                need[d] += v
        wanted = ", ".join(f"{format_quantity(k, v)} {k}" for k, v in session.to_dict(need).items() if k != "pods")
        tiers = sorted({topo.tier[n] for n in tried})
        parts = [f"no tier-{t} HyperNode has {wanted} free for the gang" for t in tiers]
        if not tiers:
            parts.append(f"no HyperNode of tier {highest} or lower has {wanted} free for the gang")
        above = [t for t in topo.tiers if t > highest]
        if above:
            parts.append(f"tier {above[0]} is not allowed by highestTierAllowed ({highest})")
        fit = ""
        if job.fit_errors:
            fit = "; " + ssn_fit_text(next(iter(job.fit_errors.values()))[1])
        session.set_reason(
            job,
            JobReason(
                ReasonKind.TOPOLOGY,
                "; ".join(parts) + fit,
                "network-topology-aware",
                next(iter(job.fit_errors.values()))[1] if job.fit_errors else {},
                {"highest_tier_allowed": highest, "tiers_tried": tiers, "hypernodes_tried": len(tried)},
            ),
        )

    def _allocate_tasks(
        self, session: SessionHandle, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo]
    ) -> Statement | None:
        stmt = Statement(session, "allocate")
        failed_shapes: set[Any] = set()
        failed_roles: set[str] = set()
        cache = bool(self.args["predicateErrorCacheEnable"])
        placed = 0
        failed = False
        # A job with a (not hard) network topology: the HyperNode its pods span, for node order.
        tracks = job.job.network_topology is not None
        spans = session.allocated_hyper_node(job) if tracks else ""
        while tasks:
            task = tasks.pop()
            if not session.allocatable(queue, task):
                failed = True
                continue
            shape = (task.role, task.req, task.sig)
            if cache and shape in failed_shapes:
                continue
            if tracks:
                session.job_hyper_nodes[job.key] = spans
            choice = select_node(session, task, self.sample)
            if choice is None:
                record_fit_error(session, task)
                failed_shapes.add(shape)
                failed_roles.add(task.role)
                failed = True
                if need_continue(job, failed_roles):
                    continue
                break
            node, fits_idle = choice
            if fits_idle:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
            if tracks and session.topology.leaf[node]:
                spans = session.topology.lca(session.topology.leaf[node], spans)
            placed += 1
            if session.job_ready(job):
                break
        if session.job_ready(job) or session.job_pipelined(job):
            if failed and session.job_ready(job):
                record_job_failure(session, job, 0)
            return stmt
        stmt.discard()
        if failed or placed:
            record_job_failure(session, job, placed)
        return None
