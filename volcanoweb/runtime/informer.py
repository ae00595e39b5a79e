"""The controllers' informer: the change log read from a cursor, turned into reconcile requests.

Kubernetes controllers learn of changes from watches (informers), not from the writers: here the controllers
read the one change log (ADR 0024) every watch and live page reads, so every writer is covered (services, the
scheduling cycle, the cluster mirror, the kube reflector, the admin, raw SQL) and no writer calls up into the
controllers. What each change asks for (:func:`reactions`, a pure function of the log's entries):

* a Job created → reconcile it at once (``urgent``); changed by anyone but its controller (a column other
  than the status the controller writes) → reconcile it; deleted → clean up its cluster objects;
* a Command created → reconcile its job (or the queues, for a queue command);
* a PodGroup's phase changed (the cycle admitted it: ``urgent``; or it runs, finishes) → reconcile its job;
  a PodGroup created or deleted → resync its queue (Closing → Closed once its last PodGroup is gone);
* a pod's state as the job controller reads it changed (phase, exit code, deletion, restarts, gone) →
  reconcile its job; a bare Volcano pod created → give it a PodGroup;
* a Queue created, deleted or changed by a person (not its state or status) → resync the queues.

Requests go where every other sync request goes (``runtime.dispatch``: coalesced per job, urgent first; in
the stack the Redis sets the controller workers drain). One informer runs per deployment: a controller
worker of the stack runs it (a PostgreSQL advisory lock keeps the others standing by), the embedded mode
runs it in-process. It starts from the log's current revision and asks for a full resync then (an informer's
relist); a cursor the log has compacted past does the same.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection

from volcanoweb.feed import log
from volcanoweb.feed.log import Change
from volcanoweb.runtime import dispatch

logger = logging.getLogger(__name__)
KINDS = ("jobs", "commands", "podgroups", "pods", "queues")
#: Job columns its controller writes (a change of only these is the controller's own echo).
JOB_STATUS = frozenset({"status", "phase", "resource_version", "updated_at"})
#: Queue columns the queue controller and the cycle write.
QUEUE_STATUS = frozenset({"status", "state", "annotations", "resource_version", "updated_at"})
#: The advisory lock (PostgreSQL, session-scoped) the deployment's one informer holds.
LEADER_LOCK = (0xFEEF, 1)


@dataclass
class Reactions:
    """What a batch of changes asks the controllers for."""

    urgent: set[int] = field(default_factory=set)
    jobs: set[int] = field(default_factory=set)
    deleted: dict[int, str] = field(default_factory=dict)
    queues: bool = False
    bare_pods: bool = False

    def __bool__(self) -> bool:
        return bool(self.urgent or self.jobs or self.deleted or self.queues or self.bare_pods)


def _changed(change: Change, ignored: frozenset[str]) -> bool:
    if "changed" in change.cache:  # computed by the database (:func:`read`)
        return bool(change.cache["changed"])
    before, after = change.prev or {}, change.data
    return any(before.get(k) != v for k, v in after.items() if k not in ignored)


#: The columns the reactions read of a row (every kind's, the rest is left in the database).
SLIM = ("id", "job_id", "scheduler_name", "group_name", "phase", "exit_code", "deletion_timestamp", "target_kind")
#: The status fields the pod view reads.
STATUS = ("restartCount", "deleted")


def _slim_sql(row: str, postgresql: bool) -> str:
    """A row of the log reduced to :data:`SLIM` and the two status fields the pod view reads (JSON text)."""
    if postgresql:
        pairs = [f"'{k}', {row}->'{k}'" for k in SLIM]
        pairs += [f"'status', jsonb_build_object('{k}', {row}#>'{{status,{k}}}')" for k in STATUS]
        build = f"jsonb_build_object({', '.join(pairs)})::text"
    else:
        pairs = [f"'{k}', json_extract({row}, '$.{k}')" for k in SLIM]
        status = ", ".join(f"'{k}', json_extract({row}, '$.status.{k}')" for k in STATUS)
        build = f"json_object({', '.join(pairs)}, 'status', json_object({status}))"
    return f"CASE WHEN {row} IS NULL THEN NULL ELSE {build} END"


def _without(row: str, columns: frozenset[str], postgresql: bool) -> str:
    if postgresql:
        return f"({row} - ARRAY[{', '.join(repr(c) for c in sorted(columns))}]::text[])"
    return f"json_remove({row}, {', '.join(repr('$.' + c) for c in sorted(columns))})"


def _changed_sql(postgresql: bool) -> str:
    """Whether a job or queue changed in a column its controllers do not write (their own echo is no request)."""
    differ = "IS DISTINCT FROM" if postgresql else "IS NOT"
    cases = [
        f"WHEN kind = '{kind}' THEN {_without('data', ignored, postgresql)} {differ} "
        f"{_without('prev', ignored, postgresql)}"
        for kind, ignored in (("jobs", JOB_STATUS), ("queues", QUEUE_STATUS))
    ]
    return f"CASE WHEN type <> 'M' THEN NULL {' '.join(cases)} END"


def read(after: int, upto: int, limit: int = log.BATCH) -> list[Change]:
    """The entries of :data:`KINDS` in ``(after, upto]``, each row reduced to what the reactions read (the
    database compares whole job and queue rows): an informer reads every change of the busy kinds."""
    postgresql = connection.vendor == "postgresql"
    kinds = ", ".join(["%s"] * len(KINDS))
    sql = (
        f"SELECT rev, kind, obj_id, type, namespace, name, uid, {_slim_sql('data', postgresql)}, "
        f"{_slim_sql('prev', postgresql)}, {_changed_sql(postgresql)} FROM feed_entry WHERE rev > %s AND rev <= %s "
        f"AND kind IN ({kinds}) ORDER BY rev LIMIT %s"
    )
    out = []
    with connection.cursor() as cursor:
        cursor.execute(sql, [after, upto, *KINDS, limit])
        for *row, flag in cursor.fetchall():
            change = Change(int(row[0]), row[1], int(row[2]), row[3], row[4], row[5], row[6], row[7], row[8])
            if flag is not None:
                change.cache["changed"] = bool(flag)
            out.append(change)
    return out


def touched_jobs_sql(after: int) -> tuple[str, list[Any]]:
    """SQL (and its parameters) for the ids of the jobs the log shows changed after revision ``after``: their
    own rows, their PodGroups' and their pods' (created, changed or deleted). The drift check looks at these
    only: a job none of whose rows changed since the previous check cannot have drifted since."""
    if connection.vendor == "postgresql":
        job_id = "CAST(data->>'job_id' AS bigint)"
    else:
        job_id = "CAST(json_extract(data, '$.job_id') AS integer)"
    sql = (
        "SELECT obj_id FROM feed_entry WHERE kind = 'jobs' AND rev > %s "
        f"UNION SELECT {job_id} FROM feed_entry WHERE kind IN ('podgroups', 'pods') AND rev > %s "
        f"AND {job_id} IS NOT NULL"
    )
    return sql, [after, after]


def pod_view(row: dict[str, Any] | None) -> tuple[Any, ...]:
    """What the job controller reads of a pod row (phase, exit code, deletion, restarts, gone)."""
    if row is None:
        return ()
    raw = row.get("status")
    status: dict[str, Any] = raw if isinstance(raw, dict) else {}
    return (
        row.get("phase"),
        row.get("exit_code"),
        row.get("deletion_timestamp") is not None,
        status.get("restartCount"),
        bool(status.get("deleted")),
    )


def _job(change: Change, out: Reactions) -> None:
    if change.type == log.ADDED:
        out.urgent.add(change.obj_id)
    elif change.type == log.DELETED:
        out.deleted[change.obj_id] = change.uid
    elif _changed(change, JOB_STATUS):
        out.jobs.add(change.obj_id)


def _command(change: Change, out: Reactions) -> None:
    if change.type != log.ADDED:
        return
    if change.data.get("target_kind") == "Queue":
        out.queues = True
    elif change.data.get("job_id"):
        out.jobs.add(int(change.data["job_id"]))


def _podgroup(change: Change, out: Reactions) -> None:
    row = change.data
    if change.type != log.MODIFIED:
        out.queues = True
        return
    before = change.prev or {}
    if row.get("phase") != before.get("phase") and row.get("job_id"):
        (out.urgent if row.get("phase") == "Inqueue" else out.jobs).add(int(row["job_id"]))


def _pod(change: Change, out: Reactions) -> None:
    row = change.data
    job = row.get("job_id")
    if change.type == log.ADDED:
        if job is None and row.get("scheduler_name") == "volcano" and not row.get("group_name"):
            out.bare_pods = True
        return
    if job is not None and pod_view(change.before) != pod_view(change.after):
        out.jobs.add(int(job))


def _queue(change: Change, out: Reactions) -> None:
    if change.type != log.MODIFIED or _changed(change, QUEUE_STATUS):
        out.queues = True


_BY_KIND = {"jobs": _job, "commands": _command, "podgroups": _podgroup, "pods": _pod, "queues": _queue}


def reactions(changes: Iterable[Change]) -> Reactions:
    """What the controllers must do about these changes (in log order)."""
    out = Reactions()
    for change in changes:
        react = _BY_KIND.get(change.kind)
        if react is not None:
            react(change, out)
    for job_id in out.deleted:
        out.urgent.discard(job_id)
        out.jobs.discard(job_id)
    out.jobs -= out.urgent
    return out


def ask(found: Reactions) -> None:
    """Hand the requests to the controllers (``runtime.dispatch``; its tasks by name)."""
    if found.urgent:
        dispatch.request_sync(sorted(found.urgent), urgent=True)
    if found.jobs:
        dispatch.request_sync(sorted(found.jobs))
    for job_id, uid in sorted(found.deleted.items()):
        dispatch.queue_task(dispatch.JOB_DELETED_TASK, job_id, uid or None)
    if found.queues:
        dispatch.request_queue_sync()
    if found.bare_pods:
        dispatch.queue_task(dispatch.GROUP_BARE_PODS_TASK)


class Informer:
    """The log read from a cursor (:meth:`step`), each batch's reactions asked for."""

    def __init__(self, cursor: int | None = None) -> None:
        #: the revision read up to (None: not started; the first step starts from the current one)
        self.cursor = cursor

    def step(self) -> Reactions:
        """Read what committed since the cursor and ask for its reactions; a first step (or one behind the
        compaction point) starts from the current revision and asks for a full resync instead."""
        current, compacted = log.head()
        if self.cursor is None or self.cursor < compacted:
            self.cursor = current
            dispatch.queue_task(dispatch.RESYNC_TASK)
            return Reactions()
        found = Reactions()
        while self.cursor < current:
            batch = read(self.cursor, current)
            self.cursor = batch[-1].rev if len(batch) == log.BATCH else current
            found = _merge(found, reactions(batch))
        ask(found)
        return found


def _merge(a: Reactions, b: Reactions) -> Reactions:
    deleted = {**a.deleted, **b.deleted}
    urgent = (a.urgent | b.urgent) - set(deleted)
    return Reactions(
        urgent=urgent,
        jobs=(a.jobs | b.jobs) - urgent - set(deleted),
        deleted=deleted,
        queues=a.queues or b.queues,
        bare_pods=a.bare_pods or b.bare_pods,
    )


class Runner:
    """The informer's thread: a step every ``FEED_POLL_SECONDS`` while it leads (PostgreSQL: holds
    :data:`LEADER_LOCK` on its connection; SQLite: the embedded mode's one process)."""

    def __init__(self, informer: Informer | None = None) -> None:
        self.informer = informer or Informer()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="controller-informer", daemon=True)

    def start(self) -> Runner:
        self.thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        self.thread.join(timeout)

    def _lead(self) -> bool:
        if connection.vendor != "postgresql":
            return True
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", list(LEADER_LOCK))
            row = cursor.fetchone()
        return bool(row and row[0])

    def _run(self) -> None:
        poll = float(settings.FEED_POLL_SECONDS)
        leading = False
        while not self.stopping.is_set():
            try:
                leading = leading or self._lead()
                if leading:
                    self.informer.step()
                self.stopping.wait(poll if leading else 5.0)
            except Exception:
                logger.exception("controller informer: a step failed; starting again from a resync")
                self.informer.cursor = None
                leading = False
                connection.close()  # a lost connection also gives up the lead
                self.stopping.wait(1.0)
        connection.close()
