"""Incremental updates of a kept session state (``SessionCache``): bring the opened state of the
last cycle, rolled back by the cache's journal, to a snapshot in which only PodGroups and pods
changed, at a cost of O(changed pods and PodGroups) instead of a fresh open."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from scheduler.info import JobInfo, TaskInfo
from scheduler.model import Job, Resource, Task
from scheduler.result import JobReason
from scheduler.session_state import PodGroupPods, SessionState, count_names, group_by, group_tasks, queue_missing

if TYPE_CHECKING:
    from scheduler.snapshot import Snapshot

__all__ = ["update_state"]

_NODE_OF = operator.attrgetter("node")
_V = TypeVar("_V")


@dataclass(slots=True)
class _Diff:
    """The pods and PodGroups added and removed between the kept state's snapshot and the new one (by
    object identity), and the new snapshot's pods by id."""

    new_pods: dict[int, Task]
    gone_ids: set[int]
    added_t: list[Task]
    removed_t: list[Task]
    added_j: list[Job]
    removed_j: list[Job]


@dataclass(slots=True)
class _Rebuilt:
    """What the update builds for the changed PodGroup keys before it touches the kept state: the new
    jobs, pod groups and dropped PodGroups, the jobs removed and added, the placed TaskInfos that go,
    whether a key not seen before was added, and the groups to build (with their previous build)."""

    jobs: dict[str, JobInfo]
    groups: dict[str, PodGroupPods]
    dropped: dict[str, JobReason]
    removed: list[JobInfo] = field(default_factory=list)
    added: list[JobInfo] = field(default_factory=list)
    gone: list[TaskInfo] = field(default_factory=list)
    new_keys: bool = False
    todo: list[tuple[PodGroupPods, PodGroupPods | None]] = field(default_factory=list)


def update_state(state: SessionState, snapshot: Snapshot, limit: float = 1.0) -> bool:
    """Make the opened state (as a ``SessionCache`` rolled it back) that of ``snapshot``.

    ``snapshot`` must hold the same node, queue and priority-class objects as the current one
    (checked by the cache). Pods and PodGroups are compared by identity (set differences of
    ``id()``, while both snapshots are alive): a PodGroup whose ``Job`` object and pod objects
    are all unchanged keeps its JobInfo and TaskInfos as they are; every other one gets a new
    JobInfo, reusing the TaskInfo of each pod object it already had; the node table is
    updated by the difference (integer sums, so exactly the columns a fresh open computes)
    and node task lists keep the order of a fresh open. The result is the state
    ``Session(snapshot, ...)`` would open, at a cost in Python of O(changed pods and jobs);
    plugins are then refreshed by ``Session.reopen``.

    Returns False when the update cannot be made exactly (resource dimensions changed,
    duplicate PodGroup keys or pod objects, duplicate uids in a changed PodGroup or on a
    node) or would not pay (more pods, or PodGroups, were added and removed than ``limit``
    times their number); the session must then be discarded.
    """
    diff = _diff(state, snapshot, limit)
    if diff is None:
        return False
    uses = _scalar_uses(state, diff)
    if uses is None:
        return False
    by_key = _jobs_by_key(state, diff)
    if by_key is None:
        return False
    out = _rebuild_changed(state, diff, by_key)
    if out is None:
        return False
    vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]] = {}
    placed = state._build_groups(out.todo, vectors)
    for rebuilt, group in out.todo:
        if group is not None and group.placed:
            kept = {id(t) for t in rebuilt.placed}
            out.gone.extend(t for t in group.placed if id(t) not in kept)
    if out.new_keys:
        # Keys not seen before were appended: put the dicts in key order again if needed.
        out.jobs = _in_key_order(out.jobs)
        out.dropped = _in_key_order(out.dropped)
    if not _update_nodes(state, out.gone, placed):
        return False
    state.snapshot = snapshot
    state.jobs = out.jobs
    state.dropped = out.dropped
    state._pod_groups = out.groups
    state._job_by_key = by_key
    state._scalar_uses = uses
    state._pods_by_id = diff.new_pods
    state._tasks = None
    state._changed_jobs = (out.removed, out.added)
    totals = state._open_totals
    if totals is not None:
        for job in out.removed:
            state._add_to_queues(totals, job.queue, job.allocated, -1.0)
        for job in out.added:
            state._add_to_queues(totals, job.queue, job.allocated, 1.0)
    return True


def _diff(state: SessionState, snapshot: Snapshot, limit: float) -> _Diff | None:
    """The pods and PodGroups added and removed; None when the update cannot be made (duplicate pod
    or PodGroup objects) or would not pay (see :func:`update_state`)."""
    old_snap = state.snapshot
    if not state._updatable:
        return None
    if abs(len(snapshot.tasks) - len(old_snap.tasks)) > limit * len(snapshot.tasks) or abs(
        len(snapshot.jobs) - len(old_snap.jobs)
    ) > limit * len(snapshot.jobs):
        return None  # at least that many were added or removed (see below)
    old_pods = state._pods_by_id
    if old_pods is None:
        old_pods = dict(zip(map(id, old_snap.tasks), old_snap.tasks, strict=True))
        if len(old_pods) != len(old_snap.tasks):
            return None
    new_pods = dict(zip(map(id, snapshot.tasks), snapshot.tasks, strict=True))
    if len(new_pods) != len(snapshot.tasks):
        return None
    gone_ids = old_pods.keys() - new_pods.keys()
    added_t = [new_pods[i] for i in new_pods.keys() - old_pods.keys()]
    removed_t = [old_pods[i] for i in gone_ids]
    old_pgs = dict(zip(map(id, old_snap.jobs), old_snap.jobs, strict=True))
    new_pgs = dict(zip(map(id, snapshot.jobs), snapshot.jobs, strict=True))
    if len(new_pgs) != len(snapshot.jobs):
        return None
    added_j = [new_pgs[i] for i in new_pgs.keys() - old_pgs.keys()]
    removed_j = [old_pgs[i] for i in old_pgs.keys() - new_pgs.keys()]
    if len(added_t) + len(removed_t) > limit * len(snapshot.tasks) or len(added_j) + len(removed_j) > limit * len(
        snapshot.jobs
    ):
        return None  # much of it changed: opening afresh is cheaper
    return _Diff(new_pods, gone_ids, added_t, removed_t, added_j, removed_j)


def _scalar_uses(state: SessionState, diff: _Diff) -> dict[str, int] | None:
    """How many pods and PodGroups name each scalar resource after the change; None when the
    session's resource dimensions would change."""
    uses = dict(state._scalar_uses)
    for delta, pods in ((1, diff.added_t), (-1, diff.removed_t)):
        for pod in pods:
            if pod.requests.scalars:
                count_names(uses, pod.requests.scalars, delta)
    for delta, pgs in ((1, diff.added_j), (-1, diff.removed_j)):
        for pg in pgs:
            if pg.min_resources is not None and pg.min_resources.scalars:
                count_names(uses, pg.min_resources.scalars, delta)
    if ("cpu", "memory", "pods", *sorted(state._node_scalars | uses.keys())) != state.dims:
        return None
    return uses


def _jobs_by_key(state: SessionState, diff: _Diff) -> dict[str, Job] | None:
    """The new snapshot's PodGroups by key; None when two PodGroups share a key."""
    if state._job_by_key is None:
        state._job_by_key = {pg.key: pg for pg in state.snapshot.jobs}
        if len(state._job_by_key) != len(state.snapshot.jobs):
            return None  # two PodGroups with one key
    by_key = dict(state._job_by_key)
    for pg in diff.removed_j:
        if by_key.get(pg.key) is not pg:
            return None
        del by_key[pg.key]
    for pg in diff.added_j:
        if pg.key in by_key:
            return None
        by_key[pg.key] = pg
    return by_key


def _rebuild_changed(state: SessionState, diff: _Diff, by_key: dict[str, Job]) -> _Rebuilt | None:
    """The jobs and pod groups of every PodGroup key a changed pod or PodGroup names, in key order;
    None when two pods of a changed group share a uid."""
    changed = {pod.job for pod in diff.added_t}
    changed.update(pod.job for pod in diff.removed_t)
    changed.update(pg.key for pg in diff.added_j)
    changed.update(pg.key for pg in diff.removed_j)
    arrived = group_tasks(diff.added_t)
    out = _Rebuilt(dict(state.jobs), dict(state._pod_groups), dict(state.dropped))
    minimums: dict[int, tuple[Resource, tuple[float, ...]]] = {}
    for key in sorted(changed):
        info = _rejob(state, out, key, by_key.get(key), minimums)
        if not _regroup(out, key, state._pod_groups.get(key), arrived.get(key), diff.gone_ids, info):
            return None
    return out


def _rejob(
    state: SessionState,
    out: _Rebuilt,
    key: str,
    j: Job | None,
    minimums: dict[int, tuple[Resource, tuple[float, ...]]],
) -> JobInfo | None:
    """Replace the job of PodGroup ``key`` in ``out`` by one built for ``j`` (None: the PodGroup is
    gone, or dropped because its queue does not exist); returns the new job."""
    dropped = out.dropped
    if j is not None and j.queue not in state.queues:
        if key not in dropped:
            out.new_keys = True
        dropped[key] = queue_missing(j)
        j = None
    elif dropped:
        dropped.pop(key, None)
    old = state.jobs.get(key)
    if old is not None:
        out.removed.append(old)
    if j is None:
        if old is not None:
            del out.jobs[key]
        return None
    info = state._job_info(j, minimums)
    if old is None:
        out.new_keys = True
    out.jobs[key] = info
    out.added.append(info)
    return info


def _regroup(
    out: _Rebuilt,
    key: str,
    group: PodGroupPods | None,
    arriving: list[Task] | None,
    gone_ids: set[int],
    info: JobInfo | None,
) -> bool:
    """Queue the pods of PodGroup ``key`` for building: those of its previous ``group`` still in the
    snapshot, then the ``arriving`` ones; a group left without pods is removed. False when two of its
    pods share a uid."""
    if group is None:
        if arriving is None:
            return True
        raw = arriving
    else:
        raw = [pod for pod in group.raw if id(pod) not in gone_ids]
        raw.extend(arriving or ())
        if not raw:
            out.gone.extend(group.placed)
            del out.groups[key]
            return True
    if len(raw) > 1 and len({pod.uid for pod in raw}) != len(raw):
        return False  # the order of equal uids would depend on the snapshot's order
    rebuilt = out.groups[key] = PodGroupPods(raw, info)
    out.todo.append((rebuilt, group))
    return True


def _in_key_order(d: dict[str, _V]) -> dict[str, _V]:
    """``d`` with its keys in sorted order (``d`` itself when they already are)."""
    keys = list(d)
    if keys != sorted(keys):
        return {k: d[k] for k in sorted(keys)}
    return d


def _update_nodes(state: SessionState, gone: list[TaskInfo], placed: list[TaskInfo]) -> bool:
    """Take the ``gone`` TaskInfos off their nodes and put the newly ``placed`` ones on theirs (task
    lists in open order, the node table by the difference); False if a node's task list disagrees."""
    table = state.nodes
    lists = table.tasks
    for t in gone:
        d = lists[t.node]
        if d.get(t.uid) is not t:
            return False
        del d[t.uid]
    table.account(gone, [t.node for t in gone], -1)
    for i, items in group_by(placed, _NODE_OF).items():
        if not _insert_ordered(lists, i, items):
            return False
    table.account(placed, [t.node for t in placed], 1)
    return True


def _insert_ordered(lists: list[dict[str, TaskInfo]], i: int, items: list[TaskInfo]) -> bool:
    """Add ``items`` (in open order) to node ``i``'s task list where a fresh open would have put
    them; False if a uid is already there."""
    d = lists[i]
    for t in items:
        if t.uid in d:
            return False
    key = _node_order_key
    if d:
        # Few pods sort after the first new one (dict order is insertion order): take them out
        # and merge them back with the new ones; else put the whole list in order again.
        first = key(items[0])
        tail: list[TaskInfo] = []
        for t in reversed(d.values()):
            if key(t) < first:
                break
            if len(tail) == 4:
                lists[i] = {t.uid: t for t in sorted([*d.values(), *items], key=key)}
                return True
            tail.append(t)
        if tail:
            tail.reverse()
            for t in tail:
                del d[t.uid]
            merged: list[TaskInfo] = []
            k, n = 0, len(items)
            for t in tail:
                kt = key(t)
                while k < n and key(items[k]) < kt:
                    merged.append(items[k])
                    k += 1
                merged.append(t)
            merged.extend(items[k:])
            items = merged
    for t in items:
        d[t.uid] = t
    return True


#: The order of the pods in a node's task list after session open: ``(Task.job, uid)``.
_node_order_key: Callable[[TaskInfo], tuple[str, str]] = operator.attrgetter("task.job", "uid")
