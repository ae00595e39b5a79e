"""The simulation's scheduling cycle, run in a child process with a time limit (docs/adr/0025).

``POST /api/v1/simulate`` and the Submit page's dry run build the live snapshot in the web process, then
hand it, the manifest's objects and the active configuration to :func:`run_isolated`: a child of a
``forkserver`` (started once, clean: it imports only this module, the scheduling core and the stdlib, never
Django) turns the objects into a snapshot, merges it and runs one cycle. The web process only waits: a
simulation never holds the GIL of the process that serves the API, its memory goes with the child, and a
child that outlives ``SIMULATE_TIMEOUT`` (wall clock, or its CPU limit) is killed.

This module must not import Django (the forkserver child imports it).
"""

from __future__ import annotations

import copyreg
import multiprocessing
import resource
import threading
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection
from types import MappingProxyType
from typing import Any

from scheduler import Snapshot, run_cycle
from scheduler.config_types import SchedulerConfig
from scheduler.decode import ManifestError, snapshot_from_manifests
from scheduler.result import CycleResult


def _mapping_proxy(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(items)


def _reduce_mapping_proxy(mapping: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return _mapping_proxy, (dict(mapping),)


# The core's read-only mappings (quantities, configuration arguments, reasons) cross the pipe as copies.
copyreg.pickle(MappingProxyType, _reduce_mapping_proxy)
_CONTEXT_LOCK = threading.Lock()
_context: Any = None


class SimulationTimeout(Exception):
    """The child did not answer within the time limit (it was killed)."""


class SimulationFailed(Exception):
    """The child died without an answer (a crash, or its memory or CPU limit)."""


def merge(live: Snapshot, extra: Snapshot, queue_names: set[str], creation: int) -> Snapshot:
    """Return the live snapshot plus ``extra``'s objects (same-named objects replaced; extras are newest).

    The live clock (``now``) is kept; an extra PodGroup without a creation time is created ``now``
    (so the sla plugin sees a job that has not waited yet).
    """
    now = live.now
    quota_keys = {(q.namespace, q.name) for q in extra.resource_quotas}
    job_keys = {j.key for j in extra.jobs}
    task_keys = {t.key for t in extra.tasks}
    node_names = {n.name for n in extra.nodes}
    class_names = {c.name for c in extra.priority_classes}
    hyper_names = {h.name for h in extra.hyper_nodes}
    return Snapshot.of(
        [n for n in live.nodes if n.name not in node_names] + list(extra.nodes),
        [q for q in live.queues if q.name not in queue_names] + [q for q in extra.queues if q.name in queue_names],
        [j for j in live.jobs if j.key not in job_keys]
        + [replace(j, creation=creation + j.creation, created_at=j.created_at or (now or 0.0)) for j in extra.jobs],
        [t for t in live.tasks if t.key not in task_keys and t.job not in job_keys]
        + [replace(t, creation=creation + t.creation) for t in extra.tasks],
        [c for c in live.priority_classes if c.name not in class_names] + list(extra.priority_classes),
        now=now,
        resource_quotas=[q for q in live.resource_quotas if (q.namespace, q.name) not in quota_keys]
        + list(extra.resource_quotas),
        pod_disruption_budgets=live.pod_disruption_budgets,
        hyper_nodes=[h for h in live.hyper_nodes if h.name not in hyper_names] + list(extra.hyper_nodes),
    )


def compute(
    live: Snapshot, objects: list[dict[str, Any]], queue_names: set[str], creation: int, config: SchedulerConfig
) -> tuple[Snapshot, CycleResult]:
    """The manifest's objects as a snapshot, merged into the live one, and one cycle over it (in process)."""
    extra = snapshot_from_manifests(list(enumerate(objects, 1)))
    return extra, run_cycle(merge(live, extra, queue_names, creation), config)


def _child(conn: Connection, payload: tuple[Any, ...], cpu_seconds: int) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = cpu_seconds if hard == resource.RLIM_INFINITY else min(cpu_seconds, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
    try:
        answer: tuple[Any, ...] = ("ok", *compute(*payload))
    except ManifestError as exc:  # rebuilt by the parent: its constructor does not pickle
        answer = ("manifest", exc.document, exc.object, exc.field, exc.detail)
    conn.send(answer)
    conn.close()


def _get_context() -> Any:
    global _context
    with _CONTEXT_LOCK:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload([__name__])
            _context = context
        return _context


def run_isolated(
    live: Snapshot,
    objects: list[dict[str, Any]],
    queue_names: set[str],
    creation: int,
    config: SchedulerConfig,
    *,
    timeout: float,
    target: Callable[[Connection, tuple[Any, ...], int], None] | None = None,
) -> tuple[Snapshot, CycleResult]:
    """:func:`compute` in a child process; raise :class:`SimulationTimeout` after ``timeout`` seconds,
    :class:`ManifestError` as the child raised it, :class:`SimulationFailed` if the child died.

    ``target`` replaces the child's function (a test's seam: a module-level function that never answers).
    """
    context = _get_context()
    receiver, sender = context.Pipe(duplex=False)
    payload = (live, objects, queue_names, creation, config)
    child = context.Process(target=target or _child, args=(sender, payload, max(1, int(timeout) + 1)), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            raise SimulationTimeout(f"no answer after {timeout:g} s")
        try:
            answer = receiver.recv()
        except EOFError:
            raise SimulationFailed(f"the simulation process ended with exit code {child.exitcode}") from None
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join(5)
        child.close()
    if answer[0] == "manifest":
        raise ManifestError(*answer[1:])
    return answer[1], answer[2]
