"""``python -m bench resync``: the controllers' periodic checks with N jobs in the database.

In-process on a fresh PostgreSQL database ``volcanoweb_resync_<pid>`` (dropped afterwards), filled as ``bench
pages`` fills its own (the demo seed, then N jobs with their tasks, PodGroups, pods and events in a realistic
phase mix), then every job reconciled once by its controller (``runtime.services.sync_jobs``), so that each has
the records the drift check compares its rows with. Timed, median of ``--repeat``:

* the drift check over every job (what every pass cost before it read the change log, and what a worker's
  first pass costs);
* the drift check over the jobs the log shows changed since a revision, after ``--changed`` jobs' pods changed;
* one queue sync (every queue's PodGroup counts), which the informer asks for after PodGroups are created or
  deleted (coalesced while one waits: ``runtime.dispatch.request_queue_sync``).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any, TypeVar

from bench import pages

BATCH = 200
T = TypeVar("T")


def _median_ms(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """The median wall time of ``repeat`` calls (ms) and the last call's result."""
    runs: list[tuple[float, T]] = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        result = fn()
        runs.append(((time.perf_counter() - t0) * 1000, result))
    return round(statistics.median(ms for ms, _ in runs), 1), runs[-1][1]


def run(args: Any) -> dict[str, Any]:
    """Populate, reconcile every job once, time the checks, drop the database."""
    db_name = f"volcanoweb_resync_{os.getpid()}"
    pages._setup(db_name)
    try:
        return _measure(args, db_name)
    finally:
        if not args.keep_db:
            pages._drop(db_name)


def _measure(args: Any, db_name: str) -> dict[str, Any]:
    from django.db import connection
    from django.utils import timezone

    from volcanoweb.feed import log
    from volcanoweb.jobs.models import Job, Pod
    from volcanoweb.runtime import services

    t0 = time.perf_counter()
    rows = pages.populate(args.jobs, args.seed)
    ids = sorted(Job.objects.values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        services.sync_jobs(ids[start : start + BATCH])
    prepare_s = time.perf_counter() - t0
    now = timezone.now()
    every_ms, every = _median_ms(lambda: services.drifted_job_ids(now), args.repeat)
    since = log.head()[0]
    running = sorted(set(Pod.objects.filter(phase="Running").values_list("job_id", flat=True)))
    changed = running[:: max(1, len(running) // args.changed)][: args.changed]
    Pod.objects.filter(job_id__in=changed).update(phase="Failed")  # changes the controllers have not seen
    scoped_ms, scoped = _median_ms(lambda: services.drifted_job_ids(now, since=since), args.repeat)
    queues_ms, _ = _median_ms(services.sync_queues, args.repeat)
    found = set(scoped)
    # what the check over every job finds now that it did not before: the scoped check must find all of it
    new = set(services.drifted_job_ids(now)) - set(every)
    return {
        "status": "measured",
        "params": {"jobs": args.jobs, "changed": len(changed), "repeat": args.repeat, "database": db_name},
        "database_vendor": connection.vendor,
        "rows": rows,
        "prepare_seconds": round(prepare_s, 1),
        "drift_check_every_job_ms": every_ms,
        "drifted_before_the_changes": len(every),
        "drift_check_changed_since_ms": scoped_ms,
        "drifted_found_by_the_scoped_check": len(found),
        "queue_sync_ms": queues_ms,
        "drifted_since_found_by_the_check_over_every_job": len(new),
        "ok": bool(new) and new <= found,
    }
