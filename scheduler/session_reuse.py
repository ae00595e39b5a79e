"""Incremental updates of a kept session state (``SessionCache``): bring the opened state of the
last cycle, rolled back by the cache's journal, to a snapshot in which only PodGroups and pods
changed, at a cost of O(changed pods and PodGroups) instead of a fresh open."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from scheduler.info import JobInfo, TaskInfo
from scheduler.model import Job, Resource
from scheduler.session_state import PodGroupPods, SessionState, count_names, group_by, group_tasks, queue_missing

if TYPE_CHECKING:
    from scheduler.snapshot import Snapshot

__all__ = ["update_state"]

_NODE_OF = operator.attrgetter("node")


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
    old_snap = state.snapshot
    if not state._updatable:
        return False
    if abs(len(snapshot.tasks) - len(old_snap.tasks)) > limit * len(snapshot.tasks) or abs(
        len(snapshot.jobs) - len(old_snap.jobs)
    ) > limit * len(snapshot.jobs):
        return False  # at least that many were added or removed (see below)
    old_pods = state._pods_by_id
    if old_pods is None:
        old_pods = dict(zip(map(id, old_snap.tasks), old_snap.tasks, strict=True))
        if len(old_pods) != len(old_snap.tasks):
            return False
    new_pods = dict(zip(map(id, snapshot.tasks), snapshot.tasks, strict=True))
    if len(new_pods) != len(snapshot.tasks):
        return False
    gone_ids = old_pods.keys() - new_pods.keys()
    added_t = [new_pods[i] for i in new_pods.keys() - old_pods.keys()]
    removed_t = [old_pods[i] for i in gone_ids]
    old_pgs = dict(zip(map(id, old_snap.jobs), old_snap.jobs, strict=True))
    new_pgs = dict(zip(map(id, snapshot.jobs), snapshot.jobs, strict=True))
    if len(new_pgs) != len(snapshot.jobs):
        return False
    added_j = [new_pgs[i] for i in new_pgs.keys() - old_pgs.keys()]
    removed_j = [old_pgs[i] for i in old_pgs.keys() - new_pgs.keys()]
    if len(added_t) + len(removed_t) > limit * len(snapshot.tasks) or len(added_j) + len(removed_j) > limit * len(
        snapshot.jobs
    ):
        return False  # much of it changed: opening afresh is cheaper

    uses = dict(state._scalar_uses)
    for delta, pods in ((1, added_t), (-1, removed_t)):
        for pod in pods:
            if pod.requests.scalars:
                count_names(uses, pod.requests.scalars, delta)
    for delta, pgs in ((1, added_j), (-1, removed_j)):
        for pg in pgs:
            if pg.min_resources is not None and pg.min_resources.scalars:
                count_names(uses, pg.min_resources.scalars, delta)
    if ("cpu", "memory", "pods", *sorted(state._node_scalars | uses.keys())) != state.dims:
        return False
    if state._job_by_key is None:
        state._job_by_key = {pg.key: pg for pg in old_snap.jobs}
        if len(state._job_by_key) != len(old_snap.jobs):
            return False  # two PodGroups with one key
    by_key = dict(state._job_by_key)
    for pg in removed_j:
        if by_key.get(pg.key) is not pg:
            return False
        del by_key[pg.key]
    for pg in added_j:
        if pg.key in by_key:
            return False
        by_key[pg.key] = pg

    changed = {pod.job for pod in added_t}
    changed.update(pod.job for pod in removed_t)
    changed.update(pg.key for pg in added_j)
    changed.update(pg.key for pg in removed_j)
    arrived = group_tasks(added_t)
    old_jobs, old_groups, queues = state.jobs, state._pod_groups, state.queues
    jobs = dict(old_jobs)
    groups = dict(old_groups)
    dropped = dict(state.dropped)
    removed: list[JobInfo] = []
    added: list[JobInfo] = []
    gone: list[TaskInfo] = []
    vectors: dict[int, tuple[tuple[float, ...], tuple[bool, tuple[float, float]]]] = {}
    minimums: dict[int, tuple[Resource, tuple[float, ...]]] = {}
    new_keys = False
    todo: list[tuple[PodGroupPods, PodGroupPods | None]] = []
    for key in sorted(changed):
        j: Job | None = by_key.get(key)
        if j is not None and j.queue not in queues:
            if key not in dropped:
                new_keys = True
            dropped[key] = queue_missing(j)
            j = None
        elif dropped:
            dropped.pop(key, None)
        old = old_jobs.get(key)
        if old is not None:
            removed.append(old)
        if j is not None:
            info = state._job_info(j, minimums)
            if old is None:
                new_keys = True
            jobs[key] = info
            added.append(info)
        else:
            info = None
            if old is not None:
                del jobs[key]
        group = old_groups.get(key)
        if group is None:
            raw = arrived.get(key)
            if raw is None:
                continue
        else:
            raw = [pod for pod in group.raw if id(pod) not in gone_ids]
            raw.extend(arrived.get(key, ()))
            if not raw:
                gone.extend(group.placed)
                del groups[key]
                continue
        if len(raw) > 1 and len({pod.uid for pod in raw}) != len(raw):
            return False  # the order of equal uids would depend on the snapshot's order
        rebuilt = groups[key] = PodGroupPods(raw, info)
        todo.append((rebuilt, group))
    placed = state._build_groups(todo, vectors)
    for rebuilt, group in todo:
        if group is not None and group.placed:
            kept = {id(t) for t in rebuilt.placed}
            gone.extend(t for t in group.placed if id(t) not in kept)
    if new_keys:
        # Keys not seen before were appended: put the dicts in key order again if needed.
        keys = list(jobs)
        if keys != sorted(keys):
            jobs = {k: jobs[k] for k in sorted(keys)}
        keys = list(dropped)
        if keys != sorted(keys):
            dropped = {k: dropped[k] for k in sorted(keys)}

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
    state.snapshot = snapshot
    state.jobs = jobs
    state.dropped = dropped
    state._pod_groups = groups
    state._job_by_key = by_key
    state._scalar_uses = uses
    state._pods_by_id = new_pods
    state._tasks = None
    state._changed_jobs = (removed, added)
    totals = state._open_totals
    if totals is not None:
        for job in removed:
            state._add_to_queues(totals, job.queue, job.allocated, -1.0)
        for job in added:
            state._add_to_queues(totals, job.queue, job.allocated, 1.0)
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
