"""Allocate's search for a job with sub-group policies: its sub-jobs placed HyperNode by HyperNode.

Volcano's ``allocateForJob`` and ``allocateForSubJob`` (``pkg/scheduler/actions/allocate``, read for behaviour),
for a PodGroup with a ``subGroupPolicy`` (Volcano's sub-jobs, :class:`scheduler.info.SubJobInfo`):

* the job's worksheet (``organizeJobWorksheet``): every sub-job with pending tasks (not BestEffort), its tasks in
  task order; sub-jobs in sub-job order, those needed to reach each policy's ``minSubGroups`` (the first ones not
  ready, counting the ready ones) first;
* the job's HyperNode gradients (by the job's own topology, from the top HyperNode); in each, every HyperNode is
  tried: the sub-jobs are placed in turn inside it, each by its own gradients under it (its topology, the
  HyperNode its placed pods span, its pending request), in each the HyperNodes where its tasks go are compared by
  HyperNode order and the best kept, until the job is ready; a HyperNode where the job ends ready or pipelined
  counts with the summed scores of its sub-jobs' HyperNodes, and the best of a gradient (the first on ties) is
  placed again and kept;
* a sub-job is placed inside a HyperNode as a job is (``allocateResourcesForTasks``): tasks in order, each on
  the best node of the HyperNode, until the sub-job's gang is ready; a task finding no node ends the sub-job
  unless the job's and the sub-job's gangs leave room (``NeedContinueAllocating``); kept when ready or
  pipelined.

The HyperNodes the job and each sub-job span are found from their placed pods when allocate starts (Volcano's
``recoverAllocatedHyperNode``: a sub-job with a topology, the lowest HyperNode holding its placed pods; the job,
their common ancestor) and, as Volcano's allocate records its decisions, widened to the HyperNodes chosen when the
job's placement is committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.actions.common import feasible_inside, idle_mask, prioritize
from scheduler.info import ALLOCATED, JobInfo, QueueInfo, SubJobInfo, TaskInfo
from scheduler.points import IntArray
from scheduler.pq import PriorityQueue
from scheduler.statement import Statement
from scheduler.topology import CLUSTER_TOP

if TYPE_CHECKING:
    from collections.abc import Callable

    from scheduler.handle import SessionHandle

__all__ = ["SubGroupSearch", "Worksheet"]

_Placements = list[tuple[bool, TaskInfo, int]]


@dataclass(slots=True)
class Worksheet:
    """Volcano's ``JobWorksheet``: the sub-jobs left to place, in order, and each one's tasks left."""

    less: Callable[[SubJobInfo, SubJobInfo], bool]
    subs: PriorityQueue[SubJobInfo]
    tasks: dict[str, list[TaskInfo]] = field(default_factory=dict)

    def clone(self) -> Worksheet:
        return Worksheet(
            self.less, PriorityQueue(self.less, self.subs.items()), {k: list(v) for k, v in self.tasks.items()}
        )

    def empty(self) -> bool:
        return not self.subs


@dataclass(slots=True)
class _Attempt:
    """The job placed inside one HyperNode of a gradient: its score, what it placed, what is left."""

    score: float
    hyper_node: str
    placements: _Placements
    sheet: Worksheet
    decisions: dict[str, str]


class SubGroupSearch:
    """One allocate run's search for the jobs with sub-group policies (see the module docstring)."""

    def __init__(self, session: SessionHandle, cache: bool) -> None:
        self.session = session
        self.cache = cache
        #: The HyperNode each job and each sub-job spans (Volcano's ``AllocatedHyperNode``).
        self.job_spans: dict[str, str] = {}
        self.sub_spans: dict[str, str] = {}
        self.sheets: dict[str, Worksheet] = {}
        #: Per job whose placement was found: the job's HyperNode and each sub-job's, applied on commit.
        self._decisions: dict[str, tuple[str, dict[str, str]]] = {}
        #: The HyperNodes the last search of each job tried (for its reason).
        self.tried: dict[str, list[str]] = {}

    # -- the worksheet ---------------------------------------------------------------------------

    def organize(self, job: JobInfo) -> Worksheet:
        """The job's worksheet (Volcano's ``organizeJobWorksheet``); the HyperNodes it spans recovered."""
        session = self.session
        subs = job.sub_jobs()
        count: dict[str, int] = {}
        waiting: list[SubJobInfo] = []
        for sub in subs.values():
            if session.sub_job_ready(job, sub):
                count[sub.gid] = count.get(sub.gid, 0) + 1
            else:
                waiting.append(sub)
        ordered = PriorityQueue(session.sub_job_less, waiting)
        required: set[str] = set()
        least = job.min_sub_jobs()
        while ordered:
            sub = ordered.pop()
            if count.get(sub.gid, 0) < least.get(sub.gid, 0):
                required.add(sub.uid)
                count[sub.gid] = count.get(sub.gid, 0) + 1

        def less(a: SubJobInfo, b: SubJobInfo) -> bool:
            ra, rb = a.uid in required, b.uid in required
            return ra if ra != rb else session.sub_job_less(a, b)

        sheet = Worksheet(less, PriorityQueue(less))
        for sub in subs.values():
            pending = [t for t in sub.pending() if not t.task.scheduling_gated and not t.best_effort]
            if pending:
                queue = PriorityQueue(session.task_less, pending, key=session.task_key)
                sheet.tasks[sub.uid] = [queue.pop() for _ in range(len(pending))]
                sheet.subs.push(sub)
        self._recover(job)
        self.sheets[job.key] = sheet
        return sheet

    def _recover(self, job: JobInfo) -> None:
        """Volcano's ``recoverAllocatedHyperNode``: each sub-job with a topology spans the lowest HyperNode holding
        its placed pods, the job the common ancestor of those."""
        topo = self.session.topology
        spans = ""
        for sub in job.sub_jobs().values():
            if sub.network_topology is None:
                continue
            placed = sorted({t.node for t in sub.tasks.values() if t.node >= 0 and t.status in ALLOCATED})
            hn = topo.lowest_holding(placed)
            self.sub_spans[sub.uid] = hn
            if hn:
                spans = topo.lca(spans, hn)
        self.job_spans[job.key] = spans

    # -- the job ---------------------------------------------------------------------------------

    def allocate_for_job(self, queue: QueueInfo, job: JobInfo) -> Statement | None:
        """Volcano's ``allocateForJob``: the statement (applied) of the best HyperNode of the first gradient where
        the job ends ready or pipelined, its worksheet then what is left; None when no HyperNode takes it."""
        session = self.session
        sheet = self.sheets[job.key]
        if sheet.empty():
            return None
        before = {uid: self.sub_spans.get(uid, "") for uid in sheet.tasks}
        minimum = list(job.min_resources) if job.min_resources is not None else [0.0] * session.ndims
        tried = self.tried[job.key] = []
        for group in session.hyper_node_gradient(job, CLUSTER_TOP, self.job_spans[job.key], minimum, "allocate"):
            best: _Attempt | None = None
            for hn in group:
                tried.append(hn)
                attempt = self._try_job_in(queue, job, sheet, hn)
                self.sub_spans.update(before)  # Volcano's RecoverSubJobStatus
                if attempt is not None and (best is None or attempt.score > best.score):
                    best = attempt
            if best is None:
                continue
            final = Statement(session, "allocate")
            final.replay(best.placements)
            self.sheets[job.key] = best.sheet
            self._decisions[job.key] = (best.hyper_node, best.decisions)
            return final
        return None

    def _try_job_in(self, queue: QueueInfo, job: JobInfo, sheet: Worksheet, hn: str) -> _Attempt | None:
        """The job's sub-jobs placed in turn inside HyperNode ``hn`` (a dry run, undone): the attempt when the job
        ends ready or pipelined."""
        session = self.session
        job.fit_errors.clear()
        copy = sheet.clone()
        stmts: list[Statement] = []
        score = 0.0
        decisions: dict[str, str] = {}
        while copy.subs:
            sub = copy.subs.pop()
            found = self._allocate_for_sub_job(queue, job, sub, copy, hn, decisions)
            if found is None:
                continue
            stmts.append(found[0])
            score += found[1]
            if copy.tasks[sub.uid]:
                copy.subs.push(sub)
            if session.job_ready(job):
                break
        placements = [p for s in stmts for p in s.placements()]
        took = bool(placements) and (session.job_ready(job) or session.job_pipelined(job))
        for s in reversed(stmts):
            s.discard()
        return _Attempt(score, hn, placements, copy, decisions) if took else None

    def commit(self, job: JobInfo) -> None:
        """The job's placement is committed: it and its sub-jobs span the HyperNodes chosen too (Volcano's
        ``UpdateDecisionToJob``)."""
        decided = self._decisions.pop(job.key, None)
        if decided is None:
            return
        topo = self.session.topology
        self.job_spans[job.key] = topo.lca(self.job_spans.get(job.key, ""), decided[0])
        for uid, hn in decided[1].items():
            self.sub_spans[uid] = topo.lca(self.sub_spans.get(uid, ""), hn)

    # -- a sub-job ---------------------------------------------------------------------------------

    def _allocate_for_sub_job(
        self, queue: QueueInfo, job: JobInfo, sub: SubJobInfo, sheet: Worksheet, root: str, decisions: dict[str, str]
    ) -> tuple[Statement, float] | None:
        """Volcano's ``allocateForSubJob`` under ``root``: in the first of the sub-job's gradients where its tasks
        go into some HyperNode, the best one by HyperNode order (the first on ties), placed (its score)."""
        session = self.session
        tasks = sheet.tasks.get(sub.uid)
        if not tasks:
            return None
        spans = self.sub_spans.get(sub.uid, "")
        minimum = [0.0] * session.ndims
        for t in sub.pending():
            for d, v in enumerate(t.req):
                minimum[d] += v
        for group in session.sub_job_gradient(job, sub, root, spans, minimum, "allocate"):
            fits: dict[str, tuple[_Placements, list[TaskInfo]]] = {}
            for hn in group:
                for uid in sub.tasks:
                    job.fit_errors.pop(uid, None)
                placed = self._place(queue, job, sub, tasks, hn, spans)
                if placed is None:
                    continue
                stmt, left = placed
                if len(stmt):
                    fits[hn] = (stmt.placements(), left)
                stmt.discard()
            if not fits:
                continue
            names = list(fits)
            scores = session.hyper_node_scores(sub, names)
            chosen = names[0]
            for name in names[1:]:
                if scores[name] > scores[chosen]:
                    chosen = name
            final = Statement(session, "allocate")
            final.replay(fits[chosen][0])
            spans = session.topology.lca(spans, chosen)
            self.sub_spans[sub.uid] = decisions[sub.uid] = spans
            sheet.tasks[sub.uid] = fits[chosen][1]
            return final, scores[chosen]
        return None

    def _place(
        self, queue: QueueInfo, job: JobInfo, sub: SubJobInfo, order: list[TaskInfo], hn: str, spans: str
    ) -> tuple[Statement, list[TaskInfo]] | None:
        """Volcano's ``allocateResourcesForTasks`` for a sub-job over the nodes of HyperNode ``hn``: its statement
        (applied) and the tasks not reached when the sub-job is ready or pipelined, else None (undone)."""
        session = self.session
        topo = session.topology
        inside = topo.mask(hn)
        stmt = Statement(session, "allocate")
        failed: set[object] = set()
        track = sub.network_topology is not None
        i = 0
        while i < len(order):
            task = order[i]
            i += 1
            if not session.allocatable(queue, task):
                continue
            shape = (task.role, task.req, task.sig)
            if self.cache and shape in failed:
                continue
            nodes = feasible_inside(session, task, inside, job, topo.nodes[hn])
            if len(nodes) == 0:
                failed.add(shape)
                if _need_continue(job, sub):
                    continue
                break
            if track:
                session.job_hyper_nodes[job.key] = spans
            node, fits_idle = self._best_node(task, nodes)
            if fits_idle:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
            if track and topo.leaf[node]:
                spans = topo.lca(topo.leaf[node], spans)
            if session.sub_job_ready(job, sub):
                break
        if session.sub_job_ready(job, sub) or session.sub_job_pipelined(job, sub):
            return stmt, order[i:]
        stmt.discard()
        return None

    def _best_node(self, task: TaskInfo, nodes: IntArray) -> tuple[int, bool]:
        """The task's nominated node when it is a candidate (Volcano tries it first), else the best candidate."""
        session = self.session
        nominated = session.nodes.index.get(task.task.nominated_node, -1) if task.task.nominated_node else -1
        if nominated >= 0 and nominated in set(nodes.tolist()):
            return nominated, bool(idle_mask(session, task)[nominated])
        return prioritize(session, task, nodes)


def _need_continue(job: JobInfo, sub: SubJobInfo) -> bool:
    """Volcano's ``NeedContinueAllocating`` for a job with sub-group policies."""
    return job.min_available != len(job.tasks) and sub.min_available < len(sub.tasks)
