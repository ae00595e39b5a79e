"""Mutable per-session views of tasks, jobs and queues (the snapshot itself is never mutated)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scheduler.model import Job, JobPhase, NetworkTopology, Queue, QueueState, SubGroupPolicy, Task, TaskStatus

if TYPE_CHECKING:
    from scheduler.result import JobReason

__all__ = ["ALLOCATED", "JobInfo", "QueueInfo", "SubJobInfo", "TaskInfo", "sub_job_id"]

#: Statuses whose requests count as allocated (Volcano's AllocatedStatus).
ALLOCATED = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
#: Statuses counted by the ready number.
READY = ALLOCATED | {TaskStatus.SUCCEEDED}
#: Statuses that count as placed at session close.
SCHEDULED = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED})
#: Statuses that hold node resources (everything on a node that has not terminated).
ON_NODE = ALLOCATED | {TaskStatus.PIPELINED, TaskStatus.RELEASING}
#: Every status, in declaration order (iterating the enum class itself is slow).
_STATUSES = tuple(TaskStatus)


def _name_index(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


_EMPTY_SIG: tuple[Any, ...] = ((), (), (), ())


def derive(req: tuple[float, ...]) -> tuple[bool, tuple[float, float]]:
    """``(best_effort, nz)`` of a request vector: BestEffort means no request on any dimension
    but pods; ``nz`` holds Kubernetes' non-zero cpu/memory defaults (100m, 200Mi) for scoring."""
    best_effort = req[0] <= 0 and req[1] <= 0 and all(v <= 0 for v in req[3:])
    return best_effort, (req[0] or 100.0, req[1] or 200.0 * 1024 * 1024)


class TaskInfo:
    """A pod inside a session: its snapshot value plus mutable status and node."""

    __slots__ = (
        "best_effort",
        "creation",
        "index",
        "job",
        "key",
        "namespace",
        "node",
        "nz",
        "preemptable",
        "priority",
        "req",
        "role",
        "sig",
        "status",
        "task",
        "uid",
    )

    def __init__(
        self,
        task: Task,
        job: JobInfo,
        req: tuple[float, ...],
        priority: int,
        derived: tuple[bool, tuple[float, float]] | None = None,
    ) -> None:
        self.task = task
        self.uid = task.uid
        self.key = task.key
        self.namespace = task.namespace
        self.job = job
        self.status = task.status
        self.node = -1
        self.req = req
        self.priority = priority
        self.preemptable = task.preemptable
        self.role = task.role
        self.index = _name_index(task.name)
        self.creation = task.creation
        if derived is None:
            derived = derive(req)
        self.best_effort, self.nz = derived
        if task.node_selector or task.required_affinity or task.tolerations or task.preferred_affinity:
            self.sig: tuple[Any, ...] = (
                tuple(sorted(task.node_selector.items())),
                task.required_affinity,
                task.tolerations,
                task.preferred_affinity,
            )
        else:
            self.sig = _EMPTY_SIG

    def __repr__(self) -> str:
        return f"TaskInfo({self.key}, {self.status}, node={self.node})"


class JobInfo:
    """A PodGroup and its tasks inside a session, with incrementally kept status counts."""

    __slots__ = (
        "_sub_jobs",
        "allocated",
        "be_pending",
        "best_effort_tasks",
        "closed",
        "counts",
        "creation",
        "fit_errors",
        "grouped",
        "job",
        "key",
        "last_tx_pending",
        "min_available",
        "min_resources",
        "phase",
        "preemptable",
        "priority",
        "queue",
        "ready",
        "reason",
        "role_counts",
        "role_failed",
        "task_min",
        "task_min_total",
        "tasks",
        "total_request",
        "uid",
    )

    def __init__(self, job: Job, priority: int, ndims: int) -> None:
        self.job = job
        self.key = job.key
        self.uid = job.uid
        self.queue = job.queue
        self.min_available = job.min_member
        self.task_min = {k: v for k, v in job.min_task_member.items() if v > 0}
        self.task_min_total = sum(job.min_task_member.values())
        self.min_resources: tuple[float, ...] | None = None
        self.priority = priority
        self.preemptable = bool(job.preemptable)
        self.phase = job.phase
        self.creation = job.creation
        self.tasks: dict[str, TaskInfo] = {}
        self.counts: dict[TaskStatus, int] = dict.fromkeys(_STATUSES, 0)
        self.role_counts: dict[str, dict[TaskStatus, int]] = {}
        self.allocated = [0.0] * ndims
        self.total_request = [0.0] * ndims
        self.be_pending = 0
        #: Number of BestEffort tasks (any status; fixed at open).
        self.best_effort_tasks = 0
        self.ready = 0
        self.fit_errors: dict[str, tuple[str, dict[str, int], int]] = {}
        self.role_failed: set[str] = set()
        self.reason: JobReason | None = None
        self.last_tx_pending = 0
        #: Phase and reason at close while untouched by a cycle (see ``Session.close``).
        self.closed: tuple[bool, JobPhase, JobReason | None] | None = None
        #: Whether the PodGroup has sub-group policies (Volcano's ``ContainsSubJobPolicy``).
        self.grouped = bool(job.sub_group_policies)
        self._sub_jobs: tuple[dict[str, SubJobInfo], dict[str, SubJobInfo]] | None = None

    def __repr__(self) -> str:
        return f"JobInfo({self.key})"

    # -- bookkeeping -------------------------------------------------------------------------

    def add_task(self, t: TaskInfo) -> None:
        """Add a task and count its status."""
        self.tasks[t.uid] = t
        total = self.total_request
        for i, v in enumerate(t.req):
            if v:
                total[i] += v
        if t.best_effort:
            self.best_effort_tasks += 1
        self._count(t, t.status, 1)

    def set_status(self, t: TaskInfo, status: TaskStatus) -> None:
        """Move ``t`` to ``status`` keeping counts and allocated resources current."""
        self._count(t, t.status, -1)
        t.status = status
        self._count(t, status, 1)

    def _count(self, t: TaskInfo, status: TaskStatus, delta: int) -> None:
        self.counts[status] += delta
        if status in READY:
            self.ready += delta
        if self.task_min and t.role in self.task_min:
            rc = self.role_counts.get(t.role)
            if rc is None:
                rc = self.role_counts[t.role] = dict.fromkeys(_STATUSES, 0)
            rc[status] += delta
        if status in ALLOCATED:
            alloc = self.allocated
            for i, v in enumerate(t.req):
                if v:
                    alloc[i] += v * delta
        elif status == TaskStatus.PENDING and t.best_effort:
            self.be_pending += delta

    # -- derived predicates (Volcano's JobInfo methods) ----------------------------------------

    @property
    def ready_num(self) -> int:
        """Bound + Binding + Running + Allocated + Succeeded."""
        return self.ready

    def is_ready(self) -> bool:
        """ready-number + pending BestEffort ≥ minAvailable."""
        return self.ready_num + self.be_pending >= self.min_available

    def is_pipelined(self) -> bool:
        """ready-number + Pipelined + pending BestEffort ≥ minAvailable."""
        return self.ready_num + self.counts[TaskStatus.PIPELINED] + self.be_pending >= self.min_available

    def is_starving(self) -> bool:
        """ready-number + Pipelined < minAvailable."""
        return self.ready_num + self.counts[TaskStatus.PIPELINED] < self.min_available

    def valid_task_num(self) -> int:
        """Allocated-status + Succeeded + Pipelined + Pending tasks."""
        c = self.counts
        return self.ready_num + c[TaskStatus.PIPELINED] + c[TaskStatus.PENDING]

    def is_pending(self) -> bool:
        """Whether the PodGroup has not been admitted (phase Pending)."""
        return self.phase == JobPhase.PENDING

    def _roles_checked(self) -> bool:
        return bool(self.task_min) and self.min_available >= self.task_min_total

    def _role_count(self, role: str, statuses: frozenset[TaskStatus]) -> int:
        rc = self.role_counts.get(role)
        if rc is None:
            return 0
        return sum(rc[s] for s in statuses)

    def _role_be_pending(self, role: str) -> int:
        return sum(
            1 for t in self.tasks.values() if t.role == role and t.status == TaskStatus.PENDING and t.best_effort
        )

    def check_task_valid(self) -> bool:
        """Every role with a minimum has enough allocated/Succeeded/Pipelined/Pending tasks."""
        if not self._roles_checked():
            return True
        statuses = READY | {TaskStatus.PIPELINED, TaskStatus.PENDING}
        return all(self._role_count(r, statuses) >= m for r, m in self.task_min.items())

    def check_task_ready(self) -> bool:
        """Every role with a minimum has enough allocated/Succeeded (+BestEffort pending)."""
        if not self._roles_checked():
            return True
        return all(self._role_count(r, READY) + self._role_be_pending(r) >= m for r, m in self.task_min.items())

    def check_task_pipelined(self) -> bool:
        """As :meth:`check_task_ready`, counting Pipelined tasks too."""
        if not self._roles_checked():
            return True
        statuses = READY | {TaskStatus.PIPELINED}
        return all(self._role_count(r, statuses) + self._role_be_pending(r) >= m for r, m in self.task_min.items())

    def check_task_starving(self) -> bool:
        """Some role has fewer allocated/Succeeded/Pipelined tasks than its minimum."""
        if not self._roles_checked():
            return False
        statuses = READY | {TaskStatus.PIPELINED}
        return any(self._role_count(r, statuses) < m for r, m in self.task_min.items())

    def pending_tasks(self) -> list[TaskInfo]:
        """Return the Pending, non-gated tasks."""
        return [t for t in self.tasks.values() if t.status == TaskStatus.PENDING and not t.task.scheduling_gated]

    # -- sub-jobs (Volcano's SubJobInfo, for PodGroups with a subGroupPolicy) ----------------------

    def sub_jobs(self) -> dict[str, SubJobInfo]:
        """The job's sub-jobs by id (built on first use; the tasks' grouping never changes in a session)."""
        if self._sub_jobs is None:
            self._sub_jobs = _build_sub_jobs(self)
        return self._sub_jobs[0]

    def sub_job_of(self, task: TaskInfo) -> SubJobInfo | None:
        """The sub-job of ``task`` (None for a job without sub-group policies)."""
        if not self.grouped:
            return None
        if self._sub_jobs is None:
            self._sub_jobs = _build_sub_jobs(self)
        return self._sub_jobs[1].get(task.uid)

    def min_sub_jobs(self) -> dict[str, int]:
        """Per sub-group policy (its group id), ``minSubGroups`` (Volcano's ``MinSubJobs``)."""
        return {f"{self.key}/{p.name}": p.min_groups or 0 for p in self.job.sub_group_policies}

    def check_sub_job_valid(self) -> bool:
        """Every policy has at least ``minSubGroups`` sub-jobs (Volcano's ``CheckSubJobValid``)."""
        count: dict[str, int] = {}
        for sub in self.sub_jobs().values():
            count[sub.gid] = count.get(sub.gid, 0) + 1
        return all(count.get(gid, 0) >= least for gid, least in self.min_sub_jobs().items())

    def check_sub_jobs(self, pipelined: bool) -> bool:
        """At least ``minSubGroups`` sub-jobs of every policy are ready (or pipelined: Volcano's
        ``CheckSubJobReady`` / ``CheckSubJobPipelined``)."""
        count: dict[str, int] = {}
        for sub in self.sub_jobs().values():
            if sub.is_pipelined() if pipelined else sub.is_ready():
                count[sub.gid] = count.get(sub.gid, 0) + 1
        return all(count.get(gid, 0) >= least for gid, least in self.min_sub_jobs().items() if least)


class SubJobInfo:
    """A sub-group of a job's tasks (Volcano's ``SubJobInfo``): the tasks one sub-group policy groups by equal
    label values, or the job's other tasks (its default sub-job, id the job's key). Its gang is ``min_available``
    (``subGroupSize``; the default sub-job: 1, or, without policies, the job's minMember); its network topology is
    the policy's (the default sub-job's: the job's); ``priority`` the highest of its tasks' (at least 0);
    ``match_index`` its first label value when a number (else 0), which orders sub-jobs."""

    __slots__ = ("gid", "match_index", "min_available", "network_topology", "priority", "tasks", "uid")

    def __init__(
        self, gid: str, uid: str, min_available: int, network_topology: NetworkTopology | None, match_index: int
    ) -> None:
        self.gid = gid
        self.uid = uid
        self.min_available = min_available
        self.network_topology = network_topology
        self.match_index = match_index
        self.priority = 0
        self.tasks: dict[str, TaskInfo] = {}

    def __repr__(self) -> str:
        return f"SubJobInfo({self.uid})"

    def add(self, t: TaskInfo) -> None:
        self.tasks[t.uid] = t
        self.priority = max(self.priority, t.priority)

    def ready_num(self) -> int:
        """Allocated, Binding, Bound, Running and Succeeded tasks."""
        return sum(1 for t in self.tasks.values() if t.status in READY)

    def _be_pending(self) -> int:
        return sum(1 for t in self.tasks.values() if t.status == TaskStatus.PENDING and t.best_effort)

    def is_ready(self) -> bool:
        """ready + pending BestEffort ≥ minAvailable (Volcano's ``SubJobInfo.IsReady``)."""
        return self.ready_num() + self._be_pending() >= self.min_available

    def is_pipelined(self) -> bool:
        """ready + Pipelined + pending BestEffort ≥ minAvailable."""
        pipelined = sum(1 for t in self.tasks.values() if t.status == TaskStatus.PIPELINED)
        return self.ready_num() + pipelined + self._be_pending() >= self.min_available

    def pending(self) -> list[TaskInfo]:
        """The Pending tasks."""
        return [t for t in self.tasks.values() if t.status == TaskStatus.PENDING]


#: What Go's ``strconv.Atoi`` reads as a number.
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def _hash_id(text: str) -> str:
    """Volcano's id of an over-long sub-job name: the FNV-1a hash of ``text`` in decimal, each digit mapped as
    Kubernetes' ``rand.SafeEncodeString`` maps bytes."""
    h = 0x811C9DC5
    for b in text.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    alphanums = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(alphanums[b % len(alphanums)] for b in str(h).encode())


def sub_job_id(job: str, policy: str, values: list[str]) -> str:
    """Volcano's ``getSubJobID``: ``<job>/<policy>-<values joined by ->`` (a hash past 128 characters)."""
    name = "-".join(values)
    if len(name) > 128:
        name = _hash_id(name)
    return f"{job}/{policy}-{name}"


def _match_values(policy: SubGroupPolicy, labels: Mapping[str, str]) -> list[str]:
    """Volcano's ``getSubJobMatchValues``: the pod's values of the policy's keys ([]: the policy takes it not)."""
    if not policy.selects(labels) or not policy.match_label_keys:
        return []
    values = [labels.get(k, "") for k in policy.match_label_keys]
    return values if all(values) else []


def _build_sub_jobs(job: JobInfo) -> tuple[dict[str, SubJobInfo], dict[str, SubJobInfo]]:
    """The job's sub-jobs and each task's (Volcano's ``addTaskToSubJob``, tasks in uid order)."""
    subs: dict[str, SubJobInfo] = {}
    of_task: dict[str, SubJobInfo] = {}
    policies = job.job.sub_group_policies
    for uid in sorted(job.tasks):
        t = job.tasks[uid]
        sub: SubJobInfo | None = None
        for policy in policies:
            values = _match_values(policy, t.task.labels)
            if values:
                sid = sub_job_id(job.key, policy.name, values)
                sub = subs.get(sid)
                if sub is None:
                    index = int(values[0]) if _DECIMAL.fullmatch(values[0]) else 0
                    size = policy.size if policy.size is not None else 1
                    sub = subs[sid] = SubJobInfo(f"{job.key}/{policy.name}", sid, size, policy.network_topology, index)
                break
        if sub is None:
            sub = subs.get(job.key)
            if sub is None:
                size = 1 if policies else job.min_available
                sub = subs[job.key] = SubJobInfo(job.key, job.key, size, job.job.network_topology, 0)
        sub.add(t)
        of_task[uid] = sub
    return subs, of_task


class QueueInfo:
    """A queue inside a session. Plugins keep their own per-queue attributes."""

    __slots__ = ("children", "creation", "name", "parent", "priority", "queue", "reclaimable", "uid", "weight")

    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        self.name = queue.name
        self.uid = queue.uid or queue.name
        self.weight = max(queue.weight, 1)
        self.priority = queue.priority
        self.reclaimable = queue.reclaimable
        self.parent = queue.parent or ("" if queue.name == "root" else "root")
        self.creation = queue.creation
        self.children: list[str] = []

    @property
    def is_open(self) -> bool:
        """Whether the queue accepts new work (state Open)."""
        return self.queue.state == QueueState.OPEN

    def __repr__(self) -> str:
        return f"QueueInfo({self.name})"
