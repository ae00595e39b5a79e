"""Admission checks that read the database: queue state and leafness, tenant access, priority classes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection

from volcanoweb.core.errors import Errors
from volcanoweb.jobs.models import PriorityClass
from volcanoweb.queues.models import ROOT_QUEUE, Queue, QueueState
from volcanoweb.tenancy.access import Access
from volcanoweb.tenancy.models import Tenant


def tenant_may_use(queue: Queue, tenant: Tenant | None) -> bool:
    """Return True if a tenant's namespaces may submit to the queue (namespaces without tenant: any queue)."""
    if tenant is None:
        return True
    allowed = {t.pk for t in queue.allowed_tenants.all()}
    if queue.tenant_id is None and not allowed:
        return True
    return queue.tenant_id == tenant.pk or tenant.pk in allowed


@dataclass(frozen=True)
class SubmissionQueue:
    """What the submission checks need to know about a queue."""

    name: str
    state: str
    tenant_id: int | None
    children: int
    allowed: frozenset[int]

    @property
    def is_root(self) -> bool:
        return self.name == ROOT_QUEUE

    def visible_to(self, access: Access) -> bool:
        """The rule of ``tenancy.access.visible_queue_filter``: owned by, allowed to, or public for a tenant."""
        if access.platform_admin:
            return True
        tenants = set(access.readable_tenant_ids())
        public = self.tenant_id is None and not self.allowed
        return public or self.tenant_id in tenants or bool(self.allowed & tenants)

    def open_to(self, tenant: Tenant | None) -> bool:
        """The rule of :func:`tenant_may_use`."""
        if tenant is None:
            return True
        if self.tenant_id is None and not self.allowed:
            return True
        return self.tenant_id == tenant.pk or tenant.pk in self.allowed


def queues_for_submission(queue_names: Iterable[str]) -> dict[str, SubmissionQueue | None]:
    """Return the named queues, their child counts and allowed tenants in one plain query (None if missing).

    Submissions check this for every job; a hand-written statement costs a fraction of the ORM's
    annotated queryset (subqueries and ``Exists``) to build. A bulk apply reads every queue its jobs
    name at once and hands the result to :func:`check_submission_queue`.
    """
    names = sorted(set(queue_names))
    found: dict[str, SubmissionQueue | None] = dict.fromkeys(names)
    if not names:
        return found
    meta = Queue._meta
    through = Queue.allowed_tenants.through._meta
    table, link = connection.ops.quote_name(meta.db_table), connection.ops.quote_name(through.db_table)
    marks = ", ".join(["%s"] * len(names))
    sql = (
        f"SELECT q.name, q.state, q.tenant_id, "
        f"(SELECT COUNT(*) FROM {table} c WHERE c.parent_id = q.id), a.tenant_id "
        f"FROM {table} q LEFT JOIN {link} a ON a.queue_id = q.id WHERE q.name IN ({marks})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, names)
        rows = cursor.fetchall()
    by_name: dict[str, list[Any]] = {}
    for row in rows:
        by_name.setdefault(row[0], []).append(row)
    for name, group in by_name.items():
        _, state, tenant_id, children, _ = group[0]
        allowed = frozenset(int(row[4]) for row in group if row[4] is not None)
        found[name] = SubmissionQueue(name, state, tenant_id, int(children), allowed)
    return found


#: A bare pod's queue (Volcano's PodGroup controller reads it from the pod, else from its namespace).
POD_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"


def pod_queue_name(annotations: Mapping[str, str], namespace_annotations: Mapping[str, str]) -> str:
    """Return the queue a bare pod's PodGroup gets: the pod's annotation, its namespace's, else ``default``."""
    return str(annotations.get(POD_QUEUE_ANNOTATION) or namespace_annotations.get(POD_QUEUE_ANNOTATION) or "default")


def tenant_may_use_queue(queue_name: str, tenant_id: int | None) -> bool:
    """Return True if the tenant's namespaces may submit to the named queue (the controllers' check for
    pods that reached the database without the pod admission, e.g. from a real cluster)."""
    queue = queues_for_submission([queue_name])[queue_name]
    if queue is None:
        return False
    if tenant_id is None or (queue.tenant_id is None and not queue.allowed):
        return True
    return queue.tenant_id == tenant_id or tenant_id in queue.allowed


def check_submission_queue(
    errors: Errors,
    access: Access,
    tenant: Tenant | None,
    queue_name: str,
    *,
    kind: str = "Job",
    path: str = "spec.queue",
    queues: Mapping[str, SubmissionQueue | None] | None = None,
) -> None:
    """Volcano's job/PodGroup queue rules (exists, Open, not root, leaf) plus ours (the tenant may use it).

    A queue the caller cannot see is reported as not found, so existence does not leak. One query, or
    none when ``queues`` (from :func:`queues_for_submission`) holds the name.
    """
    queue = queues[queue_name] if queues is not None and queue_name in queues else None
    if queues is None or queue_name not in queues:
        queue = queues_for_submission([queue_name])[queue_name]
    if queue is not None and not queue.visible_to(access):
        queue = None
    if queue is None:
        if kind == "Job":
            errors.add(path, f'unable to find job queue: queues.scheduling.volcano.sh "{queue_name}" not found;')
        else:
            errors.add(path, f'unable to find queue: queues.scheduling.volcano.sh "{queue_name}" not found')
        return
    if queue.state != QueueState.OPEN:
        if kind == "Job":
            errors.add(
                path, f"can only submit job to queue with state `Open`, queue `{queue.name}` status is `{queue.state}`;"
            )
        else:
            errors.add(
                path,
                f"can only submit PodGroup to queue with state `Open`, queue `{queue.name}` status is `{queue.state}`.",
            )
    if queue.is_root:
        errors.add(
            path, "can not submit job to root queue;" if kind == "Job" else f"can not submit {kind} to root queue"
        )
        return
    if queue.children:
        label = "job" if kind == "Job" else kind
        errors.add(
            path, f"can only submit {label} to leaf queue, queue `{queue.name}` has {queue.children} child queues;"
        )
    if not queue.open_to(tenant):
        errors.add(
            path, f"queue `{queue.name}` is not open to tenant `{tenant.name if tenant else ''}`", "FieldValueForbidden"
        )


def priority_values(names: Iterable[str | None]) -> dict[str, int | None]:
    """Return the value of each named PriorityClass (None when it does not exist) in one query."""
    wanted = sorted({name for name in names if name})
    found: dict[str, int | None] = dict.fromkeys(wanted)
    if wanted:
        found.update(PriorityClass.objects.filter(name__in=wanted).values_list("name", "value"))
    return found


def check_priority_class(
    errors: Errors, name: str | None, path: str, values: Mapping[str, int | None] | None = None
) -> int | None:
    """Return the value of a named PriorityClass, recording Kubernetes' message when it does not exist.

    ``values`` (from :func:`priority_values`) saves the query when it holds the name.
    """
    if not name:
        return None
    if values is not None and name in values:
        value = values[name]
    else:
        value = PriorityClass.objects.filter(name=name).values_list("value", flat=True).first()
    if value is None:
        errors.add(path, f"no PriorityClass with name {name} was found", "FieldValueNotFound")
    return value
