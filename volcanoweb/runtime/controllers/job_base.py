"""The job controller's view of one locked job: its rows (read once per reconcile), events and status writes.

:class:`JobBase` is what every part of the job controller works on (``job_pods``, ``job_actions``,
``job_events``, ``job``): the job row, the controller's :class:`~volcanoweb.runtime.models.JobRecord`,
the cached pods, PodGroup and pod records, and :meth:`JobBase.write_status`, the one writer of the job's
status.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from volcanoweb.clusters.backends.base import ClusterBackend
from volcanoweb.jobs.models import EventType, Job, Pod, PodGroup, Task
from volcanoweb.jobs.services import record_event
from volcanoweb.manifests import render
from volcanoweb.queues.models import Queue
from volcanoweb.runtime import state as S
from volcanoweb.runtime.controllers.job_writes import Prefetched, Writes
from volcanoweb.runtime.models import ArmedAction, JobRecord, PodRecord
from volcanoweb.runtime.plugins import JobContext, job_plugins

#: Phases a job rests in: a change to one is recorded as an event (JobCompleted, JobFailed, ...).
FINAL_PHASES = frozenset({S.COMPLETED, S.FAILED, S.TERMINATED, S.ABORTED})


class ControllerError(Exception):
    """An action could not be completed (the request is retried by the next reconcile)."""


def job_record(job: Job) -> tuple[JobRecord, bool]:
    """Return (creating it) the controller's record of a job, and whether it was created."""
    plugins = sorted(job.spec.get("plugins") or {})
    return JobRecord.objects.get_or_create(
        job_id=job.pk,
        defaults={"job_uid": job.uid, "namespace": job.namespace, "name": job.name, "resources": {"plugins": plugins}},
    )


class JobBase:
    """One locked job's rows and status, which every part of the job controller works on."""

    def __init__(
        self,
        job: Job,
        backend: ClusterBackend,
        now: datetime,
        prefetched: Prefetched | None = None,
        writes: Writes | None = None,
    ) -> None:
        self.job = job
        self.backend = backend
        self.now = now
        self.writes = writes if writes is not None else Writes(backend, deferred=False)
        if prefetched is not None and prefetched.record is not None:
            self.record, created = prefetched.record, False
        elif prefetched is not None:  # the batch read every record of its jobs: this job has none
            self.record, created = self.writes.new_record(job), True
        else:
            self.record, created = job_record(job)
        self.plugins = job_plugins(job.spec)
        controlled = dict((job.status or {}).get("controlledResources") or {})
        self.ctx = JobContext(job.name, job.namespace, str(job.uid), job.spec, backend, controlled)
        self.executed: list[str] = []
        # Read once per reconcile and kept up to date by this controller's own writes (the job row is
        # locked; a concurrent change by the scheduler or the backend mirror asks for another sync).
        self._pods: list[Pod] | None = None
        self._podgroup: tuple[PodGroup | None] | None = None
        self._records: dict[str, PodRecord] | None = {} if created else None  # a new record has no pods
        self._new_record = created
        self._queue_exists: bool | None = None
        self._armed_due: list[ArmedAction] | None = None
        self._tasks: list[Task] | None = None
        self._has_armed = True  # whether the record may have armed actions (a query finds out)
        if prefetched is not None:
            self._tasks = prefetched.tasks
            self._has_armed = prefetched.has_armed and not created
            self._pods = sorted(prefetched.pods, key=lambda p: p.name)
            self._podgroup = (prefetched.podgroup,)
            if not created:
                self._records = {r.name: r for r in prefetched.pod_records}
                self._armed_due = list(prefetched.armed_due)
            self._queue_exists = prefetched.queue_exists

    # ------------------------------------------------------------------ helpers

    @property
    def status(self) -> dict[str, Any]:
        return self.job.status or {}

    @property
    def phase(self) -> str:
        return S.phase_of(self.status)

    def event(self, reason: str, message: str, type_: str = EventType.NORMAL) -> None:
        record_event(self.job, "Job", type_, reason, message, source="job-controller")

    def task_spec(self, name: str) -> dict[str, Any] | None:
        return next((t for t in self.job.spec.get("tasks") or [] if t.get("name") == name), None)

    def pods(self) -> list[Pod]:
        """The job's pod rows by name (read once per reconcile, then maintained by this controller)."""
        if self._pods is None:
            self._pods = list(Pod.objects.filter(job=self.job).order_by("name"))
        return list(self._pods)

    def _forget_pod(self, pod: Pod) -> None:
        if self._pods is not None:
            self._pods = [p for p in self._pods if p.name != pod.name]

    def _remember_pod(self, pod: Pod) -> None:
        if self._pods is not None:
            self._pods = sorted([*(p for p in self._pods if p.name != pod.name), pod], key=lambda p: p.name)

    def podgroup(self) -> PodGroup | None:
        """The job's PodGroup (read once per reconcile)."""
        if self._podgroup is None:
            self._podgroup = (PodGroup.objects.filter(job=self.job).first(),)
        return self._podgroup[0]

    def pod_records(self) -> dict[str, PodRecord]:
        """The controller's records of the job's pods by name (read once per reconcile)."""
        if self._records is None:
            self._records = {r.name: r for r in PodRecord.objects.filter(job_record=self.record)}
        return dict(self._records)

    def queue_exists(self) -> bool:
        if self._queue_exists is None:
            self._queue_exists = Queue.objects.filter(name=self.job.queue_name).exists()
        return self._queue_exists

    # ------------------------------------------------------------------ status

    def write_status(self, status: dict[str, Any], *, running_duration: bool = False) -> None:
        """Store a new status when it differs (stamping lastTransitionTime and the phase condition)."""
        old = self.status
        if _comparable(status) == _comparable(old):
            return
        now = render.timestamp(self.now)
        phase = S.phase_of(status) or S.PENDING
        status["state"] = {**(status.get("state") or {}), "phase": phase, "lastTransitionTime": now}
        conditions = [c for c in status.get("conditions") or [] if c.get("status") != phase]
        status["conditions"] = [*conditions, {"status": phase, "lastTransitionTime": now}]
        if running_duration:
            seconds = max((self.now - self.job.created_at).total_seconds(), 0.0)
            status["runningDuration"] = f"{seconds:.0f}s"
        before = S.phase_of(old) or S.PENDING
        self.job.status = status
        self.job.phase = phase
        self.job.resource_version += 1
        self.writes.save_job(self.job)
        if phase != before and phase in FINAL_PHASES:
            type_ = EventType.NORMAL if phase == S.COMPLETED else EventType.WARNING
            self.event(f"Job{phase}", f"job {before} → {phase}: {_counts_text(status, self.job.max_retry)}", type_)
        self._write_task_status(status)

    def _write_task_status(self, status: dict[str, Any]) -> None:
        counts = status.get("taskStatusCount") or {}
        if self._tasks is None:
            self._tasks = list(Task.objects.filter(job=self.job))
        for task in self._tasks:
            value = counts.get(task.name) or {}
            if task.status != value:
                task.status = value
                self.writes.save_task(task)


def _counts_text(status: dict[str, Any], max_retry: int) -> str:
    parts = [f"{int(status.get(k) or 0)} {k}" for k in ("succeeded", "failed", "running", "pending", "terminating")]
    shown = [p for p in parts if not p.startswith("0 ")] or ["no pods"]
    return f"{', '.join(shown)}; retries {int(status.get('retryCount') or 0)} of {max_retry}"


def _comparable(status: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in status.items() if k not in ("conditions", "runningDuration")}
    out["state"] = {k: v for k, v in (status.get("state") or {}).items() if k != "lastTransitionTime"}
    return out
