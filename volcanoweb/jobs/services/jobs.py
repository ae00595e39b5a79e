"""Writes for Jobs: their apply (one or in bulk), with the Task rows and the PodGroup a Job owns; their
delete, with Kubernetes' garbage collection of the objects they own; and a new run of a finished Job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from scheduler.quantity import format_quantity
from volcanoweb.audit import services as audit
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.errors import ApiError, BadRequest, Conflict, Errors, NotFound, invalid, not_found
from volcanoweb.jobs.models import Job, JobPhase, Pod, PodGroup, Task
from volcanoweb.jobs.services.common import get_for_write
from volcanoweb.jobs.services.podgroups import delete_podgroup
from volcanoweb.jobs.services.pods import delete_pod
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.admission import (
    SubmissionQueue,
    check_priority_class,
    check_submission_queue,
    priority_values,
    queues_for_submission,
)
from volcanoweb.manifests.fields import Metadata, check_metadata
from volcanoweb.manifests.jobs import check_job_name, check_job_spec, check_job_update, task_min_resources
from volcanoweb.manifests.objects import Outcome, bump, check_existence, check_version, prepare, raise_if
from volcanoweb.tenancy.access import Access, namespaces_by_name, resolve_namespace
from volcanoweb.tenancy.models import Namespace

#: Kubernetes' propagation policies of a delete (garbage collection of the dependents).
BACKGROUND, FOREGROUND, ORPHAN = "Background", "Foreground", "Orphan"
PROPAGATION_POLICIES = (BACKGROUND, FOREGROUND, ORPHAN)
FOREGROUND_FINALIZER = "foregroundDeletion"


def _resources_text(vector: dict[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, amount) for name, amount in sorted(vector.items())}


def initial_job_status(spec: dict[str, Any]) -> dict[str, Any]:
    """Return the status of a just-submitted job, as Volcano's controller initialises it."""
    now = render.timestamp(timezone.now())
    return {
        "state": {"phase": JobPhase.PENDING.value, "lastTransitionTime": now},
        "minAvailable": spec["minAvailable"],
        "pending": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "terminating": 0,
        "unknown": 0,
        "retryCount": 0,
        "version": 0,
        "taskStatusCount": {},
        "conditions": [{"status": JobPhase.PENDING.value, "lastTransitionTime": now}],
    }


def _task_fields(position: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "position": position,
        "replicas": spec.get("replicas", 0),
        "min_available": spec.get("minAvailable", 0),
        "max_retry": spec.get("maxRetry", 3),
        "template": spec.get("template") or {},
        "policies": spec.get("policies") or [],
        "depends_on": spec.get("dependsOn"),
    }


def _new_tasks(job: Job) -> list[Task]:
    """Return the (unsaved) Task rows of a just-created job."""
    return [
        Task(job=job, name=spec["name"], **_task_fields(position, spec))
        for position, spec in enumerate(job.spec.get("tasks", []))
    ]


def _sync_tasks(job: Job) -> None:
    existing = {task.name: task for task in job.tasks.all()}
    for position, spec in enumerate(job.spec.get("tasks", [])):
        fields = _task_fields(position, spec)
        task = existing.get(spec["name"])
        if task is None:
            Task.objects.create(job=job, name=spec["name"], **fields)
        else:
            for key, value in fields.items():
                setattr(task, key, value)
            task.save(update_fields=list(fields))


def _podgroup_fields(job: Job) -> dict[str, Any]:
    min_resources = _resources_text(task_min_resources(job.spec))
    spec: dict[str, Any] = {
        "minMember": job.min_available,
        "minTaskMember": {t["name"]: t.get("minAvailable", 0) for t in job.spec.get("tasks", [])},
        "queue": job.queue_name,
    }
    if min_resources:
        spec["minResources"] = min_resources
    if job.priority_class_name:
        spec["priorityClassName"] = job.priority_class_name
    return {
        "queue_name": job.queue_name,
        "min_member": job.min_available,
        "min_task_member": spec["minTaskMember"],
        "min_resources": min_resources or None,
        "priority_class_name": job.priority_class_name,
        "spec": spec,
    }


def _new_podgroup(job: Job) -> PodGroup:
    """Return the (unsaved) PodGroup ``<job>-<uid>`` of a just-created job (as Volcano's job controller makes it)."""
    owner = {
        "apiVersion": parse.JOB.api_version,
        "kind": "Job",
        "name": job.name,
        "uid": str(job.uid),
        "controller": True,
    }
    return PodGroup(
        job=job,
        namespace=job.namespace,
        name=f"{job.name}-{job.uid}",
        tenant=job.tenant,
        owner_references=[owner],
        **_podgroup_fields(job),
    )


def _sync_podgroup(job: Job) -> None:
    """Create or refresh the job's PodGroup ``<job>-<uid>`` (as Volcano's job controller does)."""
    podgroup = PodGroup.objects.filter(job=job).first()
    if podgroup is None:
        _new_podgroup(job).save(force_insert=True)
        return
    fields = _podgroup_fields(job)
    for key, value in fields.items():
        setattr(podgroup, key, value)
    podgroup.save(update_fields=[*fields, *bump(podgroup, spec_changed=True)])


def _check_job_document(meta_name: str, spec: Any) -> tuple[Errors, dict[str, Any] | None]:
    """The checks of a Job document that need no database: its name, then its spec (defaulted)."""
    errors = Errors()
    check_job_name(errors, meta_name)
    defaulted = check_job_spec(errors, spec, meta_name)
    return errors, defaulted


def _admit_job(
    access: Access,
    meta_name: str,
    spec: Any,
    tenant: Any,
    existing: Job | None,
    *,
    checked: tuple[Errors, dict[str, Any] | None] | None = None,
    lookups: _Lookups | None = None,
) -> dict[str, Any]:
    errors, defaulted = checked if checked is not None else _check_job_document(meta_name, spec)
    raise_if(errors, parse.JOB, meta_name)
    assert defaulted is not None
    if existing is not None:
        check_job_update(errors, existing.spec, defaulted)
    elif not errors:
        queues = lookups.queues if lookups is not None else None
        check_submission_queue(errors, access, tenant, defaulted["queue"], queues=queues)
    if existing is None or defaulted.get("priorityClassName") != existing.priority_class_name:
        values = lookups.priorities if lookups is not None else None
        check_priority_class(errors, defaulted.get("priorityClassName"), "spec.priorityClassName", values)
    raise_if(errors, parse.JOB, meta_name)
    return defaulted


@dataclass
class _Lookups:
    """What a bulk apply reads once for all its jobs (see :func:`apply_jobs`)."""

    queues: dict[str, SubmissionQueue | None] = field(default_factory=dict)
    priorities: dict[str, int | None] = field(default_factory=dict)


@transaction.atomic
def apply_job(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a Job from its manifest (Volcano defaults and admission).

    As in Volcano, an update may change only minAvailable, priorityClassName and the tasks' replicas and
    minAvailable.

    Creating also writes the Task rows and the job's PodGroup; an update refreshes them. Writes an
    audit entry and fires ``notify.changed("Job", ...)`` after commit.
    """
    meta, namespace = prepare(access, doc, parse.JOB, default_namespace, name_check="label")
    assert namespace is not None
    existing = Job.objects.select_for_update(no_key=True).filter(namespace=namespace.name, name=meta.name).first()
    check_existence(parse.JOB, meta.name, existing, mode)
    check_version(parse.JOB, meta, existing)
    spec = _admit_job(access, meta.name, doc.get("spec"), namespace.tenant, existing)
    if existing is not None:
        outcome, entry = _update_job(access, existing, meta, namespace, spec)
        if entry is not None:
            entry.save(force_insert=True)
            notify.changed("Job", existing, "update")
        return outcome
    job = _new_job(access, meta, namespace, spec)
    job.save(force_insert=True)
    Task.objects.bulk_create(_new_tasks(job))  # a new job has no tasks nor PodGroup to look up
    _new_podgroup(job).save(force_insert=True)
    after = render.job(job)
    audit.record(access.user, "create", "Job", job.key, tenant=namespace.tenant, after=after)
    notify.changed("Job", job, "create")
    return Outcome("created", "Job", job.name, job.namespace, after)


def _new_job(access: Access, meta: Metadata, namespace: Namespace, spec: dict[str, Any]) -> Job:
    """Return the (unsaved) Job row of an admitted manifest."""
    owner_uid = next((o.get("uid") for o in meta.owner_references if isinstance(o, dict) and o.get("controller")), None)
    return Job(
        namespace=namespace.name,
        name=meta.name,
        tenant=namespace.tenant,
        labels=meta.labels,
        annotations=meta.annotations,
        queue_name=spec["queue"],
        min_available=spec["minAvailable"],
        max_retry=spec["maxRetry"],
        priority_class_name=spec.get("priorityClassName") or "",
        scheduler_name=spec["schedulerName"],
        spec=spec,
        status=initial_job_status(spec),
        owner_references=meta.owner_references,
        controller_uid=owner_uid,
        finalizers=meta.finalizers,
        created_by=access.user if getattr(access.user, "pk", None) else None,
    )


def _update_job(
    access: Access, existing: Job, meta: Metadata, namespace: Namespace, spec: dict[str, Any]
) -> tuple[Outcome, AuditEntry | None]:
    """Write an admitted update of a locked job (tasks and PodGroup refreshed); return the outcome and its
    unsaved audit entry (None when nothing changed). Raises Conflict for a job being deleted."""
    if existing.deletion_timestamp is not None:
        raise Conflict(f'jobs.batch.volcano.sh "{meta.name}" is being deleted', kind="Job", name=meta.name)
    if (existing.spec, existing.labels, existing.annotations) == (spec, meta.labels, meta.annotations):
        return Outcome("unchanged", "Job", meta.name, namespace.name, render.job(existing)), None
    before = render.job(existing)
    spec_changed = existing.spec != spec
    existing.spec, existing.labels, existing.annotations = spec, meta.labels, meta.annotations
    existing.min_available = spec["minAvailable"]
    existing.priority_class_name = spec.get("priorityClassName") or ""
    existing.status = {**existing.status, "minAvailable": spec["minAvailable"]}
    existing.save(
        update_fields=[
            "spec",
            "labels",
            "annotations",
            "min_available",
            "priority_class_name",
            "status",
            *bump(existing, spec_changed=spec_changed),
        ]
    )
    _sync_tasks(existing)
    _sync_podgroup(existing)
    after = render.job(existing)
    entry = audit.entry(access.user, "update", "Job", existing.key, tenant=namespace.tenant, before=before, after=after)
    return Outcome("configured", "Job", meta.name, namespace.name, after), entry


@dataclass
class _Batch:
    """What :func:`apply_jobs` checks and reads once for all its documents (lists by document position)."""

    docs: list[dict[str, Any]]
    metas: list[Metadata]
    #: each document's metadata errors (None when its metadata is fine)
    failures: list[Errors | None]
    #: each document's namespace name
    names: list[str]
    namespaces: dict[str, Namespace | None]
    #: the existing jobs the documents name, locked, by (namespace, name)
    existing: dict[tuple[str, str], Job]
    #: each document's checks that need no database (None when its metadata failed)
    checked: list[tuple[Errors, dict[str, Any] | None] | None]
    lookups: _Lookups


#: An admitted document of a bulk apply: its metadata, namespace, defaulted spec and existing job (if any).
_Plan = tuple[Metadata, Namespace, dict[str, Any], Job | None]


@transaction.atomic
def apply_jobs(
    access: Access,
    docs: list[dict[str, Any]],
    default_namespace: str | None = None,
    *,
    label: Callable[[int, ApiError], None] | None = None,
    mode: str = "apply",
) -> list[Outcome]:
    """Apply many Job manifests (``mode`` apply or create) as :func:`apply_job` does one after the other, in bulk.

    The same checks run in the same order for each document, and the first failing document (in order)
    raises the same error (``label(position, error)`` is called first, to name the document); but the
    namespaces, the existing jobs (locked), the queues and the priority classes are read once for all
    documents, new jobs, their tasks and PodGroups are inserted with one ``bulk_create`` each, the audit
    entries with one, and the controller is told about every job in one on-commit call.
    Names must be distinct (``(namespace, name)``); the caller applies a list with repeats one by one.
    Writes nothing unless every document passes.
    """
    batch = _read_batch(docs, default_namespace)
    plans = [_plan_job(access, batch, position, label, mode) for position in range(len(docs))]
    return _write_jobs(access, plans)


def _read_batch(docs: list[dict[str, Any]], default_namespace: str | None) -> _Batch:
    """Check every document's metadata, then read once what the documents name: their namespaces, their
    existing jobs (locked), and after the checks that need no database, their queues and priority classes."""
    failures: list[Errors | None] = []
    metas: list[Metadata] = []
    for doc in docs:
        meta_errors = Errors()
        metas.append(check_metadata(meta_errors, doc, namespaced=True, name_check="label"))
        failures.append(meta_errors if meta_errors else None)
    names = [m.namespace or default_namespace or "default" for m in metas]
    namespaces = namespaces_by_name(name for name, f in zip(names, failures, strict=True) if f is None)
    existing = _lock_existing_jobs(names, metas, failures, namespaces)
    checked = [
        _check_job_document(meta.name, doc.get("spec")) if failure is None else None
        for doc, meta, failure in zip(docs, metas, failures, strict=True)
    ]
    lookups = _Lookups(
        queues=queues_for_submission(c[1]["queue"] for c in checked if c and c[1] and not c[0]),
        priorities=priority_values(c[1].get("priorityClassName") for c in checked if c and c[1]),
    )
    return _Batch(docs, metas, failures, names, namespaces, existing, checked, lookups)


def _lock_existing_jobs(
    names: list[str], metas: list[Metadata], failures: list[Errors | None], namespaces: dict[str, Namespace | None]
) -> dict[tuple[str, str], Job]:
    """Read and lock, in one query, the existing jobs that the documents with good metadata name."""
    wanted: dict[str, list[str]] = {}
    for ns_name, meta, failure in zip(names, metas, failures, strict=True):
        if failure is None and namespaces.get(ns_name) is not None:
            wanted.setdefault(ns_name, []).append(meta.name)
    existing: dict[tuple[str, str], Job] = {}
    if wanted:
        where = Q()
        for ns_name, job_names in wanted.items():
            where |= Q(namespace=ns_name, name__in=job_names)
        for job in Job.objects.select_for_update(no_key=True).filter(where).order_by("pk"):
            existing[(job.namespace, job.name)] = job
    return existing


def _plan_job(
    access: Access, batch: _Batch, position: int, label: Callable[[int, ApiError], None] | None, mode: str
) -> _Plan:
    """Admit the document at ``position`` as :func:`apply_job` would (from what the batch read); on an error,
    call ``label`` first."""
    doc, meta, failure = batch.docs[position], batch.metas[position], batch.failures[position]
    try:
        if failure is not None:
            raise invalid(parse.JOB.kind, parse.JOB.group, meta.name, failure)
        namespace = resolve_namespace(
            access, batch.names[position], "create", parse.JOB, meta.name, namespaces=batch.namespaces
        )
        current = batch.existing.get((namespace.name, meta.name))
        check_existence(parse.JOB, meta.name, current, mode)
        check_version(parse.JOB, meta, current)
        spec = _admit_job(
            access,
            meta.name,
            doc.get("spec"),
            namespace.tenant,
            current,
            checked=batch.checked[position],
            lookups=batch.lookups,
        )
        if current is not None and current.deletion_timestamp is not None:
            raise Conflict(f'jobs.batch.volcano.sh "{meta.name}" is being deleted', kind="Job", name=meta.name)
    except ApiError as exc:
        if label is not None:
            label(position, exc)
        raise
    return meta, namespace, spec, current


def _write_jobs(access: Access, plans: list[_Plan]) -> list[Outcome]:
    """Write the admitted documents: the new jobs, their tasks and PodGroups in bulk, the updates one by one,
    then every audit entry at once and the controller's notifications on commit."""
    new_jobs = [_new_job(access, meta, ns, spec) for meta, ns, spec, current in plans if current is None]
    Job.objects.bulk_create(new_jobs)
    Task.objects.bulk_create([task for job in new_jobs for task in _new_tasks(job)])
    PodGroup.objects.bulk_create([_new_podgroup(job) for job in new_jobs])
    created = iter(new_jobs)
    outcomes: list[Outcome] = []
    entries: list[AuditEntry] = []
    updated: list[Job] = []
    for meta, namespace, spec, current in plans:
        if current is None:
            job = next(created)
            after = render.job(job)
            entries.append(audit.entry(access.user, "create", "Job", job.key, tenant=namespace.tenant, after=after))
            outcomes.append(Outcome("created", "Job", job.name, job.namespace, after))
            continue
        outcome, entry = _update_job(access, current, meta, namespace, spec)
        outcomes.append(outcome)
        if entry is not None:
            entries.append(entry)
            updated.append(current)
    audit.record_many(entries)
    notify.changed_many("Job", new_jobs, "create")
    notify.changed_many("Job", updated, "update")
    return outcomes


@transaction.atomic
def delete_job(access: Access, namespace: str, name: str, propagation: str = BACKGROUND) -> Outcome:
    """Delete a Job: at once when it has no finalizers (tasks, pods, PodGroup and commands go with it);
    otherwise set ``deletion_timestamp`` and leave the removal to the runtime's clean-up. Objects whose
    ownerReferences name the Job (other than its own PodGroup and pods) follow ``propagation``."""
    # FOR NO KEY UPDATE (get_for_write) until the row itself is deleted: the commit of a controller's change to
    # the job's PodGroup or pods key-share locks the job, and must not wait for us while we wait for its rows.
    job = get_for_write(access, Job, parse.JOB, namespace, name, "delete")
    before = render.job(job)
    collect_garbage(access, namespace, str(job.uid), propagation)
    if job.finalizers:
        if job.deletion_timestamp is None:
            job.deletion_timestamp = timezone.now()
            job.save(update_fields=["deletion_timestamp", *bump(job, spec_changed=False)])
        after: dict[str, Any] | None = render.job(job)
    else:
        # Lock the job's pods in id order, as the cluster mirror and the scheduler do: the delete below finds them
        # in the order they lie on disk and would hold one the mirror waits for while waiting for another.
        list(
            Pod.objects.select_for_update(no_key=True, of=("self",))
            .filter(job=job)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        # The row goes before its PodGroup (whose key to it is no constraint): lock the PodGroup first, while
        # the job is held FOR NO KEY UPDATE, so that a commit changing the PodGroup completes before we delete.
        list(
            PodGroup.objects.select_for_update(no_key=True).filter(job=job).order_by("pk").values_list("pk", flat=True)
        )
        job.delete()
        after = None
    audit.record(access.user, "delete", "Job", f"{namespace}/{name}", tenant=job.tenant, before=before, after=after)
    notify.changed("Job", job, "delete")
    answer = after or before
    if propagation == FOREGROUND:  # its pods and PodGroup went first: the answer is the API server's
        meta = answer["metadata"]
        meta.setdefault("deletionTimestamp", render.timestamp(timezone.now()))
        meta["finalizers"] = [*meta.get("finalizers", []), FOREGROUND_FINALIZER]
    return Outcome("deleted", "Job", name, namespace, answer)


# --- Garbage collection by ownerReferences ------------------------------------


def _owned_by(obj: Any, owner_uid: str) -> bool:
    return any(isinstance(ref, dict) and str(ref.get("uid")) == owner_uid for ref in obj.owner_references or [])


def dependents(namespace: str, owner_uid: str) -> list[Any]:
    """Return the objects of ``namespace`` whose ownerReferences name ``owner_uid``: Jobs, and PodGroups and
    pods that no Job manages (a Job's own PodGroup and pods go with it). In the order they are collected."""
    found: list[Any] = []
    for model, extra in ((Job, {}), (PodGroup, {"job__isnull": True}), (Pod, {"job__isnull": True})):
        rows = model.objects.filter(namespace=namespace, **extra).exclude(owner_references=[]).order_by("pk")
        found.extend(row for row in rows if _owned_by(row, owner_uid))
    return found


def collect_garbage(access: Access, namespace: str, owner_uid: str, policy: str) -> list[Outcome]:
    """Kubernetes' garbage collection for a deleted owner, in the caller's transaction.

    ``Background`` and ``Foreground``: delete every dependent (through its own delete, so a Job takes its
    PodGroup and pods, and a dependent's own dependents follow); ``Orphan``: remove the reference to the
    owner from each dependent, which stays. Returns the dependents' outcomes.
    """
    if policy not in PROPAGATION_POLICIES:
        raise BadRequest(f"unsupported propagationPolicy {policy!r}")
    outcomes: list[Outcome] = []
    for obj in dependents(namespace, owner_uid):
        kind = type(obj).__name__
        if policy == ORPHAN:
            obj.owner_references = [r for r in obj.owner_references if str(r.get("uid")) != owner_uid]
            obj.save(update_fields=["owner_references", *bump(obj, spec_changed=False)])
            audit.record(access.user, "orphan", kind, obj.key, tenant=obj.tenant, message=f"owner {owner_uid} deleted")
            notify.changed(kind, obj, "update")
            outcomes.append(Outcome("configured", kind, obj.name, namespace, {}))
            continue
        remove = {"Job": delete_job, "PodGroup": delete_podgroup, "Pod": _collect_pod}[kind]
        try:
            outcomes.append(remove(access, namespace, obj.name))
        except NotFound:
            continue  # gone already (a dependent of an earlier dependent)
    return outcomes


def _collect_pod(access: Access, namespace: str, name: str) -> Outcome:
    return delete_pod(access, namespace, name)


#: On a job made by :func:`run_again`: the name of the job it is a new run of (the first of the series).
RUN_OF_ANNOTATION = "volcanoweb.io/run-of"
#: Phases after which a job never runs again by itself (Volcano ignores commands then).
FINISHED_JOB_PHASES = (JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED)


def next_run_name(job: Job) -> str:
    """``<first>-<n>``: the first free name of the series the job belongs to (``n`` from 2), at most 63 characters."""
    base = (job.annotations or {}).get(RUN_OF_ANNOTATION) or job.name
    taken = set(Job.objects.filter(namespace=job.namespace).values_list("name", flat=True))
    n = 2
    while True:
        suffix = f"-{n}"
        name = f"{base[: 63 - len(suffix)].rstrip('-')}{suffix}"
        if name not in taken:
            return name
        n += 1


@transaction.atomic
def run_again(access: Access, namespace: str, name: str) -> Outcome:
    """Create a new job from a finished job's spec, named :func:`next_run_name` and annotated with the series'
    first name; the finished job is left as it is. Refused (409) for a job that has not finished: an apply of
    its own manifest would update it, and Volcano runs a finished job no more."""
    resolve_namespace(access, namespace, "create", parse.JOB, name)
    job = Job.objects.filter(namespace=namespace, name=name).first()
    if job is None:
        raise not_found(parse.JOB.qualified_resource, name, parse.JOB.kind, parse.JOB.group)
    if job.phase not in FINISHED_JOB_PHASES:
        raise Conflict(
            f"job {job.key} is {job.phase}: only a finished job (Completed, Failed or Terminated) can be run again",
            kind=parse.JOB.kind,
        )
    annotations = {k: v for k, v in (job.annotations or {}).items() if not k.startswith("kubectl.kubernetes.io/")}
    annotations[RUN_OF_ANNOTATION] = annotations.get(RUN_OF_ANNOTATION) or job.name
    doc = {
        "apiVersion": parse.JOB.api_version,
        "kind": parse.JOB.kind,
        "metadata": {
            "name": next_run_name(job),
            "namespace": namespace,
            "labels": dict(job.labels or {}),
            "annotations": annotations,
        },
        "spec": job.spec,
    }
    return apply_job(access, doc, namespace, mode="create")
