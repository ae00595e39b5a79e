"""What a queue or scheduler-configuration change did: the recorded cycles against the same cycles without it.

For an audit entry of a Queue or of the scheduler configuration, this takes the first kept cycle input
recorded after the change (``CycleInput``) and replays ``EFFECT_CYCLES`` cycles from it twice with the
core (``scheduler.run_cycle``, each next snapshot from ``scheduler.advance``): once as recorded, once with
the change undone (the queue as it was before the entry, or the configuration of the cycle before the
change). The differences are the change's effects: pods evicted (by reclaim or preempt), PodGroups
admitted or bound, and queue allocations, that happen only with the change (or only without it).

Deviations: later cycles are simulated from the recorded one with a perfect cluster (``advance``), not
read back from history, so pods finishing or jobs submitted meanwhile are not part of the comparison.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from scheduler import CycleResult, SchedulerConfig, Snapshot, advance, run_cycle
from scheduler.decode import ManifestError, snapshot_from_manifests
from scheduler.model import JobPhase
from scheduler.quantity import format_quantity
from scheduler.replay import CycleInputError, load_cycle_input
from volcanoweb.audit.models import AuditEntry
from volcanoweb.insights.models import CycleInput
from volcanoweb.insights.recording import input_text
from volcanoweb.insights.services import OTHER_TENANT, readable_namespaces
from volcanoweb.jobs.models import PodGroup
from volcanoweb.manifests.parse import QUEUE, SCHEDULER_CONFIG
from volcanoweb.queues.models import Queue as QueueRow
from volcanoweb.scheduling.models import SchedulingRun
from volcanoweb.tenancy.access import Access, visible_queue_filter

EFFECT_CYCLES = 3


def _without_queue_change(snapshot: Snapshot, entry: AuditEntry) -> Snapshot | None:
    """Return the snapshot with the queue as it was before ``entry`` (None when that cannot be built)."""
    name = entry.object_key
    before = entry.before
    if before is None:  # the entry created the queue: without it the queue does not exist
        return replace(snapshot, queues=tuple(q for q in snapshot.queues if q.name != name))
    try:
        parsed = next(q for q in snapshot_from_manifests([(1, before)]).queues if q.name == name)
    except (ManifestError, StopIteration):
        return None
    live = next((q for q in snapshot.queues if q.name == name), None)
    if live is None:
        return replace(snapshot, queues=(*snapshot.queues, parsed))
    old = replace(
        live,
        weight=parsed.weight,
        capability=parsed.capability,
        guarantee=parsed.guarantee,
        deserved=parsed.deserved,
        reclaimable=parsed.reclaimable,
        priority=parsed.priority,
        state=parsed.state,
    )
    return replace(snapshot, queues=tuple(old if q.name == name else q for q in snapshot.queues))


def _previous_config(row: CycleInput) -> SchedulerConfig | None:
    earlier = CycleInput.objects.filter(run_id__lt=row.run_id).order_by("-run_id").first()
    if earlier is None:
        return None
    try:
        return load_cycle_input(input_text(earlier))[1]
    except (CycleInputError, ValueError):
        return None


def _run(snapshot: Snapshot, config: SchedulerConfig) -> list[tuple[Snapshot, CycleResult]]:
    out = []
    for _ in range(EFFECT_CYCLES):
        result = run_cycle(snapshot, config)
        out.append((snapshot, result))
        snapshot = advance(snapshot, result)
    return out


def _outcome(runs: list[tuple[Snapshot, CycleResult]]) -> dict[str, Any]:
    evictions: set[tuple[str, str]] = set()
    bound: set[str] = set()
    admitted: set[str] = set()
    for snapshot, result in runs:
        evictions |= {(e.task, e.action) for e in result.evictions}
        jobs_of = {t.key: t.job for t in snapshot.tasks}
        bound |= {jobs_of[k] for k in result.binds if jobs_of.get(k)}
        admitted |= {k for k, v in result.podgroups.items() if v == JobPhase.INQUEUE}
    last = runs[-1][1]
    return {"evictions": evictions, "bound": bound, "admitted": admitted, "allocated": last.queue_allocated}


def _job_names(keys: set[str]) -> dict[str, str]:
    """Return PodGroup key -> "namespace/job" for the PodGroups of Volcano jobs among ``keys``."""
    names = {k.split("/", 1)[1] for k in keys if "/" in k}
    rows = PodGroup.objects.filter(name__in=names, job__isnull=False).values_list("namespace", "name", "job__name")
    return {f"{ns}/{name}": f"{ns}/{job}" for ns, name, job in rows}


def _surely_first_after(entry: AuditEntry, run_id: int) -> bool:
    """Whether run ``run_id``, the first run kept that started after ``entry``, is the first cycle after it. Within
    the retention of deciding cycles it is: the first cycle after each change is kept that long, run and input.
    Past it that cycle may be gone, and a later one would be cited: only a run whose predecessor is kept too (the
    run before it by id, started before the change) is surely the first."""
    cutoff = timezone.now() - timedelta(seconds=float(settings.INSIGHTS_DECIDED_CYCLE_RETENTION))
    if entry.at >= cutoff:
        return True
    previous = SchedulingRun.objects.filter(pk__lt=run_id).order_by("-pk").values_list("pk", flat=True).first()
    return previous == run_id - 1


def _retention() -> str:
    hours = float(settings.INSIGHTS_DECIDED_CYCLE_RETENTION) / 3600
    return f"{hours:g} h" if hours >= 1 else f"{hours * 60:g} min"


def _name(key: str, visible: set[str] | None, names: dict[str, str] | None = None) -> str:
    if visible is not None and key.split("/", 1)[0] not in visible:
        return OTHER_TENANT
    return (names or {}).get(key, key)


def _without_change(
    entry: AuditEntry, row: CycleInput, snapshot: Snapshot, config: SchedulerConfig
) -> tuple[Snapshot, SchedulerConfig, str] | str:
    """The recorded cycle's input with ``entry``'s change undone and what was undone; else why it cannot be."""
    if entry.kind == QUEUE.kind:
        changed = _without_queue_change(snapshot, entry)
        if changed is None:
            return "the queue before the change cannot be rebuilt"
        return changed, config, "the queue as it was before the change"
    previous = _previous_config(row)
    if previous is None:
        return "no kept cycle before the change to take its configuration"
    return snapshot, previous, "the configuration of the last kept cycle before the change"


def _share_changes(with_change: dict[str, Any], without: dict[str, Any]) -> list[dict[str, Any]]:
    """Each queue whose allocation differs with the change, and by how much (``+2``, ``-4Gi``; pods left out)."""
    shares = []
    for queue in sorted(set(with_change) | set(without)):
        a, b = dict(with_change.get(queue) or {}), dict(without.get(queue) or {})
        diff = {
            k: a.get(k, 0) - b.get(k, 0) for k in sorted(set(a) | set(b)) if k != "pods" and a.get(k, 0) != b.get(k, 0)
        }
        if diff:
            shares.append(
                {
                    "queue": queue,
                    "change": {k: ("+" if v > 0 else "-") + format_quantity(k, abs(v)) for k, v in diff.items()},
                }
            )
    return shares


def effects_for(access: Access, audit_id: int) -> dict[str, Any] | None:
    """Return the effects of a Queue or scheduler-configuration audit entry the caller may see (else None)."""
    entry = AuditEntry.objects.filter(pk=audit_id, kind__in=(QUEUE.kind, SCHEDULER_CONFIG.kind)).first()
    if entry is None:
        return None
    visible_queue = QueueRow.objects.filter(visible_queue_filter(access), name=entry.object_key).exists()
    if entry.kind == QUEUE.kind and not (access.platform_admin or visible_queue):
        return None
    base: dict[str, Any] = {"auditId": entry.pk, "cycles": EFFECT_CYCLES}
    # The cycle right after the change, and only that one: a later kept cycle would give every old change the
    # same (and, as cycles are pruned, a moving) answer.
    after = SchedulingRun.objects.filter(started_at__gte=entry.at).order_by("pk").values_list("pk", flat=True).first()
    if after is None:
        return {**base, "available": False, "message": "no scheduling cycle has run since this change"}
    if not _surely_first_after(entry, after):
        message = (
            "the first cycle after this change is no longer kept (changes older than "
            f"{_retention()} keep no cycle input)"
        )
        return {**base, "available": False, "message": message}
    row = CycleInput.objects.filter(run_id=after).first()
    if row is None:
        message = f"the input of cycle #{after}, the first after this change, is no longer kept (pruned)"
        return {**base, "available": False, "cycle": after, "message": message}
    try:
        snapshot, config, _doc = load_cycle_input(input_text(row))
    except (CycleInputError, ValueError) as exc:
        return {**base, "available": False, "message": f"the cycle input cannot be read: {exc}"}
    other = _without_change(entry, row, snapshot, config)
    if isinstance(other, str):
        return {**base, "available": False, "message": other}
    other_snapshot, other_config, undone = other
    with_change = _outcome(_run(snapshot, config))
    without = _outcome(_run(other_snapshot, other_config))
    visible = readable_namespaces(access)
    shares = _share_changes(with_change["allocated"], without["allocated"])
    groups = set().union(*(with_change[k] ^ without[k] for k in ("bound", "admitted")))
    names = _job_names(groups)
    evicted = with_change["evictions"] - without["evictions"]
    by_action = Counter(action for _, action in evicted)
    return {
        **base,
        "available": True,
        "cycle": row.run_id,
        "evictions": [{"pod": _name(task, visible), "action": action} for task, action in sorted(evicted)],
        "evictionsByAction": dict(sorted(by_action.items())),
        "preventedEvictions": len(without["evictions"] - with_change["evictions"]),
        "bound": sorted(_name(k, visible, names) for k in with_change["bound"] - without["bound"]),
        "notBound": sorted(_name(k, visible, names) for k in without["bound"] - with_change["bound"]),
        "admitted": sorted(_name(k, visible, names) for k in with_change["admitted"] - without["admitted"]),
        "notAdmitted": sorted(_name(k, visible, names) for k in without["admitted"] - with_change["admitted"]),
        "shares": shares,
        "how": f"{EFFECT_CYCLES} simulated cycles from the input of cycle {row.run_id} (the first after the "
        f"change), compared with the same cycles run with {undone}",
    }
