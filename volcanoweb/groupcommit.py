"""Group commit: concurrent single-Job submissions of a process applied together (ADR 0030).

A ``POST /api/v1/apply`` of one Job is the REST path's usual request, and a client library submits jobs one
request at a time. Each such request alone pays a transaction, its statements and its commit. Requests that
arrive within :setting:`GROUP_COMMIT_WINDOW_MS` of each other are handed to one writer thread of the process,
which applies those of one caller and default namespace through the set-based path (``jobs.apply_jobs``: one
read of the namespaces, queues and priority classes, one insert per table, one commit), as databases and
etcd batch their commits.

Each request keeps its own answer and its own all-or-nothing: a batch that fails (one document is refused,
a name repeats, the database refuses) is applied again request by request, each in its own transaction, so
a refused request gets its own error and never takes the others down. Requests inside a transaction (a
test's, an atomic view's) and dry runs are applied in place; so is everything when the window is 0.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction

from volcanoweb.core.stageprof import stage
from volcanoweb.jobs import services as jobs
from volcanoweb.manifests.objects import Outcome
from volcanoweb.tenancy.access import Access

log = logging.getLogger(__name__)
#: Documents one batch takes at most.
MOST = 200


@dataclass
class _Request:
    access: Access
    doc: dict[str, Any]
    namespace: str | None
    mode: str = "apply"
    future: Future[Outcome] = field(default_factory=Future)

    def key(self) -> tuple[Any, ...]:
        """Requests that may share a batch: one caller's rights, one default namespace."""
        access = self.access
        roles = tuple(sorted(access.roles.items()))
        return (getattr(access.user, "pk", None), access.platform_admin, roles, self.namespace, self.mode)

    def name(self) -> tuple[Any, Any]:
        meta = self.doc.get("metadata") if isinstance(self.doc, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        return (meta.get("namespace") or self.namespace, meta.get("name"))


#: What :meth:`GroupCommit.stop` hands the writer thread.
_STOP = _Request(access=None, doc={}, namespace=None)  # type: ignore[arg-type]


class GroupCommit:
    """The process's batcher of single-Job applies (start it with :func:`group_commit`)."""

    def __init__(self, window: float, apply_many: Callable[..., list[Outcome]] | None = None) -> None:
        self.window = window
        self.queue: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self.apply_many = apply_many or jobs.apply_jobs
        #: batches applied and requests in them (a check for tests and the benchmark)
        self.batches = 0
        self.requests = 0
        self.thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
        self.thread.start()

    def apply(self, access: Access, doc: dict[str, Any], namespace: str | None, mode: str = "apply") -> Outcome:
        """Apply (or create) one Job document with whatever else arrives meanwhile; its own outcome or error."""
        request = _Request(access, doc, namespace, mode)
        # The waiting thread gives its database connection back first: with a pool of connections (ASGI), as
        # many waiting requests as connections would leave none for the writer thread they wait for.
        connection.close()
        self.queue.put(request)
        return request.future.result()

    def stop(self, timeout: float = 5.0) -> None:
        """End the writer thread (its connection closed) once what was handed to it is applied."""
        self.queue.put(_STOP)
        self.thread.join(timeout)

    def _collect(self) -> list[_Request]:
        batch = [self.queue.get()]
        deadline = time.monotonic() + self.window
        while len(batch) < MOST:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                batch.append(self.queue.get(timeout=left))
            except queue.Empty:
                break
        return batch

    def _run(self) -> None:
        while True:
            batch = self._collect()
            stopping = _STOP in batch
            batch = [request for request in batch if request is not _STOP]
            try:
                groups: dict[tuple[Any, ...], list[_Request]] = {}
                for request in batch:
                    groups.setdefault(request.key(), []).append(request)
                for group in groups.values():
                    self._apply(group)
            except Exception as error:  # never leave a request waiting
                for request in batch:
                    if not request.future.done():
                        request.future.set_exception(error)
            finally:
                close_old_connections()
            if stopping:
                connection.close()
                return

    @stage("api apply (manifests)")
    def _apply(self, group: list[_Request]) -> None:
        self.batches += 1
        self.requests += len(group)
        names = [request.name() for request in group]
        if len(group) > 1 and len(set(names)) == len(names):
            first = group[0]
            try:
                with transaction.atomic():
                    outcomes = self.apply_many(first.access, [r.doc for r in group], first.namespace, mode=first.mode)
            except Exception:  # one refused (or a race): each request on its own, below
                log.debug("group commit of %d jobs fell back to one by one", len(group), exc_info=True)
            else:
                for request, outcome in zip(group, outcomes, strict=True):
                    request.future.set_result(outcome)
                return
        for request in group:
            try:
                outcome = jobs.apply_job(request.access, request.doc, request.namespace, mode=request.mode)
                request.future.set_result(outcome)
            except Exception as error:
                request.future.set_exception(error)


_committer: GroupCommit | None = None
_lock = threading.Lock()


def _forget_after_fork() -> None:
    """A forked child has none of its parent's threads: it starts a batcher of its own when it needs one."""
    global _committer, _lock
    _committer, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def group_commit() -> GroupCommit | None:
    """This process's batcher (None when ``GROUP_COMMIT_WINDOW_MS`` is 0)."""
    global _committer
    window = float(settings.GROUP_COMMIT_WINDOW_MS) / 1000.0
    if window <= 0:
        return None
    with _lock:
        if _committer is None or _committer.window != window:
            _committer = GroupCommit(window)
        return _committer


def apply_job(access: Access, doc: dict[str, Any], namespace: str | None, mode: str = "apply") -> Outcome:
    """Apply (or create) one Job document: with concurrent ones (group commit), or in place inside a
    transaction."""
    committer = None if connection.in_atomic_block else group_commit()
    if committer is None:
        return jobs.apply_job(access, doc, namespace, mode=mode)
    return committer.apply(access, doc, namespace, mode)
