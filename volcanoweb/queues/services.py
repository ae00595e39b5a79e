"""Writes for queues: apply with Volcano's admission and hierarchy checks, delete, open/close state machine."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q

from volcanoweb.audit import services as audit
from volcanoweb.core.errors import Cause, Conflict, Errors, Forbidden, Invalid, invalid, not_found
from volcanoweb.jobs.models import Pod, PodGroup, PodPhase
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.fields import Metadata
from volcanoweb.manifests.objects import Outcome, bump, check_existence, check_version, prepare, raise_if
from volcanoweb.manifests.queues import (
    HIERARCHY_ANNOTATION,
    HIERARCHY_WEIGHTS_ANNOTATION,
    QueueNode,
    QueueSpec,
    check_hierarchy,
    check_queue_spec,
    default_hierarchy_annotations,
    parse_queue_resources,
)
from volcanoweb.queues.models import (
    ALLOWED_TENANTS_ANNOTATION,
    CLOSED_BY_PARENT_ANNOTATION,
    DEFAULT_QUEUE,
    ROOT_QUEUE,
    TENANT_ANNOTATION,
    Queue,
    QueueState,
)
from volcanoweb.tenancy.access import Access, forbidden, visible_queue_filter
from volcanoweb.tenancy.models import Tenant

INFO = parse.QUEUE


def _node(queue: Queue) -> QueueNode:
    capability, deserved, guarantee = parse_queue_resources(queue.spec)
    return QueueNode(
        queue.name, queue.parent.name if queue.parent_id and queue.parent else None, capability, deserved, guarantee
    )


def _subtree_capability(queue: Queue, children: dict[int, list[Queue]]) -> dict[str, int]:
    worst: dict[str, int] = {}
    stack = [queue]
    while stack:
        item = stack.pop()
        for resource, amount in _node(item).capability.items():
            worst[resource] = max(worst.get(resource, 0), amount)
        stack.extend(children.get(item.pk, []))
    return worst


def _check_tree(errors: Errors, name: str, checked: QueueSpec, parent: Queue | None, existing: Queue | None) -> None:
    """Run the hierarchical checks with the whole (small) queue table loaded once."""
    queues = {q.pk: q for q in Queue.objects.select_related("parent")}
    children: dict[int, list[Queue]] = {}
    for q in queues.values():
        if q.parent_id:
            children.setdefault(q.parent_id, []).append(q)
    ancestors: list[Queue] = []
    node = parent
    while node is not None and node not in ancestors:
        if existing is not None and node.pk == existing.pk:
            errors.add(
                "spec.parent", f"queue {name} cannot use its descendant {parent.name if parent else ''} as parent"
            )
            return
        ancestors.append(node)
        node = queues.get(node.parent_id) if node.parent_id else None
    own_children = children.get(existing.pk, []) if existing is not None else []
    siblings = [q for q in children.get(parent.pk, []) if existing is None or q.pk != existing.pk] if parent else []
    this = QueueNode(name, parent.name if parent else None, checked.capability, checked.deserved, checked.guarantee)
    check_hierarchy(
        errors,
        this,
        [_node(a) for a in ancestors],
        [_node(s) for s in siblings],
        [_node(c) for c in own_children],
        {c.name: _subtree_capability(c, children) for c in own_children},
    )


def _allocated_pods(queue: Queue) -> int:
    active = (PodPhase.PENDING, PodPhase.RUNNING)
    in_queue = Q(podgroup__queue_name=queue.name) | Q(job__queue_name=queue.name)
    return Pod.objects.filter(in_queue, phase__in=active).exclude(node_name="").count()


def _tenancy(
    errors: Errors, access: Access, annotations: dict[str, str], existing: Queue | None, parent: Queue | None
) -> tuple[Tenant | None, list[Tenant], dict[str, str]]:
    """Return (owner, allowed tenants, annotations with the owner defaulted) from our queue annotations."""
    owner_name = annotations.get(TENANT_ANNOTATION)
    if owner_name is None and not access.platform_admin:
        fallback = existing.tenant if existing is not None else (parent.tenant if parent is not None else None)
        if fallback is not None:
            owner_name = fallback.name
            annotations = {**annotations, TENANT_ANNOTATION: owner_name}
    owner = None
    if owner_name:
        owner = Tenant.objects.filter(name=owner_name).first()
        if owner is None:
            errors.add(f"metadata.annotations.{TENANT_ANNOTATION}", f'Invalid value: "{owner_name}": no such tenant')
    allowed: list[Tenant] = []
    for item in (annotations.get(ALLOWED_TENANTS_ANNOTATION) or "").split(","):
        if item.strip():
            tenant = Tenant.objects.filter(name=item.strip()).first()
            if tenant is None:
                errors.add(
                    f"metadata.annotations.{ALLOWED_TENANTS_ANNOTATION}",
                    f'Invalid value: "{item.strip()}": no such tenant',
                )
            else:
                allowed.append(tenant)
    return owner, allowed, annotations


def _authorize(access: Access, name: str, existing: Queue | None, parent: Queue | None, owner: Tenant | None) -> None:
    """Platform admins do anything; a tenant admin edits queues of its tenant and adds children under them."""
    if access.platform_admin:
        return
    verb = "update" if existing is not None else "create"
    if existing is not None and not (existing.tenant_id and access.is_tenant_admin(existing.tenant_id)):
        raise forbidden(access, verb, INFO, None, name)
    parent_changed = existing is None or (parent is not None and existing.parent_id != parent.pk)
    if parent_changed and not (parent is not None and parent.tenant_id and access.is_tenant_admin(parent.tenant_id)):
        raise forbidden(access, verb, INFO, None, name)
    if owner is None or not access.is_tenant_admin(owner.pk):
        raise forbidden(access, verb, INFO, None, name)


#: The spec fields that decide a queue's share of the cluster: a tenant admin never changes them on its
#: top-level queue (the platform admin's decision) and keeps them within that queue's bounds below it.
SHARE_FIELDS = ("weight", "capability", "deserved", "guarantee", "reclaimable", "priority")
SHARE_ANNOTATIONS = (HIERARCHY_ANNOTATION, HIERARCHY_WEIGHTS_ANNOTATION)


def _top_level(access: Access, parent: Queue | None) -> Queue | None:
    """Return the caller's top-level queue above a queue whose parent is ``parent``: the highest ancestor of
    the chain of queues the caller administers (None when the caller does not administer ``parent``)."""
    top = None
    node = parent
    seen: set[int] = set()
    while node is not None and node.pk not in seen and node.tenant_id and access.is_tenant_admin(node.tenant_id):
        seen.add(node.pk)
        top = node
        node = node.parent
    return top


def share_is_locked(access: Access, queue: Queue) -> bool:
    """Return True when ``queue`` is the caller's top-level queue: its share is a platform admin's to set."""
    return not access.platform_admin and not queue.is_root and _top_level(access, queue.parent) is None


def _share_forbidden(access: Access, name: str, message: str) -> Forbidden:
    denial = forbidden(access, "update", INFO, None, name)
    return Forbidden(f"{denial.message}: {message}", kind=INFO.kind, name=name, group=INFO.group)


def _check_share(
    access: Access,
    name: str,
    checked: QueueSpec,
    annotations: dict[str, str],
    parent: Queue | None,
    existing: Queue | None,
) -> None:
    """A tenant's share of the cluster is the platform admin's decision (docs/adr/0025, "Queue shares").

    A tenant admin may not change the share fields (:data:`SHARE_FIELDS`, the hdrf hierarchy annotations) of
    its top-level queue (a queue whose parent it does not administer). Below it, the tenant admin splits the
    top-level queue's share: the weights of a queue's children add up to at most its weight (so the leaves
    that the flat proportion plugin weighs add up to at most the top-level queue's weight), priority stays at
    most the top-level queue's, reclaimable stays true when the top-level queue is, and hdrf paths extend its
    path. Capability, deserved and guarantee are bounded by the hierarchical checks (``_admit``).
    """
    if access.platform_admin:
        return
    top = _top_level(access, parent)
    if top is None:
        _check_top_level_share(access, name, checked, annotations, existing)
        return
    assert parent is not None  # a top-level queue exists above
    moved = existing is None or existing.parent_id != parent.pk

    def changed(field_name: str) -> bool:
        return moved or existing is None or existing.spec.get(field_name) != checked.spec.get(field_name)

    weight = int(checked.spec.get("weight") or 1)
    if changed("weight"):
        _check_weights(access, name, weight, parent, existing)
    priority = int(checked.spec.get("priority") or 0)
    if changed("priority") and priority > top.priority:
        raise _share_forbidden(
            access,
            name,
            f"spec.priority {priority} exceeds the priority of top-level queue {top.name} ({top.priority})",
        )
    if changed("reclaimable") and top.reclaimable and checked.spec.get("reclaimable") is False:
        raise _share_forbidden(
            access, name, f"spec.reclaimable must stay true below reclaimable top-level queue {top.name}"
        )
    _check_hdrf_path(access, name, annotations, top, existing)


def _check_top_level_share(
    access: Access, name: str, checked: QueueSpec, annotations: dict[str, str], existing: Queue | None
) -> None:
    """A tenant admin's top-level queue: its share fields and hierarchy annotations stay as they are."""
    if existing is None:
        return  # _authorize refused it already
    for field_name in SHARE_FIELDS:
        if existing.spec.get(field_name) != checked.spec.get(field_name):
            raise _share_forbidden(
                access, name, f"spec.{field_name} of top-level queue {name} is set by a platform admin"
            )
    for key in SHARE_ANNOTATIONS:
        if existing.annotations.get(key) != annotations.get(key):
            raise _share_forbidden(
                access, name, f"annotation {key} of top-level queue {name} is set by a platform admin"
            )


def _check_weights(access: Access, name: str, weight: int, parent: Queue, existing: Queue | None) -> None:
    """The weights of ``parent``'s children add up to at most its weight, and the queue's children's to at
    most the queue's."""
    siblings = Queue.objects.filter(parent=parent).exclude(name=name)
    total = weight + sum(q.weight for q in siblings)
    if total > parent.weight:
        raise _share_forbidden(
            access,
            name,
            f"the weights of the child queues of {parent.name} would add up to {total}, "
            f"more than the weight of {parent.name} ({parent.weight})",
        )
    if existing is not None:
        below = sum(q.weight for q in existing.children.all())
        if below > weight:
            raise _share_forbidden(
                access, name, f"spec.weight {weight} is less than the weights of its child queues ({below})"
            )


def _check_hdrf_path(
    access: Access, name: str, annotations: dict[str, str], top: Queue, existing: Queue | None
) -> None:
    """A new or changed hdrf hierarchy (path and weights annotations) extends the top-level queue's."""
    path, weights = annotations.get(HIERARCHY_ANNOTATION), annotations.get(HIERARCHY_WEIGHTS_ANNOTATION)
    before = (
        (existing.annotations.get(HIERARCHY_ANNOTATION), existing.annotations.get(HIERARCHY_WEIGHTS_ANNOTATION))
        if existing is not None
        else (None, None)
    )
    if (path or weights) and before != (path, weights):
        top_path = top.annotations.get(HIERARCHY_ANNOTATION)
        top_weights = top.annotations.get(HIERARCHY_WEIGHTS_ANNOTATION)
        inside = bool(
            top_path
            and top_weights
            and (path or "").startswith(f"{top_path}/")
            and (weights or "").startswith(f"{top_weights}/")
        )
        if not inside:
            raise _share_forbidden(
                access, name, f"annotation {HIERARCHY_ANNOTATION} must extend the path of top-level queue {top.name}"
            )


def _resolve_parent(errors: Errors, name: str, checked: QueueSpec) -> Queue | None:
    if name == ROOT_QUEUE:
        return None
    parent = Queue.objects.filter(name=checked.parent).first()
    if parent is None:
        errors.add(
            "spec.parent",
            f'failed to get parent queue of queue {name}: queues.scheduling.volcano.sh "{checked.parent}" not found',
        )
    return parent


def _admit(errors: Errors, name: str, checked: QueueSpec, parent: Queue | None, existing: Queue | None) -> None:
    parent_changed = existing is None or (parent is not None and existing.parent_id != parent.pk)
    if existing is not None and name == ROOT_QUEUE:
        if any(existing.spec.get(k) != checked.spec.get(k) for k in ("capability", "deserved", "guarantee")):
            errors.add(
                "spec",
                "root queue's resource attributes (capability, deserved, guarantee) cannot be modified",
                "FieldValueForbidden",
            )
        return
    if parent is None:
        return
    if parent_changed and not parent.is_root and not parent.children.exists():
        pods = _allocated_pods(parent)
        if pods:
            errors.add(
                "spec.parent",
                f"queue {parent.name} cannot be the parent queue of queue {name} because it has allocated Pods: {pods}",
            )
    resources_changed = (
        existing is None
        or parent_changed
        or any(existing.spec.get(k) != checked.spec.get(k) for k in ("capability", "deserved", "guarantee"))
    )
    if resources_changed:
        _check_tree(errors, name, checked, parent, existing)


def _queue_fields(
    meta: Metadata, checked: QueueSpec, parent: Queue | None, owner: Tenant | None, annotations: dict[str, str]
) -> dict[str, Any]:
    """The Queue row's fields for an admitted manifest."""
    return {
        "parent": parent,
        "tenant": owner,
        "weight": checked.spec["weight"],
        "capability": checked.spec.get("capability") or {},
        "deserved": checked.spec.get("deserved") or {},
        "guarantee": (checked.spec.get("guarantee") or {}).get("resource") or {},
        "reclaimable": checked.spec["reclaimable"],
        "priority": checked.spec.get("priority") or 0,
        "spec": checked.spec,
        "labels": meta.labels,
        "annotations": annotations,
    }


def _create_queue(
    access: Access,
    name: str,
    doc: dict[str, Any],
    fields: dict[str, Any],
    owner: Tenant | None,
    allowed: list[Tenant],
    source: str,
) -> Outcome:
    """The create half of :func:`apply_queue`: Open unless the manifest's status says Closed."""
    state = (
        QueueState.CLOSED
        if isinstance(doc.get("status"), dict) and doc["status"].get("state") == "Closed"
        else QueueState.OPEN
    )
    queue = Queue.objects.create(name=name, state=state, **fields)
    queue.allowed_tenants.set(allowed)
    after = render.queue(queue)
    audit.record(access.user, "create", INFO.kind, name, tenant=owner, after=after, source=source)
    notify.changed(INFO.kind, queue, "create")
    return Outcome("created", INFO.kind, name, None, after)


@transaction.atomic
def apply_queue(
    access: Access,
    doc: dict[str, Any],
    default_namespace: str | None = None,
    *,
    mode: str = "apply",
    source: str = "api",
) -> Outcome:
    """Create or update a Queue with Volcano's admission (manifests/queues.py) and ours (tenant ownership and access).

    Writes the queue and its allowed tenants, an audit entry, and fires ``notify.changed("Queue", ...)``.
    """
    meta, _ = prepare(access, doc, INFO, None, name_check="label")
    existing = Queue.objects.select_for_update(no_key=True).filter(name=meta.name).first()
    check_existence(INFO, meta.name, existing, mode)
    check_version(INFO, meta, existing)
    annotations = default_hierarchy_annotations(meta.annotations) if existing is None else dict(meta.annotations)
    errors = Errors()
    checked = check_queue_spec(
        errors, meta.name, doc.get("spec"), annotations, doc.get("status"), creating=existing is None
    )
    raise_if(errors, INFO, meta.name)
    assert checked is not None
    parent = _resolve_parent(errors, meta.name, checked)
    owner, allowed, annotations = _tenancy(errors, access, annotations, existing, parent)
    raise_if(errors, INFO, meta.name)
    _authorize(access, meta.name, existing, parent, owner)
    _check_share(access, meta.name, checked, annotations, parent, existing)
    _admit(errors, meta.name, checked, parent, existing)
    raise_if(errors, INFO, meta.name)
    fields = _queue_fields(meta, checked, parent, owner, annotations)
    if existing is not None:
        if (existing.spec, existing.labels, existing.annotations, existing.tenant_id) == (
            checked.spec,
            meta.labels,
            annotations,
            owner.pk if owner else None,
        ):
            return Outcome("unchanged", INFO.kind, meta.name, None, render.queue(existing))
        before = render.queue(existing)
        spec_changed = existing.spec != checked.spec
        for key, value in fields.items():
            setattr(existing, key, value)
        existing.save(update_fields=[*fields, *bump(existing, spec_changed=spec_changed)])
        existing.allowed_tenants.set(allowed)
        after = render.queue(existing)
        audit.record(
            access.user, "update", INFO.kind, meta.name, tenant=owner, before=before, after=after, source=source
        )
        notify.changed(INFO.kind, existing, "update")
        return Outcome("configured", INFO.kind, meta.name, None, after)
    return _create_queue(access, meta.name, doc, fields, owner, allowed, source)


def get_visible_queue(access: Access, name: str, *, for_update: bool = False) -> Queue:
    """Return a queue the caller can see, or raise NotFound."""
    queryset = Queue.objects.filter(visible_queue_filter(access), name=name).distinct()
    queue = queryset.first()
    if queue is None:
        raise not_found(INFO.qualified_resource, name, INFO.kind, INFO.group)
    if for_update:
        return Queue.objects.select_for_update(no_key=True).get(pk=queue.pk)
    return queue


def _require_manage(access: Access, queue: Queue, verb: str) -> None:
    if not (access.platform_admin or (queue.tenant_id and access.is_tenant_admin(queue.tenant_id))):
        raise forbidden(access, verb, INFO, None, queue.name)


@transaction.atomic
def delete_queue(access: Access, name: str, *, source: str = "api") -> Outcome:
    """Delete a queue: never ``root`` or ``default``, never one with children (Volcano's messages)."""
    queue = get_visible_queue(access, name, for_update=True)
    _require_manage(access, queue, "delete")
    # The reason is also a cause: kubectl prints an Invalid error's causes, not its message.
    if name in (ROOT_QUEUE, DEFAULT_QUEUE):
        message = f"`{name}` queue can not be deleted"
        raise Invalid(
            message,
            kind=INFO.kind,
            name=name,
            group=INFO.group,
            causes=[Cause("metadata.name", message, "FieldValueForbidden")],
        )
    children = sorted(queue.children.values_list("name", flat=True))
    if children:
        message = f"queue {name} can not be deleted because it has {len(children)} child queues: {', '.join(children)}"
        raise Invalid(
            message,
            kind=INFO.kind,
            name=name,
            group=INFO.group,
            causes=[Cause("metadata.name", message, "FieldValueForbidden")],
        )
    before = render.queue(queue)
    queue.delete()
    audit.record(access.user, "delete", INFO.kind, name, tenant=queue.tenant, before=before, source=source)
    notify.changed(INFO.kind, queue, "delete")
    return Outcome("deleted", INFO.kind, name, None, before)


def _has_podgroups(queue: Queue) -> bool:
    return PodGroup.objects.filter(queue_name=queue.name).exists()


def _set_state(queue: Queue, state: str, closed_by_parent: bool | None) -> None:
    annotations = dict(queue.annotations)
    if closed_by_parent is not None:
        annotations[CLOSED_BY_PARENT_ANNOTATION] = "true" if closed_by_parent else "false"
    if queue.state == state and annotations == queue.annotations:
        return
    queue.state = state
    queue.annotations = annotations
    queue.save(update_fields=["state", "annotations", *bump(queue, spec_changed=False)])
    notify.changed(INFO.kind, queue, "state")


def _close(queue: Queue, *, by_parent: bool) -> None:
    if queue.is_root:
        return
    if queue.state not in (QueueState.CLOSED, QueueState.CLOSING):
        for child in queue.children.select_for_update(no_key=True):
            if child.state not in (QueueState.CLOSED, QueueState.CLOSING):
                _close(child, by_parent=True)
    state = QueueState.CLOSING if _has_podgroups(queue) else QueueState.CLOSED
    _set_state(queue, state, True if by_parent else None)


def _open(queue: Queue) -> None:
    for child in queue.children.select_for_update(no_key=True):
        if child.annotations.get(CLOSED_BY_PARENT_ANNOTATION) == "true":
            _open(child)
    _set_state(queue, QueueState.OPEN, False if queue.annotations.get(CLOSED_BY_PARENT_ANNOTATION) else None)


@transaction.atomic
def close_queue(access: Access, name: str, *, source: str = "api") -> Queue:
    """Close a queue (Volcano's CloseQueue): Closed when no PodGroups use it, else Closing; open children
    are closed too and marked ``volcano.sh/closed-by-parent``. ``root`` can never be closed."""
    queue = get_visible_queue(access, name, for_update=True)
    _require_manage(access, queue, "update")
    if queue.is_root:
        raise Invalid("root queue can not be closed", kind=INFO.kind, name=name, group=INFO.group)
    before = render.queue(queue)
    _close(queue, by_parent=False)
    audit.record(
        access.user,
        "close",
        INFO.kind,
        name,
        tenant=queue.tenant,
        before=before,
        after=render.queue(queue),
        source=source,
    )
    return queue


@transaction.atomic
def open_queue(access: Access, name: str, *, source: str = "api") -> Queue:
    """Open a queue (Volcano's OpenQueue); refused while its parent is Closed or Closing. Children closed
    by this queue's closing are reopened."""
    queue = get_visible_queue(access, name, for_update=True)
    _require_manage(access, queue, "update")
    parent = queue.parent
    if (
        queue.state != QueueState.OPEN
        and parent is not None
        and parent.state in (QueueState.CLOSED, QueueState.CLOSING)
    ):
        raise Conflict(
            f"Failed to open queue {name} because its parent queue {parent.name} is closing or closed. "
            "Open the parent queue first.",
            kind=INFO.kind,
            name=name,
            group=INFO.group,
        )
    before = render.queue(queue)
    _open(queue)
    audit.record(
        access.user,
        "open",
        INFO.kind,
        name,
        tenant=queue.tenant,
        before=before,
        after=render.queue(queue),
        source=source,
    )
    return queue


@transaction.atomic
def sync_queue_state(name: str) -> Queue | None:
    """For the runtime: move a Closing queue to Closed once no PodGroup references it."""
    queue = Queue.objects.select_for_update(no_key=True).filter(name=name).first()
    if queue is not None and queue.state == QueueState.CLOSING and not _has_podgroups(queue):
        _set_state(queue, QueueState.CLOSED, None)
    return queue


@transaction.atomic
def update_queue_spec(access: Access, name: str, changes: dict[str, Any], *, source: str = "admin") -> Outcome:
    """Change some spec fields of a queue (the admin's form) through the same checks as an apply."""
    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise not_found(INFO.qualified_resource, name, INFO.kind, INFO.group)
    manifest = render.queue(queue)
    manifest["spec"] = {**manifest["spec"], **changes}
    manifest["spec"] = {k: v for k, v in manifest["spec"].items() if v not in (None, {}, "")}
    manifest["metadata"].pop("resourceVersion", None)
    return apply_queue(access, manifest, mode="update", source=source)


def invalid_queue(name: str, errors: Errors) -> Invalid:
    """Return the Invalid error for a queue (used by the admin form)."""
    return invalid(INFO.kind, INFO.group, name, errors)
