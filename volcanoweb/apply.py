"""Apply a multi-document manifest atomically (all or nothing), optionally as a dry run.

Above every app's services (it dispatches each kind to its service); below the adapters (API, dashboard,
demo). The manifests package itself only parses, defaults and validates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from volcanoweb.core.errors import ApiError
from volcanoweb.jobs import services as jobs
from volcanoweb.live import notify
from volcanoweb.manifests import parse
from volcanoweb.manifests.objects import Outcome
from volcanoweb.queues import services as queues
from volcanoweb.scheduling import services as scheduling
from volcanoweb.tenancy.access import Access
from volcanoweb.workflows import services as workflows

Applier = Callable[..., Outcome]

APPLIERS: dict[str, Applier] = {
    parse.JOB.kind: jobs.apply_job,
    parse.PODGROUP.kind: jobs.apply_podgroup,
    parse.POD.kind: jobs.apply_pod,
    parse.RESOURCEQUOTA.kind: jobs.apply_resourcequota,
    parse.PRIORITYCLASS.kind: jobs.apply_priorityclass,
    parse.QUEUE.kind: queues.apply_queue,
    parse.CRONJOB.kind: workflows.apply_cronjob,
    parse.JOBFLOW.kind: workflows.apply_jobflow,
    parse.JOBTEMPLATE.kind: workflows.apply_jobtemplate,
    parse.SCHEDULER_CONFIG.kind: scheduling.apply_document,
}


def apply_object(access: Access, doc: dict[str, Any], default_namespace: str | None, *, mode: str = "apply") -> Outcome:
    """Apply one document of any supported kind."""
    info = parse.identify(doc)
    return APPLIERS[info.kind](access, doc, default_namespace, mode=mode)


def apply_documents(
    access: Access, documents: list[dict[str, Any]], *, default_namespace: str | None = None, dry_run: bool = False
) -> list[Outcome]:
    """Apply documents in order inside one transaction; any failure rolls every change back.

    Documents may refer to objects created earlier in the same request (a queue, then jobs in it).
    With ``dry_run`` everything is validated and reported, then rolled back (no audit, no hooks).
    A failure names the document: ``document 2 (Job "x"): ...``.
    """
    for doc in documents:
        parse.identify(doc)  # unsupported kinds fail before anything is written
    outcomes: list[Outcome] = []
    try:
        with transaction.atomic():
            for index, doc in enumerate(documents):
                try:
                    outcomes.append(apply_object(access, doc, default_namespace))
                except ApiError as exc:
                    if len(documents) > 1:
                        exc.message = f"document {index + 1}: {exc.message}"
                        exc.args = (exc.message,)
                    raise
            if dry_run:
                transaction.set_rollback(True)
    except Exception:
        notify.discard()
        raise
    if dry_run:
        notify.discard()
    return outcomes
