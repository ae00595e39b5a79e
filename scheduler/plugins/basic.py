"""The priority, gang and conformance plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.cycle_state import PluginState
from scheduler.framework import (
    GangEvictable,
    JobOrder,
    JobPipelined,
    JobReady,
    JobStarving,
    JobValid,
    Preemptable,
    Reclaimable,
    SessionClose,
    SharedState,
    SubJobOrder,
    SubJobPipelined,
    SubJobReady,
    TaskOrder,
)
from scheduler.model import TaskStatus
from scheduler.points import Fit, Vote

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, SubJobInfo, TaskInfo

__all__ = ["ConformancePlugin", "GangPlugin", "PriorityPlugin"]


def _cmp(a: int, b: int) -> int:
    return (a < b) - (a > b)  # higher value first


class PriorityPlugin(SharedState, TaskOrder, JobOrder, SubJobOrder, Preemptable, GangEvictable, JobStarving):
    """Orders jobs and tasks by priority; victims must have lower (job or task) priority. Its cycle state is
    the session alone (:class:`PluginState`)."""

    name = "priority"
    has_job_order_key = True
    has_task_order_key = True

    def task_order(self, st: PluginState, a: TaskInfo, b: TaskInfo) -> int:
        """Higher task priority first."""
        return _cmp(a.priority, b.priority)

    def task_order_key(self, st: PluginState, task: TaskInfo) -> int:
        """Sort key of :meth:`task_order`."""
        return -task.priority

    def job_order(self, st: PluginState, a: JobInfo, b: JobInfo) -> int:
        """Higher job priority first."""
        return _cmp(a.priority, b.priority)

    def job_order_key(self, st: PluginState, job: JobInfo) -> int:
        """Sort key of :meth:`job_order`."""
        return -job.priority

    def sub_job_order(self, st: PluginState, a: SubJobInfo, b: SubJobInfo) -> int:
        """Higher sub-job priority (its highest task priority) first."""
        return _cmp(a.priority, b.priority)

    def preemptable(self, st: PluginState, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Other jobs' tasks with lower job priority; own job's tasks with lower task priority."""
        pjob = preemptor.job
        victims = []
        for c in candidates:
            if c.job.key not in st.session.jobs:
                continue
            if c.job is not pjob:
                if c.job.priority < pjob.priority:
                    victims.append(c)
            elif c.priority < preemptor.priority:
                victims.append(c)
        return victims

    def gang_evictable(
        self, st: PluginState, action: str, job: JobInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo] | None:
        """gangreclaim: every candidate (reclaim is about queues, not priorities); gangpreempt:
        the candidates of jobs with a lower priority than ``job``."""
        if action == "gangreclaim":
            return list(candidates)
        return [c for c in candidates if c.job.priority < job.priority]

    def job_starving(self, st: PluginState, job: JobInfo) -> bool:
        """Fewer tasks ready or pipelined than the job has."""
        return job.ready_num + job.counts[TaskStatus.PIPELINED] < len(job.tasks)


class GangPlugin(
    SharedState,
    JobValid,
    Preemptable,
    Reclaimable,
    GangEvictable,
    JobOrder,
    JobReady,
    JobPipelined,
    JobStarving,
    SubJobReady,
    SubJobPipelined,
    SubJobOrder,
    SessionClose,
):
    """All-or-nothing placement of ``minMember`` tasks (and ``minTaskMember`` per role, and ``minSubGroups``
    sub-groups of ``subGroupSize`` per sub-group policy). Its cycle state is the session alone."""

    name = "gang"
    has_job_order_key = True
    failures_repeatable = True

    def job_valid(self, st: PluginState, job: JobInfo) -> Fit | None:
        """Enough pods must exist (per role and in total) to ever satisfy the gang."""
        if not job.check_task_valid():
            return Fit("gang", "NotEnoughPodsOfTask", "Not enough valid pods of each task for gang-scheduling")
        if job.grouped and not job.check_sub_job_valid():
            return Fit("gang", "NotEnoughPodsOfTask", "Not enough valid subGroups of each task for gang-scheduling")
        valid = job.valid_task_num()
        if valid < job.min_available:
            return Fit(
                "gang",
                "NotEnoughTasks",
                f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}",
            )
        return None

    def _victims(self, st: PluginState, candidates: list[TaskInfo]) -> list[TaskInfo]:
        occupied: dict[str, int] = {}
        victims = []
        for c in candidates:
            job = c.job
            if job.key not in st.session.jobs:
                continue
            left = occupied.get(job.key)
            if left is None:
                left = job.ready_num
            if left > job.min_available:
                left -= 1
                victims.append(c)
            occupied[job.key] = left
        return victims

    def preemptable(self, st: PluginState, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """At most ``ready - minAvailable`` victims per job."""
        return self._victims(st, candidates)

    def reclaimable(self, st: PluginState, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """As preemptable."""
        return self._victims(st, candidates)

    def gang_evictable(
        self, st: PluginState, action: str, job: JobInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo] | None:
        """Every candidate: the gang actions keep victim jobs whole or above ``minAvailable``
        themselves (their safe and whole bundles)."""
        return list(candidates)

    def job_order(self, st: PluginState, a: JobInfo, b: JobInfo) -> int:
        """Jobs that are not ready first."""
        ra, rb = a.is_ready(), b.is_ready()
        if ra == rb:
            return 0
        return 1 if ra else -1

    def job_order_key(self, st: PluginState, job: JobInfo) -> bool:
        """Sort key of :meth:`job_order` (False, not ready, sorts first)."""
        return job.is_ready()

    def job_ready(self, st: PluginState, job: JobInfo) -> bool:
        """Gang satisfied: per-role minimums, minSubGroups ready sub-groups per policy and minMember."""
        return job.check_task_ready() and (not job.grouped or job.check_sub_jobs(False)) and job.is_ready()

    def job_pipelined(self, st: PluginState, job: JobInfo) -> Vote:
        """Permit when the gang is satisfied counting pipelined tasks, else reject."""
        if job.check_task_pipelined() and (not job.grouped or job.check_sub_jobs(True)) and job.is_pipelined():
            return Vote.PERMIT
        return Vote.REJECT

    def sub_job_ready(self, st: PluginState, sub: SubJobInfo) -> bool:
        """The sub-job's gang: ``subGroupSize`` tasks ready."""
        return sub.is_ready()

    def sub_job_pipelined(self, st: PluginState, sub: SubJobInfo) -> Vote:
        """Permit when the sub-job's gang is satisfied counting pipelined tasks, else reject."""
        return Vote.PERMIT if sub.is_pipelined() else Vote.REJECT

    def sub_job_order(self, st: PluginState, a: SubJobInfo, b: SubJobInfo) -> int:
        """Sub-jobs that are not ready first."""
        ra, rb = a.is_ready(), b.is_ready()
        if ra == rb:
            return 0
        return 1 if ra else -1

    def job_starving(self, st: PluginState, job: JobInfo) -> bool:
        """Fewer ready + pipelined tasks than minMember."""
        return job.is_starving()

    def on_session_close(self, st: PluginState, session: SessionHandle) -> None:
        """Mark jobs whose gang is not ready as unschedulable (drives the Unknown phase)."""
        for job in session.jobs.values():
            ready = job.check_task_ready() and job.is_ready()  # Volcano: not the sub-groups
            if job.tasks and not ready and not _gang_kept_by_releasing(job):
                session.unschedulable_jobs.add(job.key)


def _gang_kept_by_releasing(job: JobInfo) -> bool:
    """Volcano's ``shouldSkipUnschedulableForReleasing``: a job that is not ready only because
    some of its pods are terminating (Releasing, still on their nodes) is not marked
    unschedulable when it has no Pending or Pipelined pod and its scheduled pods (Running, Bound,
    Failed, Succeeded) plus those Releasing ones reach minAvailable."""
    c = job.counts
    if not c[TaskStatus.RELEASING] or c[TaskStatus.PENDING] or c[TaskStatus.PIPELINED]:
        return False
    releasing = sum(1 for t in job.tasks.values() if t.status == TaskStatus.RELEASING and t.node >= 0)
    if not releasing:
        return False
    scheduled = c[TaskStatus.RUNNING] + c[TaskStatus.BOUND] + c[TaskStatus.FAILED] + c[TaskStatus.SUCCEEDED]
    return scheduled + releasing >= job.min_available


_CRITICAL = frozenset({"system-cluster-critical", "system-node-critical"})


class ConformancePlugin(SharedState, Preemptable, Reclaimable, GangEvictable):
    """Never evicts critical pods (system-*-critical priority classes, kube-system)."""

    name = "conformance"

    @staticmethod
    def _allowed(candidates: list[TaskInfo]) -> list[TaskInfo]:
        return [c for c in candidates if c.task.priority_class_name not in _CRITICAL and c.namespace != "kube-system"]

    def preemptable(self, st: PluginState, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Every non-critical candidate."""
        return self._allowed(candidates)

    def reclaimable(self, st: PluginState, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Every non-critical candidate."""
        return self._allowed(candidates)

    def gang_evictable(
        self, st: PluginState, action: str, job: JobInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo] | None:
        """Every non-critical candidate."""
        return self._allowed(candidates)
