"""Entry points of the runtime controllers; Celery tasks, hooks and the embedded loops call these.

Every function is idempotent and takes ids: it locks the rows it works on, derives what changed from
the database mirror and the controller's own records, and acts (Volcano's job controller, gc-controller,
pg-controller for bare pods and queue controller).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery, Sum
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.utils import timezone

from volcanoweb.audit import services as audit
from volcanoweb.clusters.backend import get_backend
from volcanoweb.clusters.backends.base import BackendError, ClusterBackend
from volcanoweb.core.stageprof import stage
from volcanoweb.feed import log as feed_log
from volcanoweb.jobs.models import Command, EventType, Job, Pod, PodGroup, PodGroupPhase, Task
from volcanoweb.jobs.services import record_event
from volcanoweb.queues.models import Queue
from volcanoweb.runtime import informer
from volcanoweb.runtime import policies as P
from volcanoweb.runtime import state as S
from volcanoweb.runtime.controllers import queue as queue_controller
from volcanoweb.runtime.controllers.job import JobController
from volcanoweb.runtime.controllers.job_base import ControllerError
from volcanoweb.runtime.controllers.job_writes import Prefetched, Writes
from volcanoweb.runtime.controllers.podgroup import group_bare_pod
from volcanoweb.runtime.models import ArmedAction, JobRecord, PodRecord

log = logging.getLogger(__name__)
IDLE_PHASES = (*S.FINISHED, S.ABORTED)
ADMITTED_PG_PHASES = (PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING)
JOB_ACTIONS = (P.ABORT_JOB, P.RESUME_JOB, P.RESTART_JOB, P.TERMINATE_JOB, P.COMPLETE_JOB)
#: Jobs reconciled together by a resync that is not queued (``sync_jobs``; the drains use dispatch.BATCH).
RESYNC_BATCH = 20

__all__ = [
    "gc_finished_jobs",
    "group_bare_pods",
    "on_job_deleted",
    "on_job_submitted",
    "on_podgroups_changed",
    "on_pods_changed",
    "resync_controllers",
    "sync_job",
    "sync_jobs",
    "sync_queues",
]


def _consume_commands(job: Job, pending: list[Command] | None = None) -> list[P.Request]:
    """Mark the job's pending commands consumed (in the caller's transaction) and return their requests.

    ``pending``: the job's unconsumed commands, already read and locked by the caller.
    """
    requests: list[P.Request] = []
    now = timezone.now()
    if pending is None:
        pending = list(
            Command.objects.select_for_update(no_key=True).filter(job=job, consumed_at__isnull=True).order_by("id")
        )
    for command in pending:
        if command.action not in JOB_ACTIONS:
            command.consumed_at, command.result = now, f"unsupported action {command.action} for a Job"
        else:
            command.consumed_at, command.result = now, f"executed {command.action}"
            requests.append(P.Request(event=P.COMMAND_ISSUED, action=command.action))
        command.save(update_fields=["consumed_at", "result"])
    return requests


def _has_live_pods(job: Job) -> bool:
    return Pod.objects.filter(job=job).exclude(phase__in=("Succeeded", "Failed")).exists()


@stage("controller sync")
def sync_job(job_id: int, *, backend: ClusterBackend | None = None, now: datetime | None = None) -> list[str]:
    """Reconcile one job: consume its commands, fire due timers, react to pod/PodGroup changes, sync.

    Returns the non-sync actions executed (e.g. ``["RestartJob"]``). A missing job has its cluster
    objects cleaned up; a job being deleted (finalizers) is cleaned up and removed.
    """
    backend = backend or get_backend()
    now = now or timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update(no_key=True).filter(pk=job_id).first()
        if job is None:
            _cleanup_records(JobRecord.objects.filter(job_id=job_id), backend)
            return []
        return _reconcile_locked(job, backend, now)


def _reconcile_locked(
    job: Job,
    backend: ClusterBackend,
    now: datetime,
    prefetched: Prefetched | None = None,
    commands: list[Command] | None = None,
    writes: Writes | None = None,
) -> list[str]:
    """Reconcile a locked job row (its rows read here, or ``prefetched`` with its ``commands`` by a batch,
    whose ``writes`` are made together at its end)."""
    if job.deletion_timestamp is not None:
        if writes is not None:
            writes.flush()
        _finalize(job, backend)
        return []
    controller = JobController(job, backend, now, prefetched, writes)
    requests = [*_consume_commands(job, commands), *controller.due_actions()]
    default_sync = job.phase not in IDLE_PHASES or (
        _has_live_pods(job)
        if prefetched is None
        else any(p.phase not in ("Succeeded", "Failed") for p in prefetched.pods)
    )
    try:
        return controller.reconcile(requests, default_sync=default_sync)
    except (ControllerError, BackendError) as exc:
        log.warning("job %s: %s", job.key, exc)
        record_event(job, "Job", EventType.WARNING, "SyncError", str(exc), source="job-controller")
        return controller.executed


@stage("controller sync")
def sync_jobs(
    job_ids: list[int], *, backend: ClusterBackend | None = None, now: datetime | None = None
) -> dict[int, list[str]]:
    """Reconcile several jobs as :func:`sync_job` does, set-based: a fixed number of queries for the batch.

    Every job row is locked first (in id order), so nobody else reconciles them meanwhile; then their
    records, tasks, PodGroups, pods, pod records, armed timers and unconsumed commands are read with one
    query per kind for all of them; each job is reconciled in Python, and what they write (job and task
    status, records, new pod rows) is written at the end with one statement per kind, the new pods created
    in the cluster with one ``create_pods`` call (:class:`~volcanoweb.runtime.controllers.job_writes.Writes`).

    If anything unexpected happens (a job's reconcile raises, or the cluster answers a creation in a way
    the deferred rows do not model), the batch is rolled back and redone the per-job way: immediate writes,
    each job in its own savepoint, so that a job that fails is rolled back (and logged; the resync retries
    it) without the others.
    """
    from volcanoweb.live import broadcast

    backend = backend or get_backend()
    now = now or timezone.now()
    ids = sorted({int(i) for i in job_ids})
    with transaction.atomic():
        jobs = {j.pk: j for j in Job.objects.select_for_update(no_key=True).filter(pk__in=ids).order_by("pk")}
        checkpoint = broadcast.pending_snapshot()
        try:
            with transaction.atomic():
                return _sync_batch(ids, jobs, backend, now, deferred=True)
        except Exception as exc:  # rolled back: redo with immediate writes and a savepoint per job
            log.info("batch sync of %d jobs redone job by job: %r", len(ids), exc)
            broadcast.restore_pending(checkpoint)
        jobs = {j.pk: j for j in Job.objects.filter(pk__in=ids).order_by("pk")}  # fresh rows, still locked
        return _sync_batch(ids, jobs, backend, now, deferred=False)


@dataclass
class _BatchRows:
    """The rows of a batch's locked jobs, read with one query per kind and keyed by job (or record) id."""

    records: dict[int, JobRecord]
    groups: dict[int | None, PodGroup]
    pods: dict[int, list[Pod]]
    tasks: dict[int, list[Task]]
    pod_records: dict[int, list[PodRecord]]
    armed: dict[int, list[ArmedAction]]
    with_armed: set[int]
    commands: dict[int, list[Command]]
    queues: set[str]

    def prefetched(self, job_id: int, job: Job) -> Prefetched:
        """One job's rows, as its controller takes them."""
        record = self.records.get(job_id)
        return Prefetched(
            record=record,
            podgroup=self.groups.get(job_id),
            pods=self.pods.get(job_id, []),
            pod_records=self.pod_records.get(record.pk, []) if record is not None else [],
            armed_due=self.armed.get(record.pk, []) if record is not None else [],
            queue_exists=job.queue_name in self.queues,
            tasks=self.tasks.get(job_id, []),
            has_armed=record is not None and record.pk in self.with_armed,
        )


def _read_batch(jobs: dict[int, Job], now: datetime) -> _BatchRows:
    """Read the locked jobs' records, PodGroups, pods, tasks, pod records, armed timers (those due at ``now``),
    unconsumed commands (locked too) and queues."""
    job_ids = list(jobs)
    records = {r.job_id: r for r in JobRecord.objects.filter(job_id__in=job_ids)}
    record_ids = [r.pk for r in records.values()]
    groups = {g.job_id: g for g in PodGroup.objects.filter(job_id__in=job_ids)}
    pods: dict[int, list[Pod]] = {}
    for pod in Pod.objects.filter(job_id__in=job_ids).order_by("job_id", "name"):
        pods.setdefault(pod.job_id or 0, []).append(pod)
    tasks: dict[int, list[Task]] = {}
    for task in Task.objects.filter(job_id__in=job_ids).order_by("job_id", "id"):
        tasks.setdefault(task.job_id, []).append(task)
    pod_records: dict[int, list[PodRecord]] = {}
    for rec in PodRecord.objects.filter(job_record_id__in=record_ids):
        pod_records.setdefault(rec.job_record_id, []).append(rec)
    armed: dict[int, list[ArmedAction]] = {}
    with_armed: set[int] = set()
    for action in ArmedAction.objects.filter(job_record_id__in=record_ids).order_by("fire_at", "id"):
        with_armed.add(action.job_record_id)
        if action.fire_at <= now:
            armed.setdefault(action.job_record_id, []).append(action)
    commands: dict[int, list[Command]] = {}
    pending = Command.objects.select_for_update(no_key=True).filter(job_id__in=job_ids, consumed_at__isnull=True)
    for command in pending.order_by("id"):
        commands.setdefault(command.job_id or 0, []).append(command)
    queues = set(Queue.objects.filter(name__in={j.queue_name for j in jobs.values()}).values_list("name", flat=True))
    return _BatchRows(records, groups, pods, tasks, pod_records, armed, with_armed, commands, queues)


def _sync_batch(
    ids: list[int], jobs: dict[int, Job], backend: ClusterBackend, now: datetime, *, deferred: bool
) -> dict[int, list[str]]:
    """Read the batch's rows, reconcile each job; ``deferred``: write at the end (else at once, a savepoint each)."""
    from volcanoweb.live import broadcast

    out: dict[int, list[str]] = {}
    rows = _read_batch(jobs, now)
    writes = Writes(backend, deferred=deferred)
    for job_id in ids:
        job = jobs.get(job_id)
        checkpoint = broadcast.pending_snapshot()
        try:
            with transaction.atomic() if not deferred else nullcontext():
                if job is None:
                    writes.flush()
                    _cleanup_records(JobRecord.objects.filter(job_id=job_id), backend)
                    out[job_id] = []
                    continue
                prefetched = rows.prefetched(job_id, job)
                out[job_id] = _reconcile_locked(job, backend, now, prefetched, rows.commands.get(job_id, []), writes)
        except Exception:
            if deferred:
                raise  # the caller redoes the batch job by job
            log.exception("sync of job %s failed", job_id)  # rolled back to its savepoint; the others go on
            broadcast.restore_pending(checkpoint)
            out[job_id] = []
    writes.flush()
    return out


def on_job_submitted(job_id: int, *, backend: ClusterBackend | None = None) -> list[str]:
    """A job was created or its spec changed: sync it (status, plugins, PodGroup; pods once admitted)."""
    return sync_job(job_id, backend=backend)


def on_pods_changed(job_ids: list[int], *, backend: ClusterBackend | None = None) -> dict[int, list[str]]:
    """The backend mirror changed these jobs' pod rows: derive PodFailed, PodEvicted, TaskCompleted... and act."""
    return {job_id: sync_job(job_id, backend=backend) for job_id in sorted(set(job_ids))}


def on_podgroups_changed(job_ids: list[int], *, backend: ClusterBackend | None = None) -> dict[int, list[str]]:
    """The scheduler changed these jobs' PodGroup phases (Inqueue ⇒ pods are created; Unknown ⇒ event)."""
    return on_pods_changed(job_ids, backend=backend)


def on_job_deleted(
    job_id: int | None = None, *, job_uid: str | uuid.UUID | None = None, backend: ClusterBackend | None = None
) -> int:
    """A job was deleted (or marked for deletion): remove its pods and plugin objects from the cluster.

    Returns how many controller records were cleaned up.
    """
    backend = backend or get_backend()
    with transaction.atomic():
        if job_id is not None:
            job = Job.objects.select_for_update(no_key=True).filter(pk=job_id).first()
            if job is not None:
                if job.deletion_timestamp is None:
                    return 0
                _finalize(job, backend)
                return 1
        records = JobRecord.objects.none()
        if job_id is not None:
            records = JobRecord.objects.filter(job_id=job_id)
        elif job_uid is not None:
            records = JobRecord.objects.filter(job_uid=job_uid)
        return _cleanup_records(records, backend)


def _cleanup_records(records: Any, backend: ClusterBackend) -> int:
    count = 0
    for record in list(records):
        _delete_cluster_objects(record, backend)
        record.delete()
        count += 1
    return count


def _delete_cluster_objects(record: JobRecord, backend: ClusterBackend) -> None:
    try:
        for pod in backend.list_pods(namespace=record.namespace):
            if pod.owner is not None and pod.owner.uid == str(record.job_uid):
                backend.delete_pod(pod.namespace, pod.name)
        plugins = set(record.resources.get("plugins") or [])
        if "svc" in plugins:
            backend.delete_config_map(record.namespace, f"{record.name}-svc")
            backend.delete_service(record.namespace, record.name)
        if "ssh" in plugins:
            backend.delete_secret(record.namespace, f"{record.name}-ssh")
    except BackendError as exc:  # the periodic resync retries orphans
        log.warning("clean-up of job %s/%s incomplete: %s", record.namespace, record.name, exc)
        raise


def _finalize(job: Job, backend: ClusterBackend) -> None:
    """Clean up a job marked for deletion, then remove its row (what its finalizer waited for)."""
    _cleanup_records(JobRecord.objects.filter(job_id=job.pk), backend)
    key, tenant = job.key, job.tenant
    job.delete()
    audit.record(None, "delete", "Job", key, tenant=tenant, source="controller", message="finalized")


# ---------------------------------------------------------------------- TTL


def _finished_at(job: Job) -> datetime | None:
    text = ((job.status or {}).get("state") or {}).get("lastTransitionTime")
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def cluster_speed(backend: ClusterBackend | None) -> float:
    """Cluster seconds per wall second: above 1 for a simulated cluster whose clock runs fast, else 1."""
    read = getattr(backend, "settings", None)
    try:
        speed = float(read().get("speed") or 1.0) if callable(read) else 1.0
    except (BackendError, TypeError, ValueError):
        speed = 1.0
    return speed if speed > 0 else 1.0


def gc_finished_jobs(*, now: datetime | None = None, backend: ClusterBackend | None = None) -> list[str]:
    """Delete jobs whose ``ttlSecondsAfterFinished`` has passed since they finished (Completed/Failed/Terminated).

    The TTL is in the cluster's time: on a simulated cluster running N times faster than real time,
    a job's hour passes in 1/N of an hour, like its pods' durations. Returns the deleted ``namespace/name`` keys.
    """
    now = now or timezone.now()
    speed = cluster_speed(backend or get_backend())
    deleted: list[str] = []
    candidates = Job.objects.filter(phase__in=S.FINISHED, deletion_timestamp__isnull=True).values_list("pk", flat=True)
    for job_id in candidates:
        with transaction.atomic():
            job = Job.objects.select_for_update(no_key=True).filter(pk=job_id, phase__in=S.FINISHED).first()
            ttl = (job.spec or {}).get("ttlSecondsAfterFinished") if job is not None else None
            if job is None or ttl is None:
                continue
            finished = _finished_at(job)
            if finished is None or finished + timedelta(seconds=int(ttl) / speed) > now:
                continue
            key, tenant, job_pk = job.key, job.tenant, job.pk
            job.delete()
            audit.record(
                None,
                "delete",
                "Job",
                key,
                tenant=tenant,
                source="controller",
                message=f"ttlSecondsAfterFinished {ttl} expired",
            )
        try:
            on_job_deleted(job_pk, backend=backend)
        except BackendError as exc:
            log.warning("TTL clean-up of %s: %s (the resync retries)", key, exc)
        deleted.append(key)
    return deleted


# ---------------------------------------------------------------------- bare pods, queues, resync


def group_bare_pods(*, backend: ClusterBackend | None = None) -> int:
    """Give every Volcano-scheduled pod without a group annotation its PodGroup (Volcano's pg-controller)."""
    pods = Pod.objects.filter(job__isnull=True, group_name="", scheduler_name="volcano")
    pods = pods.filter(deletion_timestamp__isnull=True)
    count = 0
    for pod_id in pods.values_list("pk", flat=True):
        with transaction.atomic():
            pod = Pod.objects.select_for_update(no_key=True).filter(pk=pod_id, group_name="").first()
            if pod is None:
                continue
            if group_bare_pod(pod, backend if backend is not None else _optional_backend()) is not None:
                count += 1
    return count


def _optional_backend() -> ClusterBackend | None:
    try:
        return get_backend()
    except Exception:  # no backend configured yet: the row is annotated, the cluster pod later
        return None


def sync_queues(names: list[str] | None = None) -> dict[str, str]:
    """Run the queue controller (Open/Closing/Closed, PodGroup counts, queue commands); return states."""
    return queue_controller.sync_queues(names)


def due_job_ids(now: datetime) -> set[int]:
    """Return the jobs with work due whatever their pods: a deletion, an unconsumed command, a due timer,
    or a transitional phase (Restarting, Aborting, ...). A few indexed queries."""
    due = Q(deletion_timestamp__isnull=False) | Q(commands__consumed_at__isnull=True, commands__isnull=False)
    due |= ~Q(phase__in=(*IDLE_PHASES, S.PENDING, S.RUNNING, ""))
    ids = set(Job.objects.filter(due).values_list("pk", flat=True))
    ids |= set(ArmedAction.objects.filter(fire_at__lte=now).values_list("job_record__job_id", flat=True))
    return ids


def drifted_job_ids(now: datetime, *, since: int | None = None, carry: Collection[int] = ()) -> list[int]:
    """Return the jobs whose rows differ from what the controller last saw, or that have work due.

    Drift is a job never synced (no record), a PodGroup phase other than the recorded one, a pod without a
    matching record (new, or its phase changed), a record whose pod is gone, a pod the cluster deleted, or an
    admitted job with fewer pods than replicas (a failed or waiting creation); work due is an unconsumed
    command, a deletion, a due timer or a transitional phase (Restarting, Aborting, ...).

    ``since``: a revision of the change log up to which a previous check looked; only the jobs the log shows
    changed after it (:func:`~volcanoweb.runtime.informer.touched_jobs_sql`) and those in ``carry`` (the
    previous check's finds, which may still be drifted) are checked for drift, so that the check costs what
    changed, not every job in the system. None, or a revision the log has compacted past: every job.
    """
    record = JobRecord.objects.filter(job_id=OuterRef("pk"))
    recorded_phase = JobRecord.objects.filter(job_id=OuterRef(OuterRef("pk"))).values("podgroup_phase")[:1]
    podgroup = PodGroup.objects.filter(job=OuterRef("pk"))
    seen_pod = PodRecord.objects.filter(
        job_record__job_id=OuterRef("job_id"), name=OuterRef("name"), phase=OuterRef("phase")
    )
    unseen_pod = Pod.objects.filter(job=OuterRef("pk")).filter(~Exists(seen_pod) | Q(status__has_key="deleted"))
    pod_of_record = Pod.objects.filter(job_id=OuterRef("job_record__job_id"), name=OuterRef("name"))
    lost_pod = PodRecord.objects.filter(job_record__job_id=OuterRef("pk")).filter(~Exists(pod_of_record))
    drift = (
        ~Exists(record)
        | Exists(podgroup.exclude(phase=Subquery(recorded_phase)))
        | (~Exists(podgroup) & Exists(record.exclude(podgroup_phase="")))
        | Exists(unseen_pod)
        | Exists(lost_pod)
    )
    jobs = Job.objects.all()
    if since is not None and since >= feed_log.head()[1]:  # else the log no longer holds what changed after it
        sql, params = informer.touched_jobs_sql(since)
        jobs = jobs.filter(Q(pk__in=RawSQL(sql, params)) | Q(pk__in=sorted(carry)))
    ids = due_job_ids(now)
    ids |= set(jobs.exclude(phase__in=IDLE_PHASES).filter(drift).values_list("pk", flat=True))
    ids |= set(
        jobs.filter(phase__in=IDLE_PHASES).filter(Exists(unseen_pod) | Exists(lost_pod)).values_list("pk", flat=True)
    )
    replicas = Task.objects.filter(job=OuterRef("pk")).values("job").annotate(n=Sum("replicas")).values("n")
    pods = Pod.objects.filter(job=OuterRef("pk")).values("job").annotate(n=Count("id")).values("n")
    short = (
        jobs.filter(phase__in=(S.PENDING, S.RUNNING, ""), podgroup__phase__in=ADMITTED_PG_PHASES)
        .annotate(want=Subquery(replicas), have=Coalesce(Subquery(pods), 0))
        .filter(have__lt=F("want"))
    )
    ids |= set(short.values_list("pk", flat=True))
    return sorted(ids)


def busy_job_ids(now: datetime) -> list[int]:
    """Every job a full resync reconciles: unfinished, being deleted, with a command, a due timer or live pods."""
    busy = Q(deletion_timestamp__isnull=False) | ~Q(phase__in=IDLE_PHASES)
    busy |= Q(commands__consumed_at__isnull=True, commands__isnull=False)
    busy |= Q(pods__phase__in=("Pending", "Running", "Unknown"))
    armed = ArmedAction.objects.filter(fire_at__lte=now).values_list("job_record__job_id", flat=True)
    busy |= Q(pk__in=list(armed))
    return sorted(set(Job.objects.filter(busy).values_list("pk", flat=True)))


def _clean_orphans(backend: ClusterBackend) -> int:
    """Clean up after the jobs whose records outlived them (a missed deletion); return the objects removed."""
    orphans = JobRecord.objects.exclude(job_id__in=Job.objects.values_list("pk", flat=True))
    cleaned = 0
    for record_id in orphans.values_list("pk", flat=True):
        try:
            cleaned += on_job_deleted(None, job_uid=JobRecord.objects.get(pk=record_id).job_uid, backend=backend)
        except (BackendError, JobRecord.DoesNotExist):
            continue
    return cleaned


def resync_controllers(
    *,
    backend: ClusterBackend | None = None,
    now: datetime | None = None,
    full: bool = True,
    drift: bool = True,
    queue: bool = False,
    since: int | None = None,
    carry: Collection[int] = (),
) -> dict[str, Any]:
    """The periodic resync: jobs with work to do, orphaned records, bare pods, queues, TTLs.

    ``full`` reconciles every busy job (unfinished, or with live pods); otherwise the jobs
    :func:`drifted_job_ids` finds, which is what a missed or failed notification leaves behind
    (with ``drift=False`` only :func:`due_job_ids`: timers, commands, deletions, transitional phases);
    ``since`` and ``carry`` scope the drift check (:func:`drifted_job_ids`); the result's ``drifted`` lists what
    it found (the next one's carry).
    With ``queue`` the jobs are handed to :func:`volcanoweb.runtime.dispatch.request_sync` (coalesced with
    the syncs already asked for) instead of being reconciled here.
    """
    backend = backend or get_backend()
    now = now or timezone.now()
    drifted: list[int] = []
    if full:
        job_ids = busy_job_ids(now)
    elif drift:
        job_ids = drifted_job_ids(now, since=since, carry=carry)
        drifted = list(job_ids)
    else:
        job_ids = sorted(due_job_ids(now))
    synced, queued = 0, 0
    if queue:
        from volcanoweb.runtime import dispatch

        dispatch.request_sync(job_ids)
        queued, job_ids = len(job_ids), []
    for start in range(0, len(job_ids), RESYNC_BATCH):
        batch = job_ids[start : start + RESYNC_BATCH]
        try:
            sync_jobs(batch, backend=backend, now=now)  # a failing job is rolled back alone
            synced += len(batch)
        except Exception:  # one broken batch must not stop the others
            log.exception("sync of jobs %s failed", batch)
    return {
        "full": full,
        "drifted": drifted,
        "jobs": synced,
        "queued": queued,
        "orphans": _clean_orphans(backend),
        "bare_pods": group_bare_pods(backend=backend),
        "queues": sync_queues(),
        "ttl_deleted": gc_finished_jobs(now=now, backend=backend),
    }
