"""Writes for jobs, PodGroups, pods, PriorityClasses, commands and events (the only writers of these models)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from scheduler.decode import GROUP_ANNOTATION
from scheduler.quantity import format_quantity
from volcanoweb.audit import services as audit
from volcanoweb.audit.models import AuditEntry
from volcanoweb.clusters.backend import get_backend
from volcanoweb.clusters.models import Node
from volcanoweb.core.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Errors,
    Forbidden,
    NotFound,
    invalid,
    not_found,
)
from volcanoweb.jobs.models import (
    Command,
    CommandAction,
    Event,
    HyperNode,
    Job,
    JobPhase,
    Pod,
    PodGroup,
    PriorityClass,
    ResourceQuota,
    Task,
)
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.admission import (
    POD_QUEUE_ANNOTATION,
    SubmissionQueue,
    check_priority_class,
    check_submission_queue,
    pod_queue_name,
    priority_values,
    queues_for_submission,
)
from volcanoweb.manifests.fields import Metadata, check_dns_subdomain, check_metadata, check_resource_list, expect
from volcanoweb.manifests.jobs import check_job_name, check_job_spec, check_job_update, task_min_resources
from volcanoweb.manifests.objects import Outcome, bump, check_existence, check_version, prepare, raise_if
from volcanoweb.manifests.pods import check_jdb_annotations, check_pod_spec, pod_requests
from volcanoweb.manifests.workflows import check_hypernode, check_podgroup, check_priorityclass
from volcanoweb.tenancy.access import Access, forbidden, namespaces_by_name, resolve_namespace
from volcanoweb.tenancy.models import Namespace

#: Kubernetes' propagation policies of a delete (garbage collection of the dependents).
BACKGROUND, FOREGROUND, ORPHAN = "Background", "Foreground", "Orphan"
PROPAGATION_POLICIES = (BACKGROUND, FOREGROUND, ORPHAN)
FOREGROUND_FINALIZER = "foregroundDeletion"

COMMAND_ALIASES = {
    "abort": CommandAction.ABORT,
    "resume": CommandAction.RESUME,
    "restart": CommandAction.RESTART,
    "terminate": CommandAction.TERMINATE,
    "complete": CommandAction.COMPLETE,
}
JOB_COMMANDS = (
    CommandAction.ABORT,
    CommandAction.RESUME,
    CommandAction.RESTART,
    CommandAction.TERMINATE,
    CommandAction.COMPLETE,
)


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
    existing = Job.objects.select_for_update().filter(namespace=namespace.name, name=meta.name).first()
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


@transaction.atomic
def apply_jobs(
    access: Access,
    docs: list[dict[str, Any]],
    default_namespace: str | None = None,
    *,
    label: Callable[[int, ApiError], None] | None = None,
) -> list[Outcome]:
    """Apply many Job manifests (mode ``apply``) as :func:`apply_job` does one after the other, in bulk.

    The same checks run in the same order for each document, and the first failing document (in order)
    raises the same error (``label(position, error)`` is called first, to name the document); but the
    namespaces, the existing jobs (locked), the queues and the priority classes are read once for all
    documents, new jobs, their tasks and PodGroups are inserted with one ``bulk_create`` each, the audit
    entries with one, and the controller is told about every job in one on-commit call.
    Names must be distinct (``(namespace, name)``); the caller applies a list with repeats one by one.
    Writes nothing unless every document passes.
    """
    failures: list[Errors | None] = []
    metas: list[Metadata] = []
    for doc in docs:
        meta_errors = Errors()
        metas.append(check_metadata(meta_errors, doc, namespaced=True, name_check="label"))
        failures.append(meta_errors if meta_errors else None)
    names = [m.namespace or default_namespace or "default" for m in metas]
    namespaces = namespaces_by_name(name for name, f in zip(names, failures, strict=True) if f is None)
    wanted: dict[str, list[str]] = {}
    for ns_name, meta, failure in zip(names, metas, failures, strict=True):
        if failure is None and namespaces.get(ns_name) is not None:
            wanted.setdefault(ns_name, []).append(meta.name)
    existing: dict[tuple[str, str], Job] = {}
    if wanted:
        where = Q()
        for ns_name, job_names in wanted.items():
            where |= Q(namespace=ns_name, name__in=job_names)
        for job in Job.objects.select_for_update().filter(where).order_by("pk"):
            existing[(job.namespace, job.name)] = job
    checked = [
        _check_job_document(meta.name, doc.get("spec")) if failure is None else None
        for doc, meta, failure in zip(docs, metas, failures, strict=True)
    ]
    lookups = _Lookups(
        queues=queues_for_submission(c[1]["queue"] for c in checked if c and c[1] and not c[0]),
        priorities=priority_values(c[1].get("priorityClassName") for c in checked if c and c[1]),
    )
    plans: list[tuple[Metadata, Namespace, dict[str, Any], Job | None]] = []
    for position, (doc, meta, failure, ns_name) in enumerate(zip(docs, metas, failures, names, strict=True)):
        try:
            if failure is not None:
                raise invalid(parse.JOB.kind, parse.JOB.group, meta.name, failure)
            namespace = resolve_namespace(access, ns_name, "create", parse.JOB, meta.name, namespaces=namespaces)
            current = existing.get((namespace.name, meta.name))
            check_version(parse.JOB, meta, current)
            spec = _admit_job(
                access,
                meta.name,
                doc.get("spec"),
                namespace.tenant,
                current,
                checked=checked[position],
                lookups=lookups,
            )
            if current is not None and current.deletion_timestamp is not None:
                raise Conflict(f'jobs.batch.volcano.sh "{meta.name}" is being deleted', kind="Job", name=meta.name)
        except ApiError as exc:
            if label is not None:
                label(position, exc)
            raise
        plans.append((meta, namespace, spec, current))
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


def _get_for_write(access: Access, model: type[Any], info: parse.KindInfo, namespace: str, name: str, verb: str) -> Any:
    resolve_namespace(access, namespace, verb, info, name)
    obj = model.objects.select_for_update().filter(namespace=namespace, name=name).first()
    if obj is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)
    return obj


@transaction.atomic
def delete_job(access: Access, namespace: str, name: str, propagation: str = BACKGROUND) -> Outcome:
    """Delete a Job: at once when it has no finalizers (tasks, pods, PodGroup and commands go with it);
    otherwise set ``deletion_timestamp`` and leave the removal to the runtime's clean-up. Objects whose
    ownerReferences name the Job (other than its own PodGroup and pods) follow ``propagation``."""
    job = _get_for_write(access, Job, parse.JOB, namespace, name, "delete")
    before = render.job(job)
    collect_garbage(access, namespace, str(job.uid), propagation)
    if job.finalizers:
        if job.deletion_timestamp is None:
            job.deletion_timestamp = timezone.now()
            job.save(update_fields=["deletion_timestamp", *bump(job, spec_changed=False)])
        after: dict[str, Any] | None = render.job(job)
    else:
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


def command_manifest(command: Command) -> dict[str, Any]:
    """Return a Command in Volcano's ``bus.volcano.sh/v1alpha1`` shape (plus our consumption status)."""
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "name": command_name(command),
            "namespace": command.target_namespace,
            "uid": str(command.uid),
            "creationTimestamp": render.timestamp(command.created_at),
        },
        "action": command.action,
        "target": {
            "apiVersion": parse.JOB.api_version if command.target_kind == "Job" else parse.QUEUE.api_version,
            "kind": command.target_kind,
            "name": command.target_name,
            "uid": str(command.target_uid or ""),
        },
        "reason": command.reason,
        "message": command.message,
        "status": {
            "consumed": command.consumed_at is not None,
            "consumedAt": render.timestamp(command.consumed_at),
            "result": command.result,
        },
    }


def normalise_command_action(action: Any) -> str:
    """Return Volcano's action name for ``abort``/``AbortJob``-style input; raise BadRequest otherwise."""
    if isinstance(action, str):
        if action in JOB_COMMANDS:
            return action
        if action.lower() in COMMAND_ALIASES:
            return COMMAND_ALIASES[action.lower()].value
    allowed = ", ".join([*(a.value for a in JOB_COMMANDS), *COMMAND_ALIASES])
    errors = Errors()
    errors.add("action", f"Unsupported value: {action!r}: supported values: {allowed}", "FieldValueNotSupported")
    raise invalid("Command", "bus.volcano.sh", "", errors)


@transaction.atomic
def issue_job_command(
    access: Access,
    namespace: str,
    name: str,
    action: Any,
    reason: str = "",
    message: str = "",
    *,
    command_name: str = "",
    generate_name: str = "",
) -> Command:
    """Queue a user command (abort, resume, restart, terminate, complete) for the runtime's job controller.

    Stores a :class:`Command`, bumps the job's resourceVersion so watchers notice, audits, and fires
    ``notify.changed("Job", ..., "command")``. The runtime performs the effect and marks the command consumed.
    ``command_name`` is the Command's ``metadata.name`` (409 AlreadyExists while a pending command of the
    namespace has it); ``generate_name`` a prefix the server completes with five random characters.
    """
    verb_action = normalise_command_action(action)
    command_name = _command_name(command_name, generate_name)
    job = _get_for_write(access, Job, parse.JOB, namespace, name, "update")
    if job.deletion_timestamp is not None:
        raise Conflict(f'jobs.batch.volcano.sh "{name}" is being deleted', kind="Job", name=name)
    if command_name and pending_commands().filter(target_namespace=namespace, name=command_name).exists():
        raise AlreadyExists(
            f'commands.bus.volcano.sh "{command_name}" already exists', kind="commands", name=command_name
        )
    command = Command.objects.create(
        name=command_name,
        action=verb_action,
        target_kind="Job",
        target_namespace=namespace,
        target_name=name,
        target_uid=job.uid,
        job=job,
        tenant=job.tenant,
        reason=str(reason or "")[:100],
        message=str(message or ""),
        issued_by=access.user if getattr(access.user, "pk", None) else None,
    )
    job.save(update_fields=bump(job, spec_changed=False))
    audit.record(
        access.user, "command", "Job", job.key, tenant=job.tenant, after=command_manifest(command), message=verb_action
    )
    notify.changed("Job", job, "command")
    return command


COMMAND_INFO = parse.KindInfo("bus.volcano.sh/v1alpha1", "Command", "commands", True)


def _command_name(name: str, generate_name: str) -> str:
    errors = Errors()
    if not name and generate_name:
        name = f"{generate_name}{uuid.uuid4().hex[:5]}"
    if name:
        check_dns_subdomain(errors, "metadata.name" if not generate_name else "metadata.generateName", name)
    raise_if(errors, COMMAND_INFO, name)
    return name


def command_name(command: Command) -> str:
    """Return a Command's ``metadata.name`` (the REST API's commands: ``<target>-<action>-<uid>``)."""
    return command.name or f"{command.target_name}-{command.action.lower()}-{str(command.uid)[:5]}"


def pending_commands() -> Any:
    """Return the commands the runtime has not acted on yet: the Kubernetes API's Commands."""
    return Command.objects.filter(consumed_at__isnull=True)


@transaction.atomic
def delete_command(access: Access, namespace: str, name: str) -> Outcome:
    """Delete a Command the runtime has not acted on yet (a consumed one is already gone from the API)."""
    resolve_namespace(access, namespace, "delete", COMMAND_INFO, name)
    found = [
        c for c in pending_commands().select_for_update().filter(target_namespace=namespace) if command_name(c) == name
    ]
    if not found:
        raise not_found("commands.bus.volcano.sh", name, "Command", "bus.volcano.sh")
    command = found[0]
    job = command.job
    before = command_manifest(command)
    command.delete()
    audit.record(access.user, "delete", "Command", f"{namespace}/{name}", tenant=command.tenant, before=before)
    if job is not None:
        notify.changed("Job", job, "command")
    return Outcome("deleted", "Command", name, namespace, before)


@transaction.atomic
def consume_command(command_id: int, result: str = "") -> bool:
    """Mark a command consumed (at most once); return False when it already was. For the runtime."""
    updated = Command.objects.filter(pk=command_id, consumed_at__isnull=True).update(
        consumed_at=timezone.now(), result=result
    )
    return updated == 1


# --- PodGroups --------------------------------------------------------------


@transaction.atomic
def apply_podgroup(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a standalone PodGroup (queue must exist, be Open and usable by the tenant)."""
    info = parse.PODGROUP
    meta, namespace = prepare(access, doc, info, default_namespace)
    assert namespace is not None
    existing = PodGroup.objects.select_for_update().filter(namespace=namespace.name, name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    if existing is not None and existing.job_id is not None:
        raise Forbidden(
            f'podgroups.scheduling.volcano.sh "{meta.name}" is managed by its Job and cannot be changed',
            kind="PodGroup",
            name=meta.name,
        )
    errors = Errors()
    spec = check_podgroup(errors, doc.get("spec"))
    raise_if(errors, info, meta.name)
    assert spec is not None
    ns_queue = namespace.annotations.get("scheduling.volcano.sh/queue-name")
    if existing is None and spec["queue"] == "default" and ns_queue:
        spec["queue"] = ns_queue
    if existing is None or existing.queue_name != spec["queue"]:
        check_submission_queue(errors, access, namespace.tenant, spec["queue"], kind="PodGroup")
    if existing is None or existing.priority_class_name != (spec.get("priorityClassName") or ""):
        check_priority_class(errors, spec.get("priorityClassName"), "spec.priorityClassName")
    raise_if(errors, info, meta.name)
    fields = {
        "queue_name": spec["queue"],
        "min_member": spec.get("minMember", 0),
        "min_task_member": spec.get("minTaskMember") or {},
        "min_resources": spec.get("minResources"),
        "priority_class_name": spec.get("priorityClassName") or "",
        "spec": spec,
        "labels": meta.labels,
        "annotations": meta.annotations,
    }
    if existing is not None:
        return _update_fields(access, info, namespace, existing, fields, render.podgroup)
    podgroup = PodGroup.objects.create(
        namespace=namespace.name,
        name=meta.name,
        tenant=namespace.tenant,
        owner_references=meta.owner_references,
        **fields,
    )
    Pod.objects.filter(namespace=namespace.name, group_name=meta.name, podgroup__isnull=True).update(podgroup=podgroup)
    after = render.podgroup(podgroup)
    audit.record(access.user, "create", info.kind, podgroup.key, tenant=namespace.tenant, after=after)
    notify.changed(info.kind, podgroup, "create")
    return Outcome("created", info.kind, meta.name, namespace.name, after)


@transaction.atomic
def delete_podgroup(access: Access, namespace: str, name: str) -> Outcome:
    """Delete a standalone PodGroup (a job's PodGroup goes with its job); its pods are unlinked."""
    podgroup = _get_for_write(access, PodGroup, parse.PODGROUP, namespace, name, "delete")
    if podgroup.job_id is not None:
        raise Forbidden(
            f'podgroups.scheduling.volcano.sh "{name}" is managed by its Job; delete the Job',
            kind="PodGroup",
            name=name,
        )
    before = render.podgroup(podgroup)
    podgroup.delete()
    audit.record(access.user, "delete", "PodGroup", f"{namespace}/{name}", tenant=podgroup.tenant, before=before)
    notify.changed("PodGroup", podgroup, "delete")
    return Outcome("deleted", "PodGroup", name, namespace, before)


# --- Pods -------------------------------------------------------------------


def _check_pod_queue(
    errors: Errors, access: Access, namespace: Namespace, annotations: dict[str, str], existing: Pod | None
) -> None:
    """A bare pod that names a queue (``scheduling.volcano.sh/queue-name``, on the pod or its namespace) gets
    a PodGroup in that queue from the PodGroup controller: the queue must pass the same checks as a Job's
    or a PodGroup's (exists for the caller, Open, a leaf, open to the namespace's tenant). A pod joining a
    PodGroup by name, or already grouped, uses that PodGroup's (admitted) queue."""
    if annotations.get(GROUP_ANNOTATION) or (existing is not None and existing.group_name):
        return
    named = annotations.get(POD_QUEUE_ANNOTATION)
    if existing is not None and existing.annotations.get(POD_QUEUE_ANNOTATION) == named:
        return
    queue = pod_queue_name(annotations, namespace.annotations)
    if not named and queue == "default":
        return
    where = f"metadata.annotations[{POD_QUEUE_ANNOTATION}]"
    check_submission_queue(errors, access, namespace.tenant, queue, kind="Pod", path=where)


@transaction.atomic
def apply_pod(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create a plain pod (or change its labels/annotations); it joins the PodGroup named by its
    ``scheduling.k8s.io/group-name`` annotation. Pod specs are immutable, as in Kubernetes."""
    info = parse.POD
    meta, namespace = prepare(access, doc, info, default_namespace)
    assert namespace is not None
    existing = Pod.objects.select_for_update().filter(namespace=namespace.name, name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    spec = doc.get("spec")
    check_pod_spec(errors, spec, "spec")
    check_jdb_annotations(errors, meta.annotations)
    raise_if(errors, info, meta.name)
    _check_pod_queue(errors, access, namespace, meta.annotations, existing)
    raise_if(errors, info, meta.name)
    assert isinstance(spec, dict)
    spec = {k: v for k, v in spec.items() if k != "nodeName"} if existing is not None else dict(spec)
    if existing is not None:
        stored = {k: v for k, v in existing.spec.items() if k != "nodeName"}
        if stored != spec:
            errors.add(
                "spec",
                "Forbidden: pod updates may not change fields other than labels and annotations",
                "FieldValueForbidden",
            )
            raise_if(errors, info, meta.name)
        if (existing.labels, existing.annotations) == (meta.labels, meta.annotations):
            return Outcome("unchanged", info.kind, meta.name, namespace.name, render.pod(existing))
        before = render.pod(existing)
        existing.labels, existing.annotations = meta.labels, meta.annotations
        existing.save(update_fields=["labels", "annotations", *bump(existing, spec_changed=False)])
        after = render.pod(existing)
        audit.record(
            access.user, "update", info.kind, existing.key, tenant=namespace.tenant, before=before, after=after
        )
        notify.changed(info.kind, existing, "update")
        return Outcome("configured", info.kind, meta.name, namespace.name, after)
    priority = check_priority_class(errors, spec.get("priorityClassName"), "spec.priorityClassName")
    raise_if(errors, info, meta.name)
    group_name = meta.annotations.get(GROUP_ANNOTATION, "")
    pod = Pod.objects.create(
        namespace=namespace.name,
        name=meta.name,
        tenant=namespace.tenant,
        labels=meta.labels,
        annotations=meta.annotations,
        group_name=group_name,
        podgroup=PodGroup.objects.filter(namespace=namespace.name, name=group_name).first() if group_name else None,
        scheduler_name=spec.get("schedulerName") or "default-scheduler",
        priority_class_name=spec.get("priorityClassName") or "",
        priority=priority,
        requests=pod_requests(spec),
        spec=spec,
        node_name="",
        owner_references=meta.owner_references,
    )
    after = render.pod(pod)
    audit.record(access.user, "create", info.kind, pod.key, tenant=namespace.tenant, after=after)
    notify.changed(info.kind, pod, "create")
    return Outcome("created", info.kind, meta.name, namespace.name, after)


@transaction.atomic
def delete_pod(access: Access, namespace: str, name: str) -> Outcome:
    """Delete a pod. A job's pod is deleted as on Volcano: the cluster removes it and the job controller sees
    it gone as a ``PodEvicted`` event, so the job's policies decide what happens (by default the controller
    creates it again)."""
    pod = _get_for_write(access, Pod, parse.POD, namespace, name, "delete")
    before = render.pod(pod)
    if ((pod.status or {}).get("backendUid") or pod.node_name) and get_backend().delete_pod(namespace, name):
        # In the cluster: it holds its node until the cluster removes it; the cluster sync then
        # deletes the row (deleting the row alone left a pod running that the scheduler ignored).
        pod.deletion_timestamp = pod.deletion_timestamp or timezone.now()
        pod.save(update_fields=["deletion_timestamp", *bump(pod, spec_changed=False)])
    else:
        pod.delete()
    audit.record(access.user, "delete", "Pod", f"{namespace}/{name}", tenant=pod.tenant, before=before)
    notify.changed("Pod", pod, "delete")
    return Outcome("deleted", "Pod", name, namespace, before)


# --- PriorityClasses ---------------------------------------------------------


def _store_cluster_scoped(
    access: Access,
    info: parse.KindInfo,
    model: Any,
    show: Callable[[Any], dict[str, Any]],
    name: str,
    existing: Any,
    values: dict[str, Any],
) -> Outcome:
    """Create or update a platform admin's cluster-scoped object (PriorityClass, HyperNode) with ``values``."""
    if existing is not None:
        if all(getattr(existing, k) == v for k, v in values.items()):
            return Outcome("unchanged", info.kind, name, None, show(existing))
        before = show(existing)
        for key, value in values.items():
            setattr(existing, key, value)
        existing.save(update_fields=[*values, *bump(existing, spec_changed=True)])
        after = show(existing)
        audit.record(access.user, "update", info.kind, name, before=before, after=after)
        notify.changed(info.kind, existing, "update")
        return Outcome("configured", info.kind, name, None, after)
    created = model.objects.create(name=name, **values)
    after = show(created)
    audit.record(access.user, "create", info.kind, name, after=after)
    notify.changed(info.kind, created, "create")
    return Outcome("created", info.kind, name, None, after)


def _delete_cluster_scoped(
    access: Access, info: parse.KindInfo, model: Any, show: Callable[[Any], dict[str, Any]], name: str
) -> Outcome:
    """Delete a platform admin's cluster-scoped object (PriorityClass, HyperNode)."""
    if not access.platform_admin:
        raise forbidden(access, "delete", info, None, name)
    existing = model.objects.select_for_update().filter(name=name).first()
    if existing is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)
    before = show(existing)
    existing.delete()
    audit.record(access.user, "delete", info.kind, name, before=before)
    notify.changed(info.kind, existing, "delete")
    return Outcome("deleted", info.kind, name, None, before)


@transaction.atomic
def apply_priorityclass(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a PriorityClass (platform admins only; value is immutable, one global default)."""
    info = parse.PRIORITYCLASS
    meta, _ = prepare(access, doc, info, None)
    if not access.platform_admin:
        raise forbidden(access, "create", info, None, meta.name)
    existing = PriorityClass.objects.select_for_update().filter(name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    fields = check_priorityclass(errors, meta.name, doc)
    raise_if(errors, info, meta.name)
    assert fields is not None
    if existing is not None and existing.value != fields["value"]:
        errors.add("value", "Forbidden: may not be changed in an update.", "FieldValueForbidden")
    if fields["globalDefault"]:
        other = PriorityClass.objects.filter(global_default=True).exclude(name=meta.name).first()
        if other is not None:
            errors.add(
                "globalDefault",
                f"PriorityClass {other.name} is already marked as default. Only one default can exist",
                "FieldValueForbidden",
            )
    raise_if(errors, info, meta.name)
    values = {
        "value": fields["value"],
        "global_default": fields["globalDefault"],
        "description": fields["description"],
        "preemption_policy": fields["preemptionPolicy"],
        "labels": meta.labels,
        "annotations": meta.annotations,
    }
    return _store_cluster_scoped(access, info, PriorityClass, render.priorityclass, meta.name, existing, values)


@transaction.atomic
def delete_priorityclass(access: Access, name: str) -> Outcome:
    """Delete a PriorityClass (platform admins only)."""
    return _delete_cluster_scoped(access, parse.PRIORITYCLASS, PriorityClass, render.priorityclass, name)


# --- HyperNodes ------------------------------------------------------------------


@transaction.atomic
def apply_hypernode(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a HyperNode (platform admins only: the cluster's network topology)."""
    info = parse.HYPERNODE
    meta, _ = prepare(access, doc, info, None)
    if not access.platform_admin:
        raise forbidden(access, "create", info, None, meta.name)
    existing = HyperNode.objects.select_for_update().filter(name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    fields = check_hypernode(errors, meta.name, doc)
    raise_if(errors, info, meta.name)
    assert fields is not None
    values = {
        "tier": fields["tier"],
        "tier_name": fields["tierName"],
        "members": fields["members"],
        "labels": meta.labels,
        "annotations": meta.annotations,
    }
    return _store_cluster_scoped(access, info, HyperNode, render.hypernode, meta.name, existing, values)


@transaction.atomic
def delete_hypernode(access: Access, name: str) -> Outcome:
    """Delete a HyperNode (platform admins only)."""
    return _delete_cluster_scoped(access, parse.HYPERNODE, HyperNode, render.hypernode, name)


#: What Volcano's label-based HyperNode discovery reads (its ``topologyA3`` example): a node's tier-1
#: HyperNode and, above it, its tier-2 one; and the label it puts on the HyperNodes it creates.
DISCOVERY_TIERS = ("volcano.sh/hypernode", "volcano.sh/hypercluster")
DISCOVERY_SOURCE = "volcano.sh/network-topology-source"


def _discovered(name: str, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {"tier": tier, "tier_name": "", "members": members, "labels": {DISCOVERY_SOURCE: "label"}, "annotations": {}}


@transaction.atomic
def discover_hypernodes() -> int:
    """Volcano's label discoverer: a tier-1 HyperNode per value of ``volcano.sh/hypernode`` on the
    nodes (its members: the nodes with that label, by ``labelMatch``) and a tier-2 one per value of
    ``volcano.sh/hypercluster`` (its members: the tier-1 HyperNodes of its nodes). The HyperNodes it
    made earlier (labelled ``volcano.sh/network-topology-source: label``) that no node names any more
    are deleted; HyperNodes written by people are never touched. Returns how many rows changed."""
    rack_key, spine_key = DISCOVERY_TIERS
    racks: dict[str, set[str]] = {}
    spines: dict[str, set[str]] = {}
    for labels in Node.objects.values_list("labels", flat=True):
        labels = labels or {}
        rack = labels.get(rack_key)
        if not rack:
            continue
        racks.setdefault(rack, set())
        spine = labels.get(spine_key)
        if spine:
            spines.setdefault(spine, set()).add(rack)
    wanted = {
        rack: _discovered(rack, 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {rack_key: rack}}}}])
        for rack in racks
    }
    for spine, members in spines.items():
        wanted[spine] = _discovered(
            spine, 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": r}}} for r in sorted(members)]
        )
    existing = {h.name: h for h in HyperNode.objects.select_for_update().filter(name__in=list(wanted))}
    mine = HyperNode.objects.select_for_update().filter(**{f"labels__{DISCOVERY_SOURCE}": "label"})
    changed = 0
    for gone in mine.exclude(name__in=list(wanted)):
        before = render.hypernode(gone)
        gone.delete()
        audit.record(None, "delete", "HyperNode", gone.name, before=before)
        notify.changed("HyperNode", gone, "delete")
        changed += 1
    for name, values in sorted(wanted.items()):
        found = existing.get(name)
        if found is None:
            created = HyperNode.objects.create(name=name, **values)
            audit.record(None, "create", "HyperNode", name, after=render.hypernode(created))
            notify.changed("HyperNode", created, "create")
            changed += 1
            continue
        if (found.labels or {}).get(DISCOVERY_SOURCE) != "label":
            continue  # a person's HyperNode of the same name wins
        if all(getattr(found, k) == v for k, v in values.items()):
            continue
        before = render.hypernode(found)
        for key, value in values.items():
            setattr(found, key, value)
        found.save(update_fields=[*values, *bump(found, spec_changed=True)])
        audit.record(None, "update", "HyperNode", name, before=before, after=render.hypernode(found))
        notify.changed("HyperNode", found, "update")
        changed += 1
    return changed


# --- ResourceQuotas ------------------------------------------------------------


def check_resourcequota_spec(errors: Errors, spec: Any) -> dict[str, Any]:
    """Check a ResourceQuota ``spec``: ``hard`` is a ResourceList; quota scopes are not supported."""
    if spec is None:
        spec = {}
    if not expect(errors, "spec", spec, dict, "object"):
        return {}
    for key in ("scopes", "scopeSelector"):
        if spec.get(key):
            errors.add(f"spec.{key}", "Unsupported value: quota scopes are not supported (every pod counts)")
    hard = spec.get("hard") or {}
    check_resource_list(errors, "spec.hard", hard)
    return (
        {"hard": {str(k): v if isinstance(v, str) else str(v) for k, v in hard.items()}}
        if isinstance(hard, dict)
        else {}
    )


def _quota_writer(access: Access, info: parse.KindInfo, namespace: Any, verb: str, name: str) -> None:
    # Quotas bound what the whole tenant may run: only its admins (or platform admins) set them.
    if not access.is_tenant_admin(namespace.tenant_id):
        raise forbidden(access, verb, info, namespace.name, name)


def _update_fields(
    access: Access,
    info: parse.KindInfo,
    namespace: Any,
    existing: Any,
    fields: dict[str, Any],
    rendered: Callable[[Any], dict[str, Any]],
) -> Outcome:
    """The update half of an apply for a kind stored as plain fields (PodGroup, ResourceQuota): unchanged
    when every field is equal, else save those fields (and the version bump), audit, notify."""
    if all(getattr(existing, k) == v for k, v in fields.items()):
        return Outcome("unchanged", info.kind, existing.name, namespace.name, rendered(existing))
    before = rendered(existing)
    spec_changed = existing.spec != fields["spec"]
    for key, value in fields.items():
        setattr(existing, key, value)
    existing.save(update_fields=[*fields, *bump(existing, spec_changed=spec_changed)])
    after = rendered(existing)
    audit.record(access.user, "update", info.kind, existing.key, tenant=namespace.tenant, before=before, after=after)
    notify.changed(info.kind, existing, "update")
    return Outcome("configured", info.kind, existing.name, namespace.name, after)


@transaction.atomic
def apply_resourcequota(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a namespace ResourceQuota (tenant admins of the namespace's tenant only)."""
    info = parse.RESOURCEQUOTA
    meta, namespace = prepare(access, doc, info, default_namespace)
    assert namespace is not None
    _quota_writer(access, info, namespace, "create", meta.name)
    existing = ResourceQuota.objects.select_for_update().filter(namespace=namespace.name, name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    spec = check_resourcequota_spec(errors, doc.get("spec"))
    raise_if(errors, info, meta.name)
    fields = {"hard": spec["hard"], "spec": spec, "labels": meta.labels, "annotations": meta.annotations}
    if existing is not None:
        return _update_fields(access, info, namespace, existing, fields, render.resourcequota)
    quota = ResourceQuota.objects.create(namespace=namespace.name, name=meta.name, tenant=namespace.tenant, **fields)
    after = render.resourcequota(quota)
    audit.record(access.user, "create", info.kind, quota.key, tenant=namespace.tenant, after=after)
    notify.changed(info.kind, quota, "create")
    return Outcome("created", info.kind, meta.name, namespace.name, after)


@transaction.atomic
def delete_resourcequota(access: Access, namespace: str, name: str) -> Outcome:
    """Delete a ResourceQuota (tenant admins of the namespace's tenant only)."""
    info = parse.RESOURCEQUOTA
    ns = resolve_namespace(access, namespace, "delete", info, name)
    _quota_writer(access, info, ns, "delete", name)
    quota = ResourceQuota.objects.select_for_update().filter(namespace=namespace, name=name).first()
    if quota is None:
        raise not_found(info.qualified_resource, name, info.kind, info.group)
    before = render.resourcequota(quota)
    quota.delete()
    audit.record(access.user, "delete", info.kind, f"{namespace}/{name}", tenant=ns.tenant, before=before)
    notify.changed(info.kind, quota, "delete")
    return Outcome("deleted", info.kind, name, namespace, before)


# --- Events (written by the runtime) -----------------------------------------


def record_event(
    involved: Any, kind: str, type_: str, reason: str, message: str, *, source: str = "volcanoweb"
) -> Event:
    """Record an event about an object; a repeat of the last (reason, message) bumps its count instead.

    Called by the runtime's services inside their transactions; no audit entry (events are observations).
    """
    namespace = getattr(involved, "namespace", "") or ""
    now = timezone.now()
    last = (
        Event.objects.select_for_update()
        .filter(
            involved_kind=kind,
            involved_namespace=namespace,
            involved_name=involved.name,
            reason=reason,
            message=message,
        )
        .order_by("-last_timestamp")
        .first()
    )
    if last is not None:
        last.count += 1
        last.last_timestamp = now
        last.save(update_fields=["count", "last_timestamp"])
        return last
    return Event.objects.create(
        namespace=namespace,
        tenant_id=getattr(involved, "tenant_id", None),
        involved_kind=kind,
        involved_namespace=namespace,
        involved_name=involved.name,
        involved_uid=getattr(involved, "uid", None),
        type=type_,
        reason=reason,
        message=message,
        source=source,
        first_timestamp=now,
        last_timestamp=now,
    )


def bad_command_body(message: str) -> BadRequest:
    """Return the error for an unreadable command body."""
    return BadRequest(message, kind="Command")
