"""Entry points of the runtime controllers; Celery tasks, hooks and the embedded loops call these.

Every function is idempotent and takes ids: it locks the rows it works on, derives what changed from
the database mirror and the controller's own records, and acts (Volcano's job controller, gc-controller,
pg-controller for bare pods and queue controller).
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from volcanoweb.audit import services as audit
from volcanoweb.clusters.backends.base import BackendError, ClusterBackend
from volcanoweb.jobs.models import Command, EventType, Job, Pod
from volcanoweb.jobs.services import record_event
from volcanoweb.runtime import policies as P
from volcanoweb.runtime import queuecontrol
from volcanoweb.runtime import state as S
from volcanoweb.runtime.backend import get_backend, set_backend
from volcanoweb.runtime.controller import ControllerError, JobController
from volcanoweb.runtime.models import ArmedAction, JobRecord
from volcanoweb.runtime.podgroups import group_bare_pod

log = logging.getLogger(__name__)
IDLE_PHASES = (*S.FINISHED, S.ABORTED)
JOB_ACTIONS = (P.ABORT_JOB, P.RESUME_JOB, P.RESTART_JOB, P.TERMINATE_JOB, P.COMPLETE_JOB)

__all__ = [
    "gc_finished_jobs",
    "group_bare_pods",
    "on_job_deleted",
    "on_job_submitted",
    "on_podgroups_changed",
    "on_pods_changed",
    "resync_controllers",
    "set_backend",
    "sync_job",
    "sync_queues",
]


def _consume_commands(job: Job) -> list[P.Request]:
    """Mark the job's pending commands consumed (in the caller's transaction) and return their requests."""
    requests: list[P.Request] = []
    now = timezone.now()
    for command in Command.objects.select_for_update().filter(job=job, consumed_at__isnull=True).order_by("id"):
        if command.action not in JOB_ACTIONS:
            command.consumed_at, command.result = now, f"unsupported action {command.action} for a Job"
        else:
            command.consumed_at, command.result = now, f"executed {command.action}"
            requests.append(P.Request(event=P.COMMAND_ISSUED, action=command.action))
        command.save(update_fields=["consumed_at", "result"])
    return requests


def _has_live_pods(job: Job) -> bool:
    return Pod.objects.filter(job=job).exclude(phase__in=("Succeeded", "Failed")).exists()


def sync_job(job_id: int, *, backend: ClusterBackend | None = None, now: datetime | None = None) -> list[str]:
    """Reconcile one job: consume its commands, fire due timers, react to pod/PodGroup changes, sync.

    Returns the non-sync actions executed (e.g. ``["RestartJob"]``). A missing job has its cluster
    objects cleaned up; a job being deleted (finalizers) is cleaned up and removed.
    """
    backend = backend or get_backend()
    now = now or timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            _cleanup_records(JobRecord.objects.filter(job_id=job_id), backend)
            return []
        if job.deletion_timestamp is not None:
            _finalize(job, backend)
            return []
        controller = JobController(job, backend, now)
        requests = [*_consume_commands(job), *controller.due_actions()]
        default_sync = job.phase not in IDLE_PHASES or _has_live_pods(job)
        try:
            return controller.reconcile(requests, default_sync=default_sync)
        except (ControllerError, BackendError) as exc:
            log.warning("job %s: %s", job.key, exc)
            record_event(job, "Job", EventType.WARNING, "SyncError", str(exc), source="job-controller")
            return controller.executed


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
            job = Job.objects.select_for_update().filter(pk=job_id).first()
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
            job = Job.objects.select_for_update().filter(pk=job_id, phase__in=S.FINISHED).first()
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
            _publish_deleted(key, tenant.pk if tenant else None)
        try:
            on_job_deleted(job_pk, backend=backend)
        except BackendError as exc:
            log.warning("TTL clean-up of %s: %s (the resync retries)", key, exc)
        deleted.append(key)
    return deleted


def _publish_deleted(key: str, tenant_id: int | None) -> None:
    from volcanoweb.live.broadcast import publish

    publish("job", key, tenant_id=tenant_id, deleted=True)


# ---------------------------------------------------------------------- bare pods, queues, resync


def group_bare_pods(*, backend: ClusterBackend | None = None) -> int:
    """Give every Volcano-scheduled pod without a group annotation its PodGroup (Volcano's pg-controller)."""
    pods = Pod.objects.filter(job__isnull=True, group_name="", scheduler_name="volcano")
    pods = pods.filter(deletion_timestamp__isnull=True)
    count = 0
    for pod_id in pods.values_list("pk", flat=True):
        with transaction.atomic():
            pod = Pod.objects.select_for_update().filter(pk=pod_id, group_name="").first()
            if pod is None:
                continue
            group_bare_pod(pod, backend if backend is not None else _optional_backend())
            count += 1
    return count


def _optional_backend() -> ClusterBackend | None:
    try:
        return get_backend()
    except Exception:  # no backend configured yet: the row is annotated, the cluster pod later
        return None


def sync_queues(names: list[str] | None = None) -> dict[str, str]:
    """Run the queue controller (Open/Closing/Closed, PodGroup counts, queue commands); return states."""
    return queuecontrol.sync_queues(names)


def resync_controllers(*, backend: ClusterBackend | None = None, now: datetime | None = None) -> dict[str, Any]:
    """The periodic resync: every job with work to do, orphaned records, bare pods, queues, TTLs."""
    backend = backend or get_backend()
    now = now or timezone.now()
    busy = Q(deletion_timestamp__isnull=False) | ~Q(phase__in=IDLE_PHASES)
    busy |= Q(commands__consumed_at__isnull=True, commands__isnull=False)
    busy |= Q(pods__phase__in=("Pending", "Running", "Unknown"))
    armed = ArmedAction.objects.filter(fire_at__lte=now).values_list("job_record__job_id", flat=True)
    busy |= Q(pk__in=list(armed))
    job_ids = sorted(set(Job.objects.filter(busy).values_list("pk", flat=True)))
    synced = 0
    for job_id in job_ids:
        try:
            sync_job(job_id, backend=backend, now=now)
            synced += 1
        except Exception:  # one broken job must not stop the others
            log.exception("sync of job %s failed", job_id)
    orphans = JobRecord.objects.exclude(job_id__in=Job.objects.values_list("pk", flat=True))
    cleaned = 0
    for record_id in orphans.values_list("pk", flat=True):
        try:
            cleaned += on_job_deleted(None, job_uid=JobRecord.objects.get(pk=record_id).job_uid, backend=backend)
        except (BackendError, JobRecord.DoesNotExist):
            continue
    return {
        "jobs": synced,
        "orphans": cleaned,
        "bare_pods": group_bare_pods(backend=backend),
        "queues": sync_queues(),
        "ttl_deleted": gc_finished_jobs(now=now, backend=backend),
    }
