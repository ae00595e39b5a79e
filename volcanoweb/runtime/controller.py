"""The job controller: event derivation, policy actions, the state machine, sync and kill.

Volcano's job controller, with the deviations listed in docs/controllers.md, "Job controller".

One :class:`JobController` works on one Job row locked by the caller (``select_for_update``), inside the
caller's transaction; the database mirror of pods (``jobs.Pod``) plays the role of Volcano's informer
cache and :class:`~volcanoweb.runtime.models.PodRecord` rows remember what the controller saw last.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from volcanoweb.clusters.backends.base import BackendError, ClusterBackend, Conflict, NotFound, PodInfo
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


class JobController:
    """Drive one locked job through Volcano's lifecycle."""

    def __init__(self, job: Job, backend: ClusterBackend, now: datetime, prefetched: Prefetched | None = None) -> None:
        self.job = job
        self.backend = backend
        self.now = now
        if prefetched is not None and prefetched.record is not None:
            self.record, created = prefetched.record, False
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
        if prefetched is not None:
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
            self._pods = [p for p in self._pods if p.pk != pod.pk]

    def _remember_pod(self, pod: Pod) -> None:
        if self._pods is not None:
            self._pods = sorted([*(p for p in self._pods if p.pk != pod.pk), pod], key=lambda p: p.name)

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
            self.record.save(update_fields=["resources"])
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
            self.record.save(update_fields=["podgroup_phase"])
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
            rec = PodRecord.objects.create(
                job_record=self.record,
                name=pod.name,
                pod_uid=str(pod.uid),
                task_name=pod.task_name,
                version=base["job_version"],
                phase=pod.phase,
                restarts=restarts,
                out_of_sync=out_of_sync,
            )
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
        rec.save(update_fields=["phase", "restarts"])
        if old_phase == pod.phase:
            if restarts != old_restarts and self._task_restarts_exhausted(pod.task_name, by_task):
                return P.Request(event=P.TASK_FAILED, **base)
            return P.Request(event=P.OUT_OF_SYNC, **base)
        return self._transition(old_phase, pod, by_task, base)

    def _transition(self, old: str, pod: Pod, by_task: dict[str, list[Pod]], base: dict[str, Any]) -> P.Request:
        if pod.annotations.get(OUT_OF_SYNC) == "true":
            return P.Request(event=P.OUT_OF_SYNC, **base)
        if pod.phase == "Failed":
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
            action, delay = P.resolve(self.job.spec, version, str(self.job.uid), request)
            if delay > 0:
                self._arm(action, request, delay)
                continue
            if action == P.SYNC_JOB:
                sync_due = True
                continue
            if sync_due and P.scope_of(action) != "job":
                self.execute(P.SYNC_JOB, P.Request())
                sync_due = False
            # A job-wide action (RestartJob, AbortJob, ...) goes first: a sync of the batch's final
            # pod counts must not finish the job (e.g. Failed) before the policy that reacts to them.
            self.run_action(action, request)
        if sync_due:
            self.execute(P.SYNC_JOB, P.Request())

    def run_action(self, action: str, request: P.Request) -> None:
        """Execute a (non-sync) action now, with its event, then cancel armed actions of its scope."""
        self.event("ExecuteAction", f"Start to execute action {action} ")
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

    def _arm(self, action: str, request: P.Request, delay: float) -> None:
        armed = ArmedAction.objects.filter(job_record=self.record, action=action, pod_name=request.pod_name)
        if armed.exists():
            return
        ArmedAction.objects.create(
            job_record=self.record,
            action=action,
            event=request.event,
            task_name=request.task_name,
            pod_name=request.pod_name,
            pod_uid=request.pod_uid,
            fire_at=self.now + timedelta(seconds=delay),
        )
        self.event("ExecuteAction", f"Execute action {action} after {timedelta(seconds=delay)}")

    def _cancel_on_event(self, request: P.Request) -> None:
        if not request.pod_name:
            return
        armed = ArmedAction.objects.filter(job_record=self.record, pod_name=request.pod_name)
        if request.event != P.POD_PENDING:
            armed.filter(event=P.POD_PENDING, pod_uid=request.pod_uid).delete()
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
        podgroup, created = ensure_job_podgroup(job, self.podgroup())
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
        try:
            info = self.backend.create_pod(spec)
        except Conflict:
            info = self.backend.get_pod(job.namespace, spec.name)
        except BackendError as exc:
            self.event("FailedCreate", f"Error creating pods: [{exc}]", EventType.WARNING)
            raise ControllerError(str(exc)) from exc
        return self._mirror_created(task, index, built, info, podgroup)

    def _mirror_created(
        self, task: dict[str, Any], index: int, built: dict[str, Any], info: PodInfo, podgroup: PodGroup
    ) -> Pod:
        job, meta, spec = self.job, built["metadata"], built["spec"]
        priority_class = spec.get("priorityClassName") or ""
        priority = None
        if priority_class:
            priority = PriorityClass.objects.filter(name=priority_class).values_list("value", flat=True).first()
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
        self.job.status = status
        self.job.phase = phase
        self.job.resource_version += 1
        self.job.save(update_fields=["status", "phase", "resource_version"])
        self._write_task_status(status)
        _publish_job(self.job)

    def _write_task_status(self, status: dict[str, Any]) -> None:
        counts = status.get("taskStatusCount") or {}
        for task in Task.objects.filter(job=self.job):
            value = counts.get(task.name) or {}
            if task.status != value:
                task.status = value
                task.save(update_fields=["status"])


def _comparable(status: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in status.items() if k not in ("conditions", "runningDuration")}
    out["state"] = {k: v for k, v in (status.get("state") or {}).items() if k != "lastTransitionTime"}
    return out


def _publish_job(job: Job) -> None:
    try:
        from volcanoweb.live.broadcast import publish
    except ImportError:  # pragma: no cover - live updates are optional
        return
    status = job.status or {}
    publish(
        "job",
        job.key,
        tenant_id=job.tenant_id,
        phase=job.phase,
        **{k: status.get(k, 0) for k in ("pending", "running", "succeeded", "failed", "retryCount")},
    )
