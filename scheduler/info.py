"""Mutable per-session views of tasks, jobs and queues (the snapshot itself is never mutated)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.model import Job, JobPhase, Queue, QueueState, Task, TaskStatus

if TYPE_CHECKING:
    from scheduler.result import JobReason

__all__ = ["ALLOCATED", "JobInfo", "QueueInfo", "TaskInfo"]

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
        "allocated",
        "be_pending",
        "best_effort_tasks",
        "closed",
        "counts",
        "creation",
        "fit_errors",
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
