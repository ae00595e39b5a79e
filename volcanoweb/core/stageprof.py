"""Per-stage CPU counters for the end-to-end benchmark (issue 17); off unless the benchmark turns them on.

With ``VOLCANOWEB_STAGE_PROFILE=<dir>`` in a process's environment, :func:`install` (called by the core
app's ``ready``) wraps a few entry points of the request and worker paths so that the CPU time of the
calling thread (``time.thread_time``) spent in each is summed per *stage*, and a daemon thread writes the
sums with the process's total CPU time to ``<dir>/<pid>.json`` every half second. Stages are exclusive: a
stage entered inside another (the broadcast on commit inside a controller sync, a simulated bind inside
the cycle's bind step) is charged to the inner one only, so the stages of a process add up to at most its
CPU time; the rest (Celery and ASGI plumbing, middleware, idle polling) is the process's remainder.

Without the variable nothing is wrapped: the code paths are the unmodified functions (no flag is read on
any hot path). The wrapping replaces module attributes, so it only sees calls that look the function up
through its module at call time (``services.sync_jobs(...)``), which is how the stack calls them.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV = "VOLCANOWEB_STAGE_PROFILE"

#: stage -> [cpu seconds, calls]; guarded by _lock
_totals: dict[str, list[float]] = {}
_lock = threading.Lock()
_local = threading.local()
_installed = False


def enabled() -> bool:
    """True when this process was started with the profile directory set."""
    return bool(os.environ.get(ENV))


def _stack() -> list[list[Any]]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def timed(stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``func`` wrapped so that its thread CPU time, minus that of nested stages, goes to ``stage``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stack = _stack()
        frame = [0.0]  # CPU of nested stages
        stack.append(frame)
        t0 = time.thread_time()
        try:
            return func(*args, **kwargs)
        finally:
            spent = time.thread_time() - t0
            stack.pop()
            if stack:
                stack[-1][0] += spent
            own = spent - frame[0]
            with _lock:
                entry = _totals.setdefault(stage, [0.0, 0])
                entry[0] += own
                entry[1] += 1

    wrapper.__stageprof__ = stage  # type: ignore[attr-defined]
    return wrapper


def _patch(owner: Any, name: str, stage: str) -> None:
    current = getattr(owner, name, None)
    if current is None or getattr(current, "__stageprof__", None):
        return
    setattr(owner, name, timed(stage, current))


def snapshot() -> dict[str, Any]:
    """This process's counters: ``{"pid", "argv", "cpu_seconds", "stages": {stage: {"cpu_seconds", "calls"}}}``."""
    with _lock:
        stages = {k: {"cpu_seconds": v[0], "calls": int(v[1])} for k, v in _totals.items()}
    return {"pid": os.getpid(), "argv": sys.argv[:6], "cpu_seconds": time.process_time(), "stages": stages}


def _writer(directory: Path) -> None:
    path = directory / f"{os.getpid()}.json"
    tmp = directory / f".{os.getpid()}.tmp"
    while True:
        try:
            tmp.write_text(json.dumps(snapshot()))
            tmp.replace(path)
        except OSError:
            pass
        time.sleep(0.5)


def install() -> bool:
    """Wrap the stages' entry points and start the writer thread, if the profile directory is set."""
    global _installed
    directory = os.environ.get(ENV)
    if not directory or _installed:
        return False
    _installed = True
    from rest_framework.views import APIView

    import scheduler
    from volcanoweb import apply as apply_module
    from volcanoweb.api import views as api_views
    from volcanoweb.clusters import services as cluster_services
    from volcanoweb.clusters.backends import simengine
    from volcanoweb.insights import recorder
    from volcanoweb.live import broadcast
    from volcanoweb.runtime import services as runtime_services
    from volcanoweb.scheduling import cycles, decisions, intents

    _patch(APIView, "dispatch", "api request")
    _patch(apply_module, "apply_documents", "api apply (manifests)")
    _patch(api_views, "apply_documents", "api apply (manifests)")
    _patch(runtime_services, "sync_jobs", "controller sync")
    _patch(runtime_services, "sync_job", "controller sync")
    _patch(cycles, "build_snapshot", "cycle snapshot")
    _patch(scheduler, "run_cycle", "cycle decide")
    _patch(decisions, "apply_result", "cycle apply")
    _patch(recorder, "record_run", "insights record")  # in line or in the recorder's writer thread
    _patch(intents, "execute_intents", "cycle bind")
    _patch(cluster_services, "sync_from_backend", "backend mirror")
    engine = simengine.SimEngine
    for name in ("create_pod", "create_pods"):
        _patch(engine, name, "sim create pods")
    for name in ("bind", "bind_many"):
        _patch(engine, name, "sim bind")
    _patch(engine, "tick", "sim kubelet")
    _patch(broadcast, "flush", "broadcast")
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    threading.Thread(target=_writer, args=(path,), name="stageprof-writer", daemon=True).start()
    return True


def read_all(directory: Path) -> dict[int, dict[str, Any]]:
    """Read every process's last counters from ``directory`` (the benchmark's side)."""
    out: dict[int, dict[str, Any]] = {}
    for path in directory.glob("*.json"):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        out[int(doc["pid"])] = doc
    return out
