"""The snapshot's memo between cycles (ADR 0018): an unchanged row gives back the very object built from it.

A cycle reads the ``(id, resource_version)`` pairs of the PodGroups and pods it needs and the full rows only
of the new and changed ids (the change log gives every change of a row, whoever writes it, a new revision:
ADR 0029). A row read again whose object comes out equal to the memo's (a write of
a field the snapshot does not use, such as the scheduler's own conditions) keeps the memo's object: the
same object is what the core's session cache and the insights recorder take as unchanged.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from typing import Any

from scheduler import Task
from scheduler.decode import VOLCANO_SCHEDULERS
from volcanoweb.scheduling.converters import pod_usage, task_from_row

#: How :meth:`Memo.rows` reads full rows: ``fetch(ids)`` those ids, ``fetch(None)`` the whole query.
Fetch = Callable[[list[int] | None], Iterable[dict[str, Any]]]
#: :meth:`Memo.rows` reads changed rows by id in chunks of this many, or with the whole query when more
#: than this many and more than half of the rows changed (the first snapshot of a process, a mass change).
FETCH_CHUNK = 500
FETCH_ALL_ABOVE = 2000


def _fetch_rows(fetch: Fetch, ids: Iterable[int], total: int) -> dict[int, dict[str, Any]]:
    """Read the full rows of ``ids`` with ``fetch`` (in chunks, or the whole query when most rows are wanted)."""
    wanted = list(ids)
    if not wanted:
        return {}
    if len(wanted) > FETCH_ALL_ABOVE and len(wanted) * 2 > total:
        return {r["id"]: r for r in fetch(None)}
    out: dict[int, dict[str, Any]] = {}
    for start in range(0, len(wanted), FETCH_CHUNK):
        out.update((r["id"], r) for r in fetch(wanted[start : start + FETCH_CHUNK]))
    return out


class _Rows:
    """Objects built from the rows of one query, kept by row id with the ``resource_version`` they were built from.

    :meth:`refresh` takes the query's ``(id, resource_version)`` pairs and reads the full rows (JSON columns
    decoded) of the new and changed ids only; the ids no longer in the pairs are forgotten.
    """

    def __init__(self) -> None:
        self.entries: dict[int, tuple[int, Any]] = {}
        self.order: list[int] = []

    def refresh(self, versions: dict[int, int], fetch: Fetch, build: Callable[[dict[str, Any]], Any]) -> int:
        """Bring the entries to ``versions``; return how many rows were read in full."""
        entries = self.entries
        gone = entries.keys() - versions.keys()
        for pk in gone:
            del entries[pk]
        stale = [pk for pk, v in versions.items() if (e := entries.get(pk)) is None or e[0] != v]
        fresh = _fetch_rows(fetch, stale, len(versions))
        for pk in stale:
            row = fresh.get(pk)
            if row is None:
                entries.pop(pk, None)  # deleted (or out of the query) since the versions were read
            else:
                built = build(row)
                e = entries.get(pk)
                if e is not None and e[1] == built:
                    built = e[1]  # a write that left what the snapshot uses alone: keep the very object
                entries[pk] = (row["resource_version"], built)
        if gone or stale:
            self.order = sorted(entries)
        return len(stale)


class _PodEntry:
    """What the snapshot keeps of one Pod row: its version, the task built from it and what that depended on."""

    __slots__ = ("group_key", "inputs", "key", "task", "usage", "version")

    def __init__(
        self,
        version: int,
        key: str,
        group_key: str,
        inputs: tuple[str, bool],
        task: Task | None,
        usage: tuple[str, dict[str, int]] | None,
    ) -> None:
        self.version, self.key, self.group_key = version, key, group_key
        self.inputs, self.task, self.usage = inputs, task, usage


class _Pods:
    """The snapshot's pods, kept between cycles by row id (see :class:`Memo`).

    A pod's task depends on its row and on two things outside it: whether its PodGroup is in the
    snapshot (the task's ``job``) and whether a bind intent is recorded for it (Binding). A change of
    either also rebuilds the task, from a fresh read of the row.
    """

    def __init__(self) -> None:
        self.entries: dict[int, _PodEntry] = {}
        self.order: list[int] = []
        self.by_key: dict[str, int] = {}
        self.by_group: dict[str, set[int]] = {}
        self.groups: set[str] = set()
        self.binding: set[str] = set()

    def _drop(self, pk: int) -> None:
        entry = self.entries.pop(pk, None)
        if entry is None:
            return
        if self.by_key.get(entry.key) == pk:
            del self.by_key[entry.key]
        if entry.group_key:
            members = self.by_group.get(entry.group_key)
            if members is not None:
                members.discard(pk)
                if not members:
                    del self.by_group[entry.group_key]

    def _put(self, row: dict[str, Any], groups: set[str], binding: set[str]) -> None:
        pk = row["id"]
        key = f"{row['namespace']}/{row['name']}"
        group_key = f"{row['namespace']}/{row['group_name']}" if row["group_name"] else ""
        managed = row["scheduler_name"] in VOLCANO_SCHEDULERS and group_key in groups
        inputs = (group_key if managed else "", key in binding)
        old = self.entries.get(pk)
        if old is not None and old.version == row["resource_version"] and old.inputs == inputs:
            return  # read again for nothing: an input toggled that this pod's task does not use
        self._drop(pk)
        task = task_from_row(row, *inputs) if managed or row["node_name"] else None
        if old is not None and task is not None and task == old.task:
            task = old.task  # a write that left what the task uses alone (a condition): keep the very object
        self.entries[pk] = _PodEntry(row["resource_version"], key, group_key, inputs, task, pod_usage(row))
        self.by_key[key] = pk
        if group_key:
            self.by_group.setdefault(group_key, set()).add(pk)

    def refresh(self, versions: dict[int, int], groups: set[str], binding: set[str], fetch: Fetch) -> int:
        """Bring the pods to ``versions`` with the snapshot's PodGroup keys and bind intents; return rows read."""
        entries = self.entries
        gone = entries.keys() - versions.keys()
        for pk in gone:
            self._drop(pk)
        stale = {pk for pk, v in versions.items() if (e := entries.get(pk)) is None or e.version != v}
        for group in groups ^ self.groups:
            stale.update(self.by_group.get(group, ()))
        for key in binding ^ self.binding:
            bound = self.by_key.get(key)
            if bound is not None:
                stale.add(bound)
        self.groups, self.binding = groups, binding
        fresh = _fetch_rows(fetch, sorted(stale), len(versions))
        for pk in stale:
            row = fresh.get(pk)
            if row is None:
                self._drop(pk)  # deleted (or out of the query) since the versions were read
            else:
                self._put(row, groups, binding)
        if gone or stale:
            self.order = sorted(entries)
        return len(stale)


class Memo:
    """The core's objects built by the last snapshot, by row: an unchanged row gives back the *same* object.

    The scheduler's :class:`~scheduler.SessionCache` reuses a session's opened state for the nodes,
    queues and priority classes that are the same objects as in the previous cycle, and updates it only
    for the PodGroups whose job or task objects changed; building every object anew from the rows would
    make every cycle open a session over every pod. Not thread-safe: one per scheduling loop.

    The large row sets are read incrementally: PodGroups and pods by ``resource_version``, the change log's
    last revision of the row, which every change moves (ADR 0029): a snapshot reads the cheap
    ``(id, resource_version)`` pairs and the full rows (JSON columns decoded) only of the ids that are new or
    whose version moved; nodes by the text of their JSON columns, decoded only when it changed.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, Any], tuple[Any, Any]] = {}
        self._next: dict[tuple[str, Any], tuple[Any, Any]] = {}
        self.podgroups = _Rows()
        self.pods = _Pods()
        #: Rows the last snapshot read in full, per kind (what it could not take from the memo).
        self.fetched: dict[str, int] = {}

    def get(self, kind: str, key: Any, row: Any, build: Any) -> Any:
        """Return the object built from ``row`` (compared by value with the last cycle's row of that key)."""
        last = self._last.get((kind, key))
        if last is not None and last[0] == row:
            self._next[(kind, key)] = last
            return last[1]
        obj = build()
        self._next[(kind, key)] = (row, obj)
        return obj

    def done(self) -> None:
        """End a snapshot: forget the rows it did not see."""
        self._last, self._next = self._next, {}

    def reset(self) -> None:
        """Forget everything (after a snapshot that failed half-way): the next one reads every row.

        Also gives the objects the loop froze after its cycles (``cycles._Freezer``) back to the
        garbage collector: the memo's objects are what was frozen, and they are dropped here."""
        self._last, self._next = {}, {}
        self.podgroups, self.pods = _Rows(), _Pods()
        gc.unfreeze()
