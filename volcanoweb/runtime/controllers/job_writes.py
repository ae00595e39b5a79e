"""The job controller's rows read and written per batch: :class:`Prefetched` in, :class:`Writes` out.

``services.sync_jobs`` reads the rows of many locked jobs with one query per kind (a :class:`Prefetched`
per job) and makes what their controllers write with one statement per kind at the end (one
:class:`Writes` for the batch); the per-job path uses an immediate ``Writes`` (``deferred=False``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from volcanoweb.clusters.backends.base import BackendError, ClusterBackend, Conflict, PodInfo, PodSpec
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.jobs.models import Job, Pod, PodGroup, PriorityClass, Task
from volcanoweb.runtime.models import ArmedAction, JobRecord, PodRecord


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
class PodCreation:
    """A pod whose row is built and whose cluster creation waits for the batch's flush."""

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
    creations: list[PodCreation] = field(default_factory=list)
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
