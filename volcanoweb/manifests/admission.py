"""Admission checks that read the database: queue state and leafness, tenant access, priority classes."""

from __future__ import annotations

from volcanoweb.jobs.models import PriorityClass
from volcanoweb.manifests.errors import Errors
from volcanoweb.queues.models import Queue, QueueState
from volcanoweb.tenancy.access import Access, visible_queue_filter
from volcanoweb.tenancy.models import Tenant


def tenant_may_use(queue: Queue, tenant: Tenant | None) -> bool:
    """Return True if a tenant's namespaces may submit to the queue (namespaces without tenant: any queue)."""
    if tenant is None:
        return True
    allowed = {t.pk for t in queue.allowed_tenants.all()}
    if queue.tenant_id is None and not allowed:
        return True
    return queue.tenant_id == tenant.pk or tenant.pk in allowed


def check_submission_queue(
    errors: Errors,
    access: Access,
    tenant: Tenant | None,
    queue_name: str,
    *,
    kind: str = "Job",
    path: str = "spec.queue",
) -> None:
    """Volcano's job/PodGroup queue rules (exists, Open, not root, leaf) plus ours (the tenant may use it).

    A queue the caller cannot see is reported as not found, so existence does not leak.
    """
    queue = Queue.objects.filter(name=queue_name).first()
    hidden = queue is not None and not access.platform_admin
    if hidden and not Queue.objects.filter(visible_queue_filter(access), pk=queue.pk).exists():
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
    children = queue.children.count()
    if children:
        label = "job" if kind == "Job" else kind
        errors.add(path, f"can only submit {label} to leaf queue, queue `{queue.name}` has {children} child queues;")
    if not tenant_may_use(queue, tenant):
        errors.add(
            path, f"queue `{queue.name}` is not open to tenant `{tenant.name if tenant else ''}`", "FieldValueForbidden"
        )


def check_priority_class(errors: Errors, name: str | None, path: str) -> int | None:
    """Return the value of a named PriorityClass, recording Kubernetes' message when it does not exist."""
    if not name:
        return None
    value = PriorityClass.objects.filter(name=name).values_list("value", flat=True).first()
    if value is None:
        errors.add(path, f"no PriorityClass with name {name} was found", "FieldValueNotFound")
    return value
