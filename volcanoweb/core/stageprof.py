"""Per-stage CPU counters for the end-to-end benchmark (issue 17); off unless the benchmark turns them on.

The stages are explicit instrumentation points: :func:`stage` marks the entry point of each (the API request,
the manifests' apply, the controller sync, the cycle's snapshot, decide, apply and bind steps, the insights
record, the backend mirror, the simulated cluster's pod creation, bind and kubelet, the broadcast on commit).
With ``VOLCANOWEB_STAGE_PROFILE=<dir>`` in a process's environment when this module is imported, the marked
functions are wrapped so that the CPU time of the calling thread (``time.thread_time``) spent in each is
summed per *stage*, and :func:`install` (called by the core app's ``ready``) starts a daemon thread that
writes the sums with the process's total CPU time to ``<dir>/<pid>.json`` every half second, with the number
of SQL statements the process sent. Stages are exclusive: a stage entered inside another (the broadcast on
commit inside a controller sync, a simulated bind inside the cycle's bind step) is charged to the inner one
only, so the stages of a process add up to at most its CPU time; the rest (Celery and ASGI plumbing,
middleware, idle polling) is the process's remainder.

Without the variable :func:`stage` returns the function itself: the code paths are the unmodified
functions (no flag is read on any hot path). This module imports only the standard library (Django's
connection signal only once turned on), so any layer may mark its entry points.
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
from typing import Any, TypeVar, cast

ENV = "VOLCANOWEB_STAGE_PROFILE"
#: Read once, at import: the marked functions are wrapped when they are defined, or never.
_ENABLED = bool(os.environ.get(ENV))

F = TypeVar("F", bound=Callable[..., Any])

#: stage -> [cpu seconds, calls]; guarded by _lock
_totals: dict[str, list[float]] = {}
#: SQL statements this process sent through Django's connections (an ``executemany`` counts once)
_statements = [0]
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


def stage(name: str) -> Callable[[F], F]:
    """Mark a function as the entry point of the stage ``name``: timed (:func:`timed`) when the profile
    directory was set at import, else returned unchanged."""

    def mark(func: F) -> F:
        return cast(F, timed(name, func)) if _ENABLED else func

    return mark


def snapshot() -> dict[str, Any]:
    """This process's counters: ``{"pid", "argv", "cpu_seconds", "stages": {stage: {"cpu_seconds", "calls"}}}``."""
    with _lock:
        stages = {k: {"cpu_seconds": v[0], "calls": int(v[1])} for k, v in _totals.items()}
    return {
        "pid": os.getpid(),
        "argv": sys.argv[:6],
        "cpu_seconds": time.process_time(),
        "statements": _statements[0],
        "stages": stages,
    }


def _count(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    with _lock:
        _statements[0] += 1
    return execute(sql, params, many, context)


def _count_statements(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Count every statement of a new database connection (Django's execute wrappers)."""
    if _count not in connection.execute_wrappers:
        connection.execute_wrappers.append(_count)


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
    """Start the writer thread, if the profile directory is set (the stages were wrapped at import)."""
    global _installed
    directory = os.environ.get(ENV)
    if not directory or _installed:
        return False
    _installed = True
    from django.db.backends.signals import connection_created

    connection_created.connect(_count_statements, dispatch_uid="stageprof-statements")
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
