"""Step 5 of a scheduling cycle: the cluster calls of its committed decisions, recorded as ``PodIntent`` rows.

Each intent the cluster acknowledges is deleted; "already bound to that node" counts as done, so nothing is
bound twice. A worker that died after its commit leaves intents that the next cycle retries first
(:func:`recover_intents`, step 2).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction

from scheduler.vgpu import ASSIGNED_IDS, ASSIGNED_NODE, ASSIGNED_TIME, ASSIGNED_TO_ALLOCATE, BIND_PHASE, BIND_TIME
from volcanoweb.clusters.backends.base import BackendError, ClusterBackend, EvictionBlocked
from volcanoweb.clusters.backends.base import Conflict as BackendConflict
from volcanoweb.clusters.backends.base import NotFound as BackendNotFound
from volcanoweb.core import metrics
from volcanoweb.core.idlist import one_of
from volcanoweb.core.stageprof import stage
from volcanoweb.jobs.models import Pod
from volcanoweb.scheduling.models import IntentKind, PodIntent

#: The annotations plugins write with a bind (``CycleResult.bind_annotations``): deviceshare's cards (gpushare's
#: and the vGPU device's).
BIND_ANNOTATIONS = (
    "volcano.sh/gpu-index",
    "volcano.sh/predicate-time",
    ASSIGNED_IDS,
    ASSIGNED_TO_ALLOCATE,
    ASSIGNED_NODE,
    ASSIGNED_TIME,
    BIND_PHASE,
    BIND_TIME,
)


@dataclass
class IntentStats:
    """Outcome of :func:`execute_intents`."""

    bound: int = 0
    evicted: int = 0
    failed: int = 0
    reverted: int = 0


def _bind_all(backend: ClusterBackend, binds: list[tuple[str, str, str]]) -> dict[tuple[str, str], BackendError | None]:
    bind_many = getattr(backend, "bind_many", None)
    if bind_many is not None:
        results: dict[tuple[str, str], BackendError | None] = bind_many(binds)
        return results
    out: dict[tuple[str, str], BackendError | None] = {}
    for ns, name, node in binds:
        try:
            backend.bind(ns, name, node)
            out[(ns, name)] = None
        except BackendError as exc:
            out[(ns, name)] = exc
    return out


def _annotate_binds(backend: ClusterBackend, binds: list[PodIntent]) -> None:
    """Write the annotations a plugin chose with the bind (deviceshare's cards) on the cluster's pods first, as
    Volcano patches the pod before binding it; a failed patch leaves the bind to go ahead (the device plugin
    would refuse the pod)."""
    keys = {(i.namespace, i.name) for i in binds}
    rows = Pod.objects.filter(one_of("name", sorted({n for _, n in keys}))).values_list(
        "namespace", "name", "annotations"
    )
    for ns, name, stored in rows:
        notes = {k: v for k, v in (stored or {}).items() if k in BIND_ANNOTATIONS}
        if (ns, name) in keys and notes:
            with contextlib.suppress(BackendError):
                backend.patch_pod_annotations(ns, name, dict(notes))


@dataclass
class _Outcome:
    """What the cluster said to a batch of intents: acknowledged (the intent goes), refused (the pod is made
    schedulable again) or failed (retried later)."""

    stats: IntentStats
    done: list[int] = field(default_factory=list)
    revert: list[tuple[str, str]] = field(default_factory=list)
    failed: list[PodIntent] = field(default_factory=list)

    def retry(self, intent: PodIntent, error: Exception) -> None:
        intent.attempts += 1
        intent.last_error = str(error)[:1000]
        self.failed.append(intent)


@stage("cycle bind")
def execute_intents(backend: ClusterBackend, intents: Iterable[PodIntent]) -> IntentStats:
    """Make the recorded cluster calls; delete each intent the cluster acknowledged (idempotent)."""
    stats = IntentStats()
    intents = list(intents)
    binds = [i for i in intents if i.kind == IntentKind.BIND]
    outcome = _Outcome(stats)
    if binds:
        _execute_binds(backend, binds, outcome)
    for intent in (i for i in intents if i.kind == IntentKind.EVICT):
        try:
            backend.evict(intent.namespace, intent.name)
            outcome.done.append(intent.pk)
            stats.evicted += 1
        except BackendNotFound:
            outcome.done.append(intent.pk)
        except (EvictionBlocked, BackendError) as exc:
            outcome.retry(intent, exc)
    done, revert, failed = outcome.done, outcome.revert, outcome.failed
    with transaction.atomic():
        PodIntent.objects.filter(one_of("pk", done)).delete()
        if failed:
            PodIntent.objects.bulk_update(failed, ["attempts", "last_error"])
        for ns, name in revert:  # the cluster refused: make the pod schedulable again
            Pod.objects.filter(namespace=ns, name=name, phase="Pending").update(node_name="")
    stats.failed = len(failed)
    stats.reverted = len(revert)
    if stats.bound:
        metrics.PODS_BOUND.inc(stats.bound)
    if stats.evicted:
        metrics.PODS_EVICTED.inc(stats.evicted)
    return stats


def _execute_binds(backend: ClusterBackend, binds: list[PodIntent], outcome: _Outcome) -> None:
    """Bind the pods of ``binds`` (their annotations first) and sort each answer into ``outcome``."""
    _annotate_binds(backend, binds)
    results = _bind_all(backend, [(i.namespace, i.name, i.node) for i in binds])
    for intent in binds:
        error = results.get((intent.namespace, intent.name))
        if error is None:
            outcome.done.append(intent.pk)
            outcome.stats.bound += 1
        elif isinstance(error, BackendConflict):
            try:
                actual = backend.get_pod(intent.namespace, intent.name).node_name
            except BackendError:
                actual = ""
            outcome.done.append(intent.pk)
            if actual == intent.node:
                outcome.stats.bound += 1  # bound by an earlier attempt: nothing is bound twice
            elif not actual:
                outcome.revert.append((intent.namespace, intent.name))
        elif isinstance(error, BackendNotFound):
            outcome.done.append(intent.pk)
            outcome.revert.append((intent.namespace, intent.name))
        else:
            outcome.retry(intent, error)


def recover_intents(backend: ClusterBackend, *, exclude_run: int | None = None) -> IntentStats:
    """Retry the cluster calls of earlier cycles that were committed but not acknowledged."""
    query = PodIntent.objects.order_by("id")
    if exclude_run is not None:
        query = query.exclude(run_id=exclude_run)
    return execute_intents(backend, query[:5000])
