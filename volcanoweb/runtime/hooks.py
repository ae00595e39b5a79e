"""Post-commit reactions to control-plane writes (``live.notify`` listeners, registered by ``runtime.apps``).

Each reaction enqueues a runtime task (run in-process when Celery is eager, as in the embedded mode);
a failure is logged and never reaches the request that made the change.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def on_change(kind: str, obj: Any, action: str) -> None:
    """Enqueue the controller work a committed change calls for (job submitted/updated/commanded/deleted...)."""
    from volcanoweb.runtime import dispatch, tasks

    try:
        if kind == "Job":
            if action == "delete":
                tasks.job_deleted.delay(obj.pk, str(obj.uid))
            else:
                dispatch.request_sync([obj.pk], urgent=True)
        elif kind == "Pod" and action == "create" and getattr(obj, "job_id", None) is None:
            tasks.group_bare_pods.delay()
        elif kind in ("Queue", "PodGroup") and action in ("create", "delete", "state", "update"):
            tasks.sync_queues.delay()
    except Exception:  # a controller hiccup must not break a committed write; the resync catches up
        log.exception("runtime hook failed for %s %s", kind, getattr(obj, "name", ""))


def on_change_many(kind: str, objs: list[Any], action: str) -> None:
    """:func:`on_change` for many committed objects of one kind: submitted jobs go to the controller in one call."""
    from volcanoweb.runtime import dispatch

    if kind == "Job" and action != "delete":
        try:
            dispatch.request_sync([obj.pk for obj in objs], urgent=True)
        except Exception:  # as in on_change: the resync catches up
            log.exception("runtime hook failed for %d %s objects", len(objs), kind)
        return
    for obj in objs:
        on_change(kind, obj, action)
