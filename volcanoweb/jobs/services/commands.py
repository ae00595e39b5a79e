"""Writes for Commands (``bus.volcano.sh``): the user commands a job's controller acts on, their
delete, and their consumption by the runtime."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from volcanoweb.audit import services as audit
from volcanoweb.core.errors import AlreadyExists, BadRequest, Conflict, Errors, invalid, not_found
from volcanoweb.jobs.models import Command, CommandAction, Job
from volcanoweb.jobs.services.common import get_for_write
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.fields import check_dns_subdomain
from volcanoweb.manifests.objects import Outcome, bump, raise_if
from volcanoweb.tenancy.access import Access, resolve_namespace

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
    job = get_for_write(access, Job, parse.JOB, namespace, name, "update")
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
        c
        for c in pending_commands().select_for_update(no_key=True).filter(target_namespace=namespace)
        if command_name(c) == name
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


def bad_command_body(message: str) -> BadRequest:
    """Return the error for an unreadable command body."""
    return BadRequest(message, kind="Command")
