"""Step 4 of a scheduling cycle: the core's decisions applied to the database in one transaction.

Pods get ``node_name`` and a bind intent (whole gangs at once, only pods still unbound: applying twice binds
nothing twice), evictions get a deletion timestamp and an evict intent; PodGroups get their phases,
conditions and events, queues their status, and the cycle's :class:`~volcanoweb.scheduling.models.SchedulingRun`
row its decisions. The cluster calls the intents stand for are made by :mod:`volcanoweb.scheduling.intents`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from scheduler import CycleResult
from scheduler.quantity import format_quantity
from scheduler.result import ReasonKind
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.core.idlist import one_of
from volcanoweb.core.stageprof import stage
from volcanoweb.jobs.models import Event, EventType, Pod, PodGroup, PodGroupPhase
from volcanoweb.queues.models import Queue
from volcanoweb.scheduling import messages
from volcanoweb.scheduling.lease import LEASE_NAME, LeaseLost
from volcanoweb.scheduling.models import IntentKind, PodIntent, SchedulerLease, SchedulingRun
from volcanoweb.scheduling.snapshots import SnapshotInfo

MAX_DECISIONS = 500
UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"


@dataclass
class ApplyStats:
    """What :func:`apply_result` changed."""

    binds: list[tuple[str, str]] = field(default_factory=list)
    evictions: list[str] = field(default_factory=list)
    skipped_binds: int = 0
    podgroups: int = 0
    events: int = 0
    queues: int = 0
    admitted: list[int] = field(default_factory=list)  # jobs whose PodGroup became Inqueue
    job_ids: list[int] = field(default_factory=list)  # jobs whose PodGroup phase changed otherwise


def _condition(kind: str, status: str, reason: str, message: str, transition: int) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "transitionID": str(transition),
        "lastTransitionTime": timezone.now().isoformat(),
    }


def _set_condition(status: dict[str, Any], condition: dict[str, Any]) -> bool:
    """Put ``condition`` in ``status["conditions"]`` (replacing its type); False if nothing changed."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    for existing in conditions:
        if existing.get("type") == condition["type"]:
            same = all(existing.get(k) == condition[k] for k in ("status", "reason", "message"))
            if same:
                return False
    status["conditions"] = [c for c in conditions if c.get("type") != condition["type"]] + [condition]
    return True


#: The Pod columns :func:`_bind_pods` reads or writes (not the large spec, labels and annotations).
BIND_FIELDS = (
    "id",
    "namespace",
    "name",
    "tenant_id",
    "phase",
    "node_name",
    "deletion_timestamp",
    "status",
    "annotations",
)


def _bind_pods(info: SnapshotInfo, result: CycleResult, run_id: int, stats: ApplyStats) -> None:
    wanted = {info.pod_ids[key]: (key, node) for key, node in result.binds.items() if key in info.pod_ids}
    if not wanted:
        return
    rows = Pod.objects.select_for_update(no_key=True).filter(one_of("pk", wanted)).only(*BIND_FIELDS)
    pods = list(rows.order_by("pk"))
    intents: list[PodIntent] = []
    bound: list[Pod] = []
    annotated: list[Pod] = []
    for pod in pods:
        key, node = wanted[pod.pk]
        if pod.node_name or pod.deletion_timestamp is not None or (pod.status or {}).get("deleted"):
            stats.skipped_binds += 1  # bound already (this result applied before) or gone
            continue
        notes = result.bind_annotations.get(key)
        if notes:
            pod.annotations = {**(pod.annotations or {}), **notes}
            annotated.append(pod)
        pod.node_name = node
        status = dict(pod.status or {})
        status.pop("nominatedNodeName", None)
        status["scheduledBy"] = run_id
        pod.status = status
        bound.append(pod)
        intents.append(
            PodIntent(kind=IntentKind.BIND, namespace=pod.namespace, name=pod.name, node=node, run_id=run_id)
        )
        stats.binds.append((key, node))
    bulk_update_rows(Pod, bound, ["node_name", "status"])
    if annotated:
        bulk_update_rows(Pod, annotated, ["annotations"])
    PodIntent.objects.bulk_create(intents, ignore_conflicts=True, batch_size=500)


def _evict_pods(info: SnapshotInfo, result: CycleResult, run_id: int, stats: ApplyStats) -> None:
    by_id = {info.pod_ids[e.task]: e for e in result.evictions if e.task in info.pod_ids}
    if not by_id:
        return
    now = timezone.now()
    for pod in Pod.objects.select_for_update(no_key=True).filter(one_of("pk", by_id)).order_by("pk"):
        eviction = by_id[pod.pk]
        if pod.deletion_timestamp is not None:
            continue
        pod.deletion_timestamp = now
        pod.status = {**(pod.status or {}), "evictedBy": eviction.to_json()}
        pod.save(update_fields=["deletion_timestamp", "status"])
        PodIntent.objects.get_or_create(
            kind=IntentKind.EVICT,
            namespace=pod.namespace,
            name=pod.name,
            defaults={"node": pod.node_name, "run_id": run_id},
        )
        stats.evictions.append(pod.key)


def _nominate(info: SnapshotInfo, result: CycleResult) -> None:
    ids = {info.pod_ids[key]: node for key, node in result.pipelined.items() if key in info.pod_ids}
    changed = []
    for pod in Pod.objects.filter(one_of("pk", ids)).only("id", "status"):
        if (pod.status or {}).get("nominatedNodeName") != ids[pod.pk]:
            pod.status = {**(pod.status or {}), "nominatedNodeName": ids[pod.pk]}
            changed.append(pod)
    bulk_update_rows(Pod, changed, ["status"])


@dataclass
class _GroupUpdates:
    """One cycle's changes to its PodGroups: the phases and Unschedulable conditions it sets, and the events
    those emit (written in bulk after the last group)."""

    result: CycleResult
    run_id: int
    stats: ApplyStats
    now: datetime
    events: list[Event] = field(default_factory=list)

    def event(self, obj: Any, kind: str, type_: str, reason_text: str, message: str) -> None:
        now = self.now
        self.events.append(
            Event(
                namespace=obj.namespace,
                tenant_id=obj.tenant_id,
                involved_kind=kind,
                involved_namespace=obj.namespace,
                involved_name=obj.name,
                involved_uid=obj.uid,
                type=type_,
                reason=reason_text,
                message=message,
                source="volcano",
                first_timestamp=now,
                last_timestamp=now,
            )
        )

    def phase(self, group: PodGroup, status: dict[str, Any]) -> set[str]:
        """Set the group's new phase (and its Scheduled condition when it runs); return the columns changed."""
        changed: set[str] = set()
        new_phase = self.result.podgroups.get(group.key)
        if new_phase and new_phase != group.phase:
            stats = self.stats
            if group.job_id is not None:
                (stats.admitted if new_phase == PodGroupPhase.INQUEUE else stats.job_ids).append(group.job_id)
            group.phase = new_phase
            status["phase"] = new_phase
            changed.update(("phase", "status"))
            ready = _condition(SCHEDULED, "True", "tasks in gang are ready to be scheduled", "", self.run_id)
            if new_phase in (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED):
                _set_condition(status, ready)
            if new_phase == PodGroupPhase.RUNNING:
                self.event(group, "PodGroup", EventType.NORMAL, SCHEDULED, "pod group is ready")
        return changed

    def reason(self, group: PodGroup, status: dict[str, Any]) -> set[str]:
        """Set or clear the group's Unschedulable condition and stored reason; return the columns changed."""
        changed: set[str] = set()
        key = group.key
        reason = self.result.unschedulable.get(key)
        if reason is not None:
            why = "NeverFits" if reason.kind == ReasonKind.NEVER_FITS else "NotEnoughResources"
            said = messages.readable(reason.message)  # as kubectl describe shows it
            condition = _condition(UNSCHEDULABLE, "True", why, said, self.run_id)
            if _set_condition(status, condition):
                changed.add("status")
                self.event(group, "PodGroup", EventType.WARNING, UNSCHEDULABLE, said)
                if group.job is not None:
                    self.event(group.job, "Job", EventType.WARNING, UNSCHEDULABLE, said)
            if status.get("unschedulableReason") != reason.to_json():
                status["unschedulableReason"] = reason.to_json()
                changed.add("status")
        elif (
            any(c.get("type") == UNSCHEDULABLE for c in status.get("conditions") or [])
            and key not in self.result.unschedulable
        ):
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != UNSCHEDULABLE]
            status.pop("unschedulableReason", None)
            changed.add("status")
        return changed


def _update_podgroups(info: SnapshotInfo, result: CycleResult, run_id: int, stats: ApplyStats) -> None:
    keys = set(result.podgroups) | set(result.unschedulable)
    ids = [info.podgroup_ids[k] for k in keys if k in info.podgroup_ids]
    if not ids:
        return
    updates = _GroupUpdates(result, run_id, stats, timezone.now())
    changed_groups: list[PodGroup] = []
    for group in (
        PodGroup.objects.select_for_update(no_key=True, of=("self",))
        .filter(one_of("pk", ids))
        .select_related("job")
        .order_by("pk")
    ):
        status = dict(group.status or {})
        changed = updates.phase(group, status) | updates.reason(group, status)
        if changed:
            group.status = status
            changed_groups.append(group)
    bulk_update_rows(PodGroup, changed_groups, ["phase", "status"])
    Event.objects.bulk_create(updates.events, batch_size=500)
    stats.podgroups, stats.events = len(changed_groups), len(updates.events)


def _clear_scheduled_reasons(info: SnapshotInfo, result: CycleResult) -> None:
    """Drop the Unschedulable condition of groups no longer reported unschedulable."""
    stale = {
        pk for key, pk in info.podgroup_ids.items() if key not in result.unschedulable and key not in result.podgroups
    }
    if not stale:
        return
    # The few groups that carry a reason, filtered here: naming every PodGroup of the snapshot in the query
    # (12,000 at 50,000 pods) cost more in the driver's parameter binding than the query itself.
    for group in PodGroup.objects.filter(status__has_key="unschedulableReason"):
        if group.pk not in stale:
            continue
        status = dict(group.status)
        status.pop("unschedulableReason", None)
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != UNSCHEDULABLE]
        group.status = status
        group.save(update_fields=["status"])


def update_queue_status(allocated: dict[str, dict[str, int]] | None = None) -> int:
    """Write queue status: allocated (from the cycle) and PodGroup counts per phase; return rows changed."""
    counts: dict[str, Counter[str]] = {}
    for row in PodGroup.objects.values("queue_name", "phase").annotate(n=Count("id")):
        counts.setdefault(row["queue_name"], Counter())[row["phase"]] = row["n"]
    changed = 0
    for queue in Queue.objects.select_for_update(no_key=True).order_by("pk"):
        c = counts.get(queue.name, Counter())
        fields: dict[str, Any] = {
            "pending": c[PodGroupPhase.PENDING],
            "running": c[PodGroupPhase.RUNNING],
            "inqueue": c[PodGroupPhase.INQUEUE],
            "completed": c[PodGroupPhase.COMPLETED],
            "unknown": c[PodGroupPhase.UNKNOWN],
        }
        if allocated is not None:
            vector = allocated.get(queue.name, {})
            fields["allocated"] = {k: format_quantity(k, v) for k, v in sorted(vector.items()) if v}
        diff = [k for k, v in fields.items() if getattr(queue, k) != v]
        if not diff:
            continue
        for key in diff:
            setattr(queue, key, fields[key])
        queue.save(update_fields=diff)
        changed += 1
    return changed


@stage("cycle apply")
def apply_result(info: SnapshotInfo, result: CycleResult, run: SchedulingRun, token: int | None = None) -> ApplyStats:
    """Persist a cycle's decisions atomically and idempotently (see the module docstring, step 4).

    With ``token``, first checks under a row lock that the lease is still ours (else
    :class:`LeaseLost` and nothing is written).
    """
    stats = ApplyStats()
    with transaction.atomic():
        if token is not None:
            lease = SchedulerLease.objects.select_for_update(no_key=True).filter(name=LEASE_NAME).first()
            if lease is None or lease.token != token:
                raise LeaseLost(f"lease token {token} is no longer current")
        _bind_pods(info, result, run.pk, stats)
        _evict_pods(info, result, run.pk, stats)
        _nominate(info, result)
        _update_podgroups(info, result, run.pk, stats)
        _clear_scheduled_reasons(info, result)
        allocated = {k: dict(v) for k, v in result.queue_allocated.items()}
        stats.queues = update_queue_status(allocated)
        run.binds = len(stats.binds)
        run.evictions = len(stats.evictions)
        run.pipelined = len(result.pipelined)
        run.unschedulable = {k: v.to_json() for k, v in sorted(result.unschedulable.items())}
        run.decisions = {
            "binds": dict(sorted(stats.binds)[:MAX_DECISIONS]),
            "evictions": [e.to_json() for e in result.evictions[:MAX_DECISIONS]],
            "pipelined": dict(sorted(result.pipelined.items())[:MAX_DECISIONS]),
            "podgroups": dict(sorted(result.podgroups.items())[:MAX_DECISIONS]),
            "skippedBinds": stats.skipped_binds,
            "queueDeserved": {k: dict(v) for k, v in sorted(result.queue_deserved.items())},
        }
        run.save(update_fields=["binds", "evictions", "pipelined", "unschedulable", "decisions"])
        # Volcano's job controller watches PodGroups: the controllers' informer (runtime.informer) reads the
        # phases written here from the change log and asks for the admitted gangs' pods at once.
    return stats
