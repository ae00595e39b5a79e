"""The job controller: event derivation, policy actions, the state machine, sync and kill.

Volcano's job controller, with the deviations listed in docs/controllers.md, "Job controller".

One :class:`JobController` works on one Job row locked by the caller (``select_for_update``), inside the
caller's transaction; the database mirror of pods (``jobs.Pod``) plays the role of Volcano's informer
cache and :class:`~volcanoweb.runtime.models.PodRecord` rows remember what the controller saw last.
"""

from __future__ import annotations

import copy
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from volcanoweb.clusters.backends.base import BackendError, ClusterBackend, Conflict, NotFound, PodInfo, PodSpec
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.jobs.models import EventType, Job, Pod, PodGroup, PodGroupPhase, PriorityClass, Task
from volcanoweb.jobs.services import record_event
from volcanoweb.manifests import render
from volcanoweb.manifests.pods import pod_requests
from volcanoweb.queues.models import Queue
from volcanoweb.runtime import policies as P
from volcanoweb.runtime import state as S
from volcanoweb.runtime.models import ArmedAction, JobRecord, PodRecord
from volcanoweb.runtime.plugins import JobContext, job_plugins
from volcanoweb.runtime.podbuild import JOB_VERSION, OUT_OF_SYNC, PARTITION_ID, build_pod, pod_name, to_backend_spec
from volcanoweb.runtime.podgroups import ensure_job_podgroup

log = logging.getLogger(__name__)
COUNTERS = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
PHASE_COUNTER = {"Pending": "pending", "Running": "running", "Succeeded": "succeeded", "Failed": "failed"}
GATED_PG_PHASES = ("", PodGroupPhase.PENDING)
MAX_ROUNDS = 6


class ControllerError(Exception):
    """An action could not be completed (the request is retried by the next reconcile)."""


def job_record(job: Job) -> tuple[JobRecord, bool]:
    """Return (creating it) the controller's record of a job, and whether it was created."""
    plugins = sorted(job.spec.get("plugins") or {})
    return JobRecord.objects.get_or_create(
        job_id=job.pk,
        defaults={"job_uid": job.uid, "namespace": job.namespace, "name": job.name, "resources": {"plugins": plugins}},
    )


def restart_count(pod: Pod) -> int:
    """Return Σ restartCount over the pod's container and init-container statuses (0 when unknown)."""
    status = pod.status or {}
    total = 0
    for key in ("containerStatuses", "initContainerStatuses"):
        for item in status.get(key) or []:
            if isinstance(item, dict):
                total += int(item.get("restartCount") or 0)
    return total + int(status.get("restartCount") or 0)


def pod_version(pod: Pod) -> int:
    """Return the pod's ``volcano.sh/job-version`` annotation."""
    try:
        return int(pod.annotations.get(JOB_VERSION, 0))
    except (TypeError, ValueError):
        return 0


def is_ready(pod: Pod) -> bool:
    """Return True for a Succeeded pod, or a Running one whose containers are all ready (unknown ⇒ ready)."""
    if pod.phase == "Succeeded":
        return True
    if pod.phase != "Running" or pod.deletion_timestamp is not None:
        return False
    statuses = [s for s in (pod.status or {}).get("containerStatuses") or [] if isinstance(s, dict)]
    return all(s.get("ready", True) for s in statuses)


@dataclass
class Prefetched:
    """One locked job's rows, read together with other jobs' (see ``services.sync_jobs``)."""

    record: JobRecord | None
    podgroup: PodGroup | None
    pods: list[Pod]
    pod_records: list[PodRecord]
    armed_due: list[ArmedAction]
    queue_exists: bool
    tasks: list[Task] | None = None
    has_armed: bool = True


class Redo(Exception):
    """A batch met something its deferred writes do not model: redo it with immediate writes."""


@dataclass
class _Creation:
    controller: JobController
    pod: Pod
    spec: PodSpec
    predicted_uid: str


@dataclass
class Writes:
    """The row writes (and pod creations) of a batch of job syncs, made together by :meth:`flush`.

    ``services.sync_jobs`` reconciles many locked jobs in Python with one ``Writes``: the job status,
    task status, controller records and new pod rows are kept here and written with one statement per
    kind, and the pods are created in the cluster with one ``create_pods`` call. A new pod's row is
    built with the values a fresh cluster pod has (Pending, unbound, the backend's uid filled in at the
    flush); a cluster answer that differs (an existing pod adopted in another phase, an error) raises
    :class:`Redo` and the caller redoes the batch with immediate writes (``deferred=False``), the
    per-job path. Any less common write (deleting pods, arming timers, killing a job) flushes first,
    so it sees the rows it acts on.
    """

    backend: ClusterBackend
    deferred: bool = True
    jobs: dict[int, Job] = field(default_factory=dict)
    tasks: dict[int, Task] = field(default_factory=dict)
    new_records: list[JobRecord] = field(default_factory=list)
    records: dict[int, JobRecord] = field(default_factory=dict)
    new_pod_records: list[PodRecord] = field(default_factory=list)
    pod_records: dict[int, PodRecord] = field(default_factory=dict)
    creations: list[_Creation] = field(default_factory=list)
    uids: dict[str, str] = field(default_factory=dict)
    priorities: dict[str, int] | None = None

    def __post_init__(self) -> None:
        if not callable(getattr(self.backend, "create_pods", None)):
            self.deferred_pods = False
        else:
            self.deferred_pods = self.deferred

    def priority(self, name: str) -> int | None:
        """A PriorityClass's value (every class read once per batch)."""
        if self.priorities is None:
            self.priorities = dict(PriorityClass.objects.values_list("name", "value"))
        return self.priorities.get(name)

    def save_job(self, job: Job) -> None:
        if self.deferred:
            self.jobs[id(job)] = job
        else:
            job.save(update_fields=["status", "phase", "resource_version"])

    def save_task(self, task: Task) -> None:
        if self.deferred:
            self.tasks[id(task)] = task
        else:
            task.save(update_fields=["status"])

    def new_record(self, job: Job) -> JobRecord:
        """The controller's record of a job that has none (inserted at the flush)."""
        plugins = sorted(job.spec.get("plugins") or {})
        record = JobRecord(
            job_id=job.pk, job_uid=job.uid, namespace=job.namespace, name=job.name, resources={"plugins": plugins}
        )
        if self.deferred:
            self.new_records.append(record)
        else:
            record.save(force_insert=True)
        return record

    def save_record(self, record: JobRecord, fields: list[str]) -> None:
        if not self.deferred:
            record.save(update_fields=fields)
        elif record.pk is not None:
            self.records[id(record)] = record

    def new_pod_record(self, record: PodRecord) -> None:
        if self.deferred:
            self.new_pod_records.append(record)
        else:
            record.save(force_insert=True)

    def save_pod_record(self, record: PodRecord) -> None:
        if not self.deferred:
            record.save(update_fields=["phase", "restarts"])
        elif record.pk is not None:
            self.pod_records[id(record)] = record

    def uid(self, value: str) -> str:
        """The cluster's uid of a pod created by this batch (its row's uid until the flush)."""
        return self.uids.get(value, value)

    # ------------------------------------------------------------------ flush

    def flush(self) -> None:
        """Create the pods in the cluster, then insert and update the rows, one statement per kind."""
        if not self.deferred:
            return
        self._create_pods()
        if self.new_records:
            JobRecord.objects.bulk_create(self.new_records)
            self.new_records = []
        if self.new_pod_records:
            for rec in self.new_pod_records:
                rec.job_record_id = rec.job_record.pk
                rec.pod_uid = self.uid(rec.pod_uid)
            PodRecord.objects.bulk_create(self.new_pod_records)
            self.new_pod_records = []
        bulk_update_rows(Job, list(self.jobs.values()), ["status", "phase", "resource_version"])
        bulk_update_rows(Task, list(self.tasks.values()), ["status"])
        bulk_update_rows(JobRecord, list(self.records.values()), ["podgroup_phase", "resources"])
        bulk_update_rows(PodRecord, list(self.pod_records.values()), ["phase", "restarts"])
        self.jobs, self.tasks, self.records, self.pod_records = {}, {}, {}, {}

    def _create_pods(self) -> None:
        creations, self.creations = self.creations, []
        if not creations:
            return
        taken = Pod.objects.filter(
            namespace__in={c.pod.namespace for c in creations}, name__in=[c.pod.name for c in creations]
        ).values_list("namespace", "name")
        wanted = {(c.pod.namespace, c.pod.name) for c in creations}
        if any(key in wanted for key in taken):
            raise Redo("a pod row of that name exists already")
        results = self.backend.create_pods([c.spec for c in creations])  # type: ignore[attr-defined]
        for creation in creations:
            pod = creation.pod
            outcome = results.get((pod.namespace, pod.name))
            if isinstance(outcome, Conflict):
                try:
                    outcome = self.backend.get_pod(pod.namespace, pod.name)
                except BackendError as exc:
                    outcome = exc
            if not isinstance(outcome, PodInfo):
                raise Redo(f"creating pod {pod.namespace}/{pod.name}: {outcome}")
            if (outcome.phase or "Pending") != "Pending" or outcome.node_name or outcome.exit_code is not None:
                raise Redo(f"pod {pod.namespace}/{pod.name} exists in the cluster in phase {outcome.phase}")
            pod.annotations = {**pod.annotations, **outcome.annotations}
            if outcome.uid:
                self.uids[creation.predicted_uid] = outcome.uid
                pod.uid = outcome.uid
        Pod.objects.bulk_create([c.pod for c in creations])


class JobController:
    """Drive one locked job through Volcano's lifecycle."""

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

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, requests: list[P.Request], *, default_sync: bool) -> list[str]:
        """Process explicit requests plus everything derived from pod/PodGroup changes until quiet."""
        resources = {**self.record.resources, "plugins": sorted(self.job.spec.get("plugins") or {})}
        if resources != self.record.resources:
            self.record.resources = resources
            self.writes.save_record(self.record, ["resources"])
        batch = [*requests, *self.derive()]
        if not batch and default_sync:
            batch = [P.Request(event=P.OUT_OF_SYNC)]
        for _ in range(MAX_ROUNDS):
            if not batch:
                break
            before = self.phase
            self.process(batch)
            batch = self.derive()
            if self.phase != before:  # a phase change is a Job update: Volcano requeues the job (OutOfSync)
                batch.append(P.Request(event=P.OUT_OF_SYNC))
        return self.executed

    def derive(self) -> list[P.Request]:
        """Return requests for what changed since the last look: PodGroup phase, pods added/changed/gone."""
        requests: list[P.Request] = []
        podgroup = self.podgroup()
        pg_phase = podgroup.phase if podgroup is not None else ""
        if pg_phase != self.record.podgroup_phase:
            self.record.podgroup_phase = pg_phase
            self.writes.save_record(self.record, ["podgroup_phase"])
            if pg_phase:
                requests.append(P.Request(event=P.UNKNOWN if pg_phase == PodGroupPhase.UNKNOWN else ""))
        records = self.pod_records()
        pods = self.pods()
        by_task: dict[str, list[Pod]] = {}
        for pod in pods:
            by_task.setdefault(pod.task_name, []).append(pod)
        for pod in pods:
            rec = records.pop(pod.name, None)
            if rec is not None and rec.pod_uid != str(pod.uid):
                requests.append(self._gone(rec))
                rec = None
            request = self._observe(pod, rec, by_task)
            if request is not None:
                requests.append(request)
                self._cancel_on_event(request)
        for rec in records.values():
            request = self._gone(rec)
            requests.append(request)
            self._cancel_on_event(request)
        # Pods the cluster deleted (evicted by reclaim or preempt, lost with their node, or killed by us)
        # were observed above in their last phase; now they are gone, as in Volcano's deletePod handler.
        for pod in pods:
            if not (pod.status or {}).get("deleted"):
                continue
            self.writes.flush()  # the records observed above are rows before they are deleted
            gone = self.pod_records().get(pod.name)
            self._forget_pod(pod)
            pod.delete()
            if gone is not None:
                if not gone.out_of_sync:  # not deleted by this controller: record the eviction and its cause
                    self._record_eviction(pod)
                request = self._gone(gone)
                requests.append(request)
                self._cancel_on_event(request)
        return requests

    def _record_eviction(self, pod: Pod) -> None:
        """A Warning event on the job naming the evicted pod, its node and the cluster's reason (kept with the job)."""
        status = pod.status or {}
        reason = str(status.get("reason") or "Evicted")
        message = str(status.get("message") or "")
        where = f" from node {pod.node_name}" if pod.node_name else ""
        cause = f"{reason}: {message}" if message else reason
        self.event("PodEvicted", f"pod {pod.name} was evicted{where} ({cause})", EventType.WARNING)

    def _gone(self, rec: PodRecord) -> P.Request:
        self.writes.flush()
        event = P.OUT_OF_SYNC if rec.out_of_sync else P.POD_EVICTED
        if self._records is not None and rec.name in self._records and self._records[rec.name].pk == rec.pk:
            del self._records[rec.name]
        rec.delete()
        return P.Request(
            event=event,
            task_name=rec.task_name,
            pod_name=rec.name,
            pod_uid=rec.pod_uid,
            job_version=rec.version,
            job_uid=str(self.job.uid),
        )

    def _observe(self, pod: Pod, rec: PodRecord | None, by_task: dict[str, list[Pod]]) -> P.Request | None:
        restarts = restart_count(pod)
        base: dict[str, Any] = {
            "task_name": pod.task_name,
            "pod_name": pod.name,
            "pod_uid": str(pod.uid),
            "job_version": pod_version(pod),
            "job_uid": str(self.job.uid),
        }
        out_of_sync = pod.annotations.get(OUT_OF_SYNC) == "true"
        if rec is None:
            rec = PodRecord(
                job_record=self.record,
                name=pod.name,
                pod_uid=str(pod.uid),
                task_name=pod.task_name,
                version=base["job_version"],
                phase=pod.phase,
                restarts=restarts,
                out_of_sync=out_of_sync,
            )
            self.writes.new_pod_record(rec)
            if self._records is not None:
                self._records[rec.name] = rec
            if out_of_sync:
                return P.Request(event=P.OUT_OF_SYNC, **base)
            if pod.phase == "Pending":
                return P.Request(event=P.POD_PENDING, **base)
            return self._transition("Pending", pod, by_task, base)
        if rec.phase == pod.phase and rec.restarts == restarts:
            return None
        old_phase, old_restarts = rec.phase, rec.restarts
        rec.phase, rec.restarts = pod.phase, restarts
        self.writes.save_pod_record(rec)
        if old_phase == pod.phase:
            if restarts > old_restarts:
                self.event(
                    "PodRestarted",
                    f"pod {pod.name} of task {pod.task_name} restarted: {exit_text(pod, last=True)}",
                    EventType.WARNING,
                )
            if restarts != old_restarts and self._task_restarts_exhausted(pod.task_name, by_task):
                return P.Request(event=P.TASK_FAILED, **base)
            return P.Request(event=P.OUT_OF_SYNC, **base)
        return self._transition(old_phase, pod, by_task, base)

    def _transition(self, old: str, pod: Pod, by_task: dict[str, list[Pod]], base: dict[str, Any]) -> P.Request:
        if pod.annotations.get(OUT_OF_SYNC) == "true":
            return P.Request(event=P.OUT_OF_SYNC, **base)
        if pod.phase == "Failed":
            self.event("PodFailed", f"pod {pod.name} of task {pod.task_name} {exit_text(pod)}", EventType.WARNING)
            return P.Request(event=P.POD_FAILED, exit_code=int(pod.exit_code or 0), **base)
        if pod.phase == "Succeeded":
            task = self.task_spec(pod.task_name) or {}
            done = sum(1 for p in by_task.get(pod.task_name, []) if p.phase == "Succeeded")
            event = P.TASK_COMPLETED if task and done == int(task.get("replicas") or 0) else P.OUT_OF_SYNC
            return P.Request(event=event, **base)
        if pod.phase in ("Running", "Pending"):
            event = P.POD_RUNNING if pod.phase == "Running" else P.POD_PENDING
            if old == pod.phase and self._task_restarts_exhausted(pod.task_name, by_task):
                event = P.TASK_FAILED
            return P.Request(event=event, **base)
        return P.Request(event=P.OUT_OF_SYNC, **base)

    def _task_restarts_exhausted(self, task_name: str, by_task: dict[str, list[Pod]]) -> bool:
        task = self.task_spec(task_name) or {}
        budget = int(task.get("maxRetry") or 3)
        if budget < 0:
            return False
        live = [p for p in by_task.get(task_name, []) if p.phase in ("Running", "Pending")]
        return sum(restart_count(p) for p in live) >= budget

    # ------------------------------------------------------------------ requests and timers

    def process(self, requests: list[P.Request]) -> None:
        """Resolve and execute requests in order; consecutive plain syncs run once."""
        sync_due = False
        for request in requests:
            version = int(self.status.get("version") or 0)
            action, delay, why = P.explain(self.job.spec, version, str(self.job.uid), request)
            if delay > 0:
                self._arm(action, request, delay, why)
                continue
            if action == P.SYNC_JOB:
                sync_due = True
                continue
            if sync_due and P.scope_of(action) != "job":
                self.execute(P.SYNC_JOB, P.Request())
                sync_due = False
            # A job-wide action (RestartJob, AbortJob, ...) goes first: a sync of the batch's final
            # pod counts must not finish the job (e.g. Failed) before the policy that reacts to them.
            self.run_action(action, request, why)
        if sync_due:
            self.execute(P.SYNC_JOB, P.Request())

    def run_action(self, action: str, request: P.Request, why: str = "") -> None:
        """Execute a (non-sync) action now, with its event (what fired it and on which pod), then cancel armed
        actions of its scope."""
        self.writes.flush()
        self.event("ExecuteAction", f"Start to execute action {action} {_fired_by(why, request)}".rstrip())
        self.execute(action, request)
        self.executed.append(action)
        armed = ArmedAction.objects.filter(job_record=self.record)
        scope = P.scope_of(action)
        if scope == "job":
            armed.filter(action__in=P.JOB_SCOPE_ACTIONS).delete()
        elif scope == "task":
            armed.filter(action=action, task_name=request.task_name).delete()
        elif scope in ("pod", "partition"):
            armed.filter(action=action, pod_name=request.pod_name).delete()

    def _arm(self, action: str, request: P.Request, delay: float, why: str = "") -> None:
        self.writes.flush()  # the pod's uid is the cluster's from here on
        self._has_armed = True
        armed = ArmedAction.objects.filter(job_record=self.record, action=action, pod_name=request.pod_name)
        if armed.exists():
            return
        ArmedAction.objects.create(
            job_record=self.record,
            action=action,
            event=request.event,
            task_name=request.task_name,
            pod_name=request.pod_name,
            pod_uid=self.writes.uid(request.pod_uid),
            fire_at=self.now + timedelta(seconds=delay),
        )
        fired = _fired_by(why, request)
        self.event("ExecuteAction", f"Execute action {action} after {timedelta(seconds=delay)} {fired}".rstrip())

    def _cancel_on_event(self, request: P.Request) -> None:
        if not request.pod_name or not self._has_armed:
            return
        armed = ArmedAction.objects.filter(job_record=self.record, pod_name=request.pod_name)
        if request.event != P.POD_PENDING:
            armed.filter(event=P.POD_PENDING, pod_uid=self.writes.uid(request.pod_uid)).delete()
        if request.event == P.POD_RUNNING:
            armed.filter(event__in=(P.POD_FAILED, P.POD_EVICTED)).delete()

    def due_actions(self) -> list[P.Request]:
        """Pop the armed actions whose time has come, as requests."""
        if self._new_record:
            return []  # nothing can be armed on a record created just now
        if self._armed_due is not None:
            due, self._armed_due = self._armed_due, None
        else:
            due = list(ArmedAction.objects.filter(job_record=self.record, fire_at__lte=self.now))
        for item in due:
            item.delete()
        return [
            P.Request(event=a.event, action=a.action, task_name=a.task_name, pod_name=a.pod_name, pod_uid=a.pod_uid)
            for a in due
        ]

    # ------------------------------------------------------------------ state machine

    def execute(self, action: str, request: P.Request) -> None:
        """Run ``action`` with the handler of the job's current phase (Volcano's transition table)."""
        phase = self.phase
        restarting = S.move_to(S.RESTARTING, retry=True)
        if phase in ("", S.PENDING, S.RUNNING):
            if action == P.RESTART_JOB:
                self.kill_job(soft=False, update=restarting)
            elif action in P.TARGET_ACTIONS:
                self.kill_target(action, request, restarting)
            elif action == P.ABORT_JOB:
                self.kill_job(soft=True, update=S.move_to(S.ABORTING))
            elif action == P.COMPLETE_JOB:
                self.kill_job(soft=True, update=S.move_to(S.COMPLETING))
            elif action == P.TERMINATE_JOB:
                self.kill_job(soft=True, update=S.move_to(S.TERMINATING))
            else:
                self.sync(S.running_sync if phase == S.RUNNING else S.pending_sync)
        elif phase == S.RESTARTING:
            if action == P.SYNC_JOB:
                self.sync(S.restarting_sync)
            elif action in P.TARGET_ACTIONS:
                self.kill_target(action, request, S.restarting_sync)
            else:
                self.kill_job(soft=False, update=S.restarting_sync)
        elif phase in (S.ABORTING, S.ABORTED):
            if action == P.RESUME_JOB:
                self.kill_job(soft=True, update=restarting)
            else:
                self.kill_job(soft=True, update=S.settle_to(S.ABORTED) if phase == S.ABORTING else S.unchanged)
        elif phase == S.COMPLETING:
            self.kill_job(soft=True, update=S.settle_to(S.COMPLETED))
        elif phase == S.TERMINATING:
            self.kill_job(soft=True, update=S.settle_to(S.TERMINATED))
        else:  # Completed, Failed, Terminated
            self.kill_job(soft=True, update=S.unchanged)

    # ------------------------------------------------------------------ sync

    def sync(self, update: S.Update) -> None:
        """Volcano's syncJob: initiate or refresh, then create/delete pods behind the PodGroup gate."""
        job = self.job
        if job.deletion_timestamp is not None:
            return
        if not self.queue_exists():
            self.event("JobStatusError", f"queue {job.queue_name} not found", EventType.WARNING)
            return
        status = copy.deepcopy(self.status)
        if self.phase in ("", S.PENDING):
            if not self.phase:
                S.set_phase(status, S.PENDING)
                status["minAvailable"] = int(job.spec.get("minAvailable") or 0)
            for plugin in self.plugins:
                plugin.on_job_add(self.ctx)
        else:
            for plugin in self.plugins:
                plugin.on_job_update(self.ctx)
        if self.podgroup() is None:
            self.writes.flush()  # the new PodGroup is set on the job's pod rows
        podgroup, created = ensure_job_podgroup(job, self.podgroup(), self.writes.priority)
        self._podgroup = (podgroup,)
        if created:
            self._pods = None  # their podgroup column was just set
        self._warn_unscheduled(podgroup)
        status["controlledResources"] = dict(self.ctx.controlled)
        if podgroup.phase in GATED_PG_PHASES:
            update(job.spec, status)
            self.write_status(status)
            return
        counts = dict.fromkeys(COUNTERS, 0)
        task_counts: dict[str, dict[str, int]] = {}
        existing: dict[str, list[Pod]] = {}
        for current in self.pods():
            existing.setdefault(current.task_name, []).append(current)
        to_delete: list[Pod] = []
        for task in job.spec.get("tasks") or []:
            pods = {p.name: p for p in existing.pop(task["name"], [])}
            missing: list[int] = []
            for index in range(int(task.get("replicas") or 0)):
                pod = pods.pop(pod_name(job.name, task["name"], index), None)
                if pod is None:
                    missing.append(index)
                elif pod.deletion_timestamp is not None:
                    counts["terminating"] += 1
                else:
                    if pod.annotations.get(OUT_OF_SYNC) == "true":
                        to_delete.append(pod)
                    self._count(pod.phase, task["name"], counts, task_counts)
            to_delete.extend(pods.values())  # scale down: indexes ≥ replicas
            if missing and self._dependencies_ready(task):
                for index in missing:
                    new_pod = self.create_pod(task, index, podgroup)
                    self._count(new_pod.phase, task["name"], counts, task_counts)
        for pod in to_delete:
            if self.delete_pod(pod):
                counts["terminating"] += 1
        status.update(counts)
        status["taskStatusCount"] = task_counts
        status["minAvailable"] = int(job.spec.get("minAvailable") or 0)
        update(job.spec, status)
        self.write_status(status)

    def _count(self, phase: str, task: str, counts: dict[str, int], task_counts: dict[str, dict[str, Any]]) -> None:
        counts[PHASE_COUNTER.get(phase, "unknown")] += 1
        phases = task_counts.setdefault(task, {"phase": {}})["phase"]
        key = phase if phase in PHASE_COUNTER else "Unknown"
        phases[key] = phases.get(key, 0) + 1

    def _warn_unscheduled(self, podgroup: PodGroup) -> None:
        conditions = [c for c in (podgroup.status or {}).get("conditions") or [] if isinstance(c, dict)]
        current = [c for c in conditions if c.get("status") == "True"]
        if current and current[-1].get("type") != "Scheduled":
            last = current[-1]
            message = (
                f"PodGroup {podgroup.namespace}:{podgroup.name} {str(last.get('type', '')).lower()}, "
                f"reason: {last.get('message', '')}"
            )
            self.event("PodGroupPending", message, EventType.WARNING)

    def _dependencies_ready(self, task: dict[str, Any]) -> bool:
        depends = task.get("dependsOn") or {}
        names = [n for n in depends.get("name") or [] if n]
        if not names:
            return True
        ready = [self._task_ready(name) for name in names]
        if depends.get("iteration") == "any" and len(names) > 1:
            return any(ready)
        return all(ready)

    def _task_ready(self, name: str) -> bool:
        task = self.task_spec(name)
        if task is None:
            return False
        if task.get("minAvailable") is None:
            return True
        names = [pod_name(self.job.name, name, i) for i in range(int(task.get("replicas") or 0))]
        ready = sum(1 for pod in self.pods() if pod.name in names and is_ready(pod))
        return ready >= int(task["minAvailable"])

    # ------------------------------------------------------------------ pods

    def create_pod(self, task: dict[str, Any], index: int, podgroup: PodGroup) -> Pod:
        """Build a task pod, create it in the cluster (adopting one that exists) and mirror it as a row."""
        job = self.job
        built = build_pod(job, task, index, podgroup.name, self.plugins, self.ctx)
        spec = to_backend_spec(job, built, self.ctx.config_maps)
        if self.writes.deferred_pods:  # created in the cluster by the batch's flush, with the others
            predicted = str(uuid.uuid4())
            fresh = PodInfo(namespace=spec.namespace, name=spec.name, uid=predicted)
            pod = self._mirror_created(task, index, built, fresh, podgroup, insert=False)
            self.writes.creations.append(_Creation(self, pod, spec, predicted))
            return pod
        try:
            info = self.backend.create_pod(spec)
        except Conflict:
            info = self.backend.get_pod(job.namespace, spec.name)
        except BackendError as exc:
            self.event("FailedCreate", f"Error creating pods: [{exc}]", EventType.WARNING)
            raise ControllerError(str(exc)) from exc
        return self._mirror_created(task, index, built, info, podgroup)

    def _mirror_created(
        self,
        task: dict[str, Any],
        index: int,
        built: dict[str, Any],
        info: PodInfo,
        podgroup: PodGroup,
        *,
        insert: bool = True,
    ) -> Pod:
        """The pod's row (``insert=False``: built only, the batch's flush inserts it)."""
        job, meta, spec = self.job, built["metadata"], built["spec"]
        priority_class = spec.get("priorityClassName") or ""
        priority = None
        if priority_class:
            priority = self.writes.priority(priority_class)
        owner = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": job.name,
            "uid": str(job.uid),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        fields: dict[str, Any] = {
            "tenant_id": job.tenant_id,
            "job": job,
            "podgroup": podgroup,
            "group_name": podgroup.name,
            "task_name": task["name"],
            "index": index,
            "labels": meta["labels"],
            "annotations": {**meta["annotations"], **info.annotations},
            "phase": info.phase or "Pending",
            "node_name": info.node_name,
            "exit_code": info.exit_code,
            "scheduler_name": spec["schedulerName"],
            "priority_class_name": priority_class,
            "priority": priority,
            "requests": pod_requests(spec),
            "spec": spec,
            "owner_references": [owner],
            "deletion_timestamp": None,
        }
        if not insert:
            built_row = Pod(namespace=job.namespace, name=meta["name"], uid=info.uid, **fields)
            self._remember_pod(built_row)
            return built_row
        pod = Pod.objects.filter(namespace=job.namespace, name=meta["name"]).first()
        if pod is None:
            pod = Pod(namespace=job.namespace, name=meta["name"], **fields)
            if info.uid:
                pod.uid = info.uid
            pod.save(force_insert=True)
            self._remember_pod(pod)
            return pod
        for key, value in fields.items():
            setattr(pod, key, value)
        pod.resource_version += 1
        pod.save(update_fields=[*fields, "resource_version"])
        self._remember_pod(pod)
        return pod

    def delete_pod(self, pod: Pod) -> bool:
        """Delete a pod as the controller does: mark it out of sync first, so its removal is no PodEvicted."""
        self.writes.flush()
        self._records = None
        PodRecord.objects.update_or_create(
            job_record=self.record,
            name=pod.name,
            defaults={
                "pod_uid": str(pod.uid),
                "task_name": pod.task_name,
                "version": pod_version(pod),
                "phase": pod.phase,
                "out_of_sync": True,
            },
        )
        try:
            self.backend.delete_pod(pod.namespace, pod.name)
        except BackendError as exc:
            self.event("FailedDelete", f"Error deleting pods: [{exc}]", EventType.WARNING)
            return False
        try:
            self.backend.get_pod(pod.namespace, pod.name)
        except NotFound:
            self._forget_pod(pod)
            pod.delete()
            return True
        except BackendError:
            pass
        pod.annotations = {**pod.annotations, OUT_OF_SYNC: "true"}
        pod.deletion_timestamp = pod.deletion_timestamp or self.now
        pod.resource_version += 1
        pod.save(update_fields=["annotations", "deletion_timestamp", "resource_version"])
        return True

    # ------------------------------------------------------------------ kill

    def kill_job(self, *, soft: bool, update: S.Update) -> None:
        """Volcano's killJob: bump the version, delete pods outside the retain set, run plugins' delete, drop the PG."""
        job = self.job
        if job.deletion_timestamp is not None:
            return
        status = copy.deepcopy(self.status)
        status["version"] = int(status.get("version") or 0) + 1
        if int(status.get("retryCount") or 0) >= int(job.spec.get("maxRetry") or 3) - 1:
            soft = True  # last retry: keep finished pods for inspection
        counts = dict.fromkeys(COUNTERS, 0)
        task_counts: dict[str, dict[str, int]] = {}
        errors = 0
        for pod in self.pods():
            if pod.deletion_timestamp is not None:
                counts["terminating"] += 1
                continue
            if soft and pod.phase in ("Succeeded", "Failed"):  # retained: counted like Volcano's killJob does
                self._count(pod.phase, pod.task_name, counts, task_counts)
                continue
            if self.delete_pod(pod):
                counts["terminating"] += 1
            else:
                errors += 1
                self._count(pod.phase, pod.task_name, counts, task_counts)
        status.update(counts)
        status["taskStatusCount"] = task_counts
        update(job.spec, status)
        for plugin in self.plugins:
            plugin.on_job_delete(self.ctx)
        status["controlledResources"] = dict(self.ctx.controlled)
        self.write_status(status, running_duration=True)
        PodGroup.objects.filter(job=job).delete()
        self._podgroup = (None,)
        if errors:
            raise ControllerError(f"failed to kill {errors} pods")

    def kill_target(self, action: str, request: P.Request, update: S.Update) -> None:
        """KillTarget: delete the pods of the event's task, pod or partition; the PodGroup is kept."""
        job = self.job
        if job.deletion_timestamp is not None:
            return
        pods = self.pods()
        if action == P.RESTART_TASK:
            targets = [p for p in pods if p.task_name == request.task_name]
        elif action == P.RESTART_POD:
            targets = [p for p in pods if p.name == request.pod_name]
        else:
            source = next((p for p in pods if p.name == request.pod_name), None)
            partition = source.labels.get(PARTITION_ID) if source is not None else None
            targets = [
                p
                for p in pods
                if partition is not None
                and p.task_name == request.task_name
                and p.labels.get(PARTITION_ID) == partition
            ]
        status = copy.deepcopy(self.status)
        counts = dict.fromkeys(COUNTERS, 0)
        task_counts: dict[str, dict[str, int]] = {}
        killed = {p.name for p in targets if p.deletion_timestamp is None and self.delete_pod(p)}
        for pod in pods:
            if pod.name in killed or pod.deletion_timestamp is not None:
                counts["terminating"] += 1
            else:
                self._count(pod.phase, pod.task_name, counts, task_counts)
        status.update(counts)
        status["taskStatusCount"] = task_counts
        update(job.spec, status)
        self.write_status(status)

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


#: Phases a job rests in: a change to one is recorded as an event (JobCompleted, JobFailed, ...).
FINAL_PHASES = frozenset({S.COMPLETED, S.FAILED, S.TERMINATED, S.ABORTED})


def exit_text(pod: Pod, *, last: bool = False) -> str:
    """``exited with code 1 (Error), 2 restarts``: the pod's (or, with ``last``, its containers' last) exit."""
    status = pod.status or {}
    code: Any = pod.exit_code
    reason = str(status.get("reason") or "")
    for item in status.get("containerStatuses") or []:
        if not isinstance(item, dict):
            continue
        state = (item.get("lastState") if last else item.get("state")) or {}
        terminated = state.get("terminated") if isinstance(state, dict) else None
        if isinstance(terminated, dict):
            code = terminated.get("exitCode", code)
            reason = str(terminated.get("reason") or reason)
            break
    restarts = restart_count(pod)
    exited = f"exited with code {code}" if code is not None else "ended"
    return f"{exited}{f' ({reason})' if reason else ''}, {restarts} restart{'s' if restarts != 1 else ''}"


def _fired_by(why: str, request: P.Request) -> str:
    """``(job policy (event PodFailed) on pod j-worker-0)``, or "" when nothing but a plain sync fired it."""
    if not why:
        return ""
    on = (
        f" on pod {request.pod_name}"
        if request.pod_name
        else (f" on task {request.task_name}" if request.task_name else "")
    )
    return f"({why}{on})"


def _counts_text(status: dict[str, Any], max_retry: int) -> str:
    parts = [f"{int(status.get(k) or 0)} {k}" for k in ("succeeded", "failed", "running", "pending", "terminating")]
    shown = [p for p in parts if not p.startswith("0 ")] or ["no pods"]
    return f"{', '.join(shown)}; retries {int(status.get('retryCount') or 0)} of {max_retry}"


def _comparable(status: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in status.items() if k not in ("conditions", "runningDuration")}
    out["state"] = {k: v for k, v in (status.get("state") or {}).items() if k != "lastTransitionTime"}
    return out
