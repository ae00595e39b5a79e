"""Apply a multi-document manifest atomically (all or nothing), optionally as a dry run.

Above every app's services (it dispatches each kind to its service); below the adapters (API, dashboard,
demo). The manifests package itself only parses, defaults and validates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import transaction

from volcanoweb.core.errors import ApiError
from volcanoweb.core.stageprof import stage
from volcanoweb.jobs import services as jobs
from volcanoweb.live import notify
from volcanoweb.manifests import parse
from volcanoweb.manifests.objects import Outcome
from volcanoweb.queues import services as queues
from volcanoweb.scheduling import services as scheduling
from volcanoweb.tenancy.access import Access
from volcanoweb.workflows import services as workflows

T = TypeVar("T")

Applier = Callable[..., Outcome]

APPLIERS: dict[str, Applier] = {
    parse.JOB.kind: jobs.apply_job,
    parse.PODGROUP.kind: jobs.apply_podgroup,
    parse.POD.kind: jobs.apply_pod,
    parse.RESOURCEQUOTA.kind: jobs.apply_resourcequota,
    parse.PRIORITYCLASS.kind: jobs.apply_priorityclass,
    parse.HYPERNODE.kind: jobs.apply_hypernode,
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


#: Consecutive Job documents from which :func:`apply_documents` takes the bulk path.
BULK_MIN = 2


def _job_runs(
    documents: list[dict[str, Any]], kinds: list[str], default_namespace: str | None
) -> list[tuple[int, int]]:
    """Return the ``[start, end)`` ranges of consecutive Job documents (at least BULK_MIN, distinct names)."""
    runs: list[tuple[int, int]] = []
    start = 0
    while start < len(documents):
        end = start
        while end < len(documents) and kinds[end] == parse.JOB.kind:
            end += 1
        if end - start >= BULK_MIN and _distinct_names(documents[start:end], default_namespace):
            runs.append((start, end))
        start = max(end, start + 1)
    return runs


def _distinct_names(documents: list[dict[str, Any]], default_namespace: str | None) -> bool:
    """Whether no (namespace, name) repeats (a repeat is an update of the job the run creates: one by one)."""
    seen: set[tuple[Any, Any]] = set()
    for doc in documents:
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            return False
        key = (meta.get("namespace") or default_namespace or "default", meta.get("name"))
        if not all(isinstance(part, str) for part in key) or key in seen:
            return False
        seen.add(key)
    return True


def _label(exc: ApiError, index: int, total: int) -> None:
    if total > 1:
        exc.message = f"document {index + 1}: {exc.message}"
        exc.args = (exc.message,)


def _labeller(start: int, total: int) -> Callable[[int, ApiError], None]:
    return lambda position, exc: _label(exc, start + position, total)


@stage("api apply (manifests)")
def apply_documents(
    access: Access,
    documents: list[dict[str, Any]],
    *,
    default_namespace: str | None = None,
    dry_run: bool = False,
    bulk: bool = True,
) -> list[Outcome]:
    """Apply documents in order inside one transaction; any failure rolls every change back.

    Documents may refer to objects created earlier in the same request (a queue, then jobs in it).
    With ``dry_run`` everything is validated and reported, then rolled back (no audit, no hooks).
    A failure names the document: ``document 2 (Job "x"): ...``.

    Runs of consecutive Job documents (:data:`BULK_MIN` or more, distinct names) go through
    ``jobs.apply_jobs`` (reads once, bulk inserts, one audit insert, one controller notification), which
    leaves the same rows and answers as applying them one by one (ADR 0020); ``bulk=False`` applies every
    document one by one.
    """
    kinds = [parse.identify(doc).kind for doc in documents]  # unsupported kinds fail before anything is written
    if len(documents) == 1 and kinds[0] == parse.JOB.kind and not dry_run:
        # One job (the REST path's usual request): its service's transaction is the only one needed (no
        # savepoint inside an outer transaction: two round trips fewer).
        try:
            return [jobs.apply_job(access, documents[0], default_namespace)]
        except Exception:
            notify.discard()
            raise
    runs = dict(_job_runs(documents, kinds, default_namespace)) if bulk else {}
    return atomically(lambda: _apply_in_order(access, documents, default_namespace, runs), dry_run=dry_run)


def atomically(call: Callable[[], T], *, dry_run: bool) -> T:
    """Run ``call`` (service calls) in one transaction; a dry run is rolled back and leaves no audit entry.

    The live messages the calls queued are dropped when they fail or when it was a dry run (they are sent
    on commit otherwise). The Kubernetes API's writes go through it too.
    """
    try:
        with transaction.atomic():
            result = call()
            if dry_run:
                transaction.set_rollback(True)
    except Exception:
        notify.discard()
        raise
    if dry_run:
        notify.discard()
    return result


def _apply_in_order(
    access: Access, documents: list[dict[str, Any]], default_namespace: str | None, runs: dict[int, int]
) -> list[Outcome]:
    """Apply the documents in order, each run of Job documents (``runs``: start to end) in bulk, the others
    one by one; a failure names its document."""
    total = len(documents)
    outcomes: list[Outcome] = []
    index = 0
    while index < total:
        end = runs.get(index)
        if end is not None:
            outcomes.extend(
                jobs.apply_jobs(
                    access,
                    documents[index:end],
                    default_namespace,
                    label=_labeller(index, total),
                )
            )
            index = end
            continue
        try:
            outcomes.append(apply_object(access, documents[index], default_namespace))
        except ApiError as exc:
            _label(exc, index, total)
            raise
        index += 1
    return outcomes
