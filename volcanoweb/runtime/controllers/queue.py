"""The queue controller (Volcano's queue controller): Open/Closing/Closed, PodGroup counts, queue commands."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from volcanoweb.jobs.models import Command, CommandAction, PodGroup
from volcanoweb.queues.models import CLOSED_BY_PARENT_ANNOTATION, ROOT_QUEUE, Queue, QueueState

log = logging.getLogger(__name__)
COUNT_FIELDS = {
    "Pending": "pending",
    "Running": "running",
    "Inqueue": "inqueue",
    "Completed": "completed",
    "Unknown": "unknown",
}
NOT_OPEN = (QueueState.CLOSED, QueueState.CLOSING)


def _has_podgroups(queue: Queue) -> bool:
    return PodGroup.objects.filter(queue_name=queue.name).exists()


def _write(queue: Queue, state: str, closed_by_parent: bool | None = None) -> None:
    annotations = dict(queue.annotations)
    if closed_by_parent is not None:
        annotations[CLOSED_BY_PARENT_ANNOTATION] = "true" if closed_by_parent else "false"
    if queue.state == state and annotations == queue.annotations:
        return
    queue.state, queue.annotations = state, annotations
    queue.resource_version += 1
    queue.save(update_fields=["state", "annotations", "resource_version"])


def close(queue: Queue, *, by_parent: bool = False) -> None:
    """CloseQueue: children closed too (marked closed-by-parent); Closed without PodGroups, else Closing."""
    if queue.name == ROOT_QUEUE:
        log.info("the root queue can not be closed")
        return
    if queue.state not in NOT_OPEN:
        for child in Queue.objects.select_for_update(no_key=True).filter(parent=queue):
            if child.state not in NOT_OPEN:
                close(child, by_parent=True)
    _write(queue, QueueState.CLOSING if _has_podgroups(queue) else QueueState.CLOSED, True if by_parent else None)


def open_(queue: Queue) -> str:
    """OpenQueue: refused while the parent is closed; reopens children closed by this queue's closing."""
    parent = queue.parent
    if queue.state != QueueState.OPEN and parent is not None and parent.state in NOT_OPEN:
        return (
            f"Failed to open queue {queue.name} because its parent queue {parent.name} is closing or closed. "
            "Open the parent queue first."
        )
    for child in Queue.objects.select_for_update(no_key=True).filter(parent=queue):
        if child.annotations.get(CLOSED_BY_PARENT_ANNOTATION) == "true":
            open_(child)
    had_mark = CLOSED_BY_PARENT_ANNOTATION in queue.annotations
    _write(queue, QueueState.OPEN, False if had_mark else None)
    return ""


def _sync_one(queue: Queue, counts: dict[str, int]) -> None:
    values = {field: counts.get(phase, 0) for phase, field in COUNT_FIELDS.items()}
    changed = [field for field, value in values.items() if getattr(queue, field) != value]
    if changed:
        for field in changed:
            setattr(queue, field, values[field])
        queue.save(update_fields=changed)
    if queue.state == QueueState.CLOSING and not _has_podgroups(queue):
        _write(queue, QueueState.CLOSED)
    elif queue.state == QueueState.UNKNOWN:
        _write(queue, QueueState.OPEN)
    parent = queue.parent
    if parent is None:
        return
    if parent.state in NOT_OPEN and queue.state not in NOT_OPEN:
        close(queue, by_parent=True)
    elif (
        parent.state == QueueState.OPEN
        and queue.state in NOT_OPEN
        and queue.annotations.get(CLOSED_BY_PARENT_ANNOTATION) == "true"
    ):
        open_(queue)


def _run_commands() -> None:
    commands = Command.objects.select_for_update(no_key=True, skip_locked=True).filter(
        target_kind="Queue", consumed_at__isnull=True
    )
    for command in commands.order_by("id"):
        queue = Queue.objects.select_for_update(no_key=True).filter(name=command.target_name).first()
        result = f"queue {command.target_name} not found"
        if queue is not None and command.action == CommandAction.CLOSE_QUEUE:
            close(queue)
            result = f"executed {command.action}"
        elif queue is not None and command.action == CommandAction.OPEN_QUEUE:
            result = open_(queue) or f"executed {command.action}"
        elif queue is not None:
            result = f"unsupported action {command.action} for a Queue"
        command.consumed_at, command.result = timezone.now(), result
        command.save(update_fields=["consumed_at", "result"])


def sync_queues(names: list[str] | None = None) -> dict[str, str]:
    """Consume queue commands, then sync every (or the named) queue, parents first; return name → state."""
    with transaction.atomic():
        _run_commands()
        rows = PodGroup.objects.order_by().values_list("queue_name", "phase").annotate(n=Count("id"))
        counts: dict[str, dict[str, int]] = {}
        for queue_name, phase, n in rows:
            counts.setdefault(queue_name, {})[phase] = n
        # locked in primary-key order, as the scheduling cycle's queue status update does (no deadlock)
        queues = Queue.objects.select_for_update(no_key=True).order_by("pk")
        if names is not None:
            queues = queues.filter(name__in=names)
        ordered = sorted(queues, key=lambda q: (q.depth(), q.name))
        for queue in ordered:
            queue.refresh_from_db()
            _sync_one(queue, counts.get(queue.name, {}))
        return {q.name: q.state for q in ordered}
