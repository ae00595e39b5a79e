"""Per-node caches of a session: arrays of one value per node (feasible and idle-fit masks, node
scores), kept per key and brought up to date only at the nodes changed since they were last read.

Every change of a node's column appends the node's index to ``NodeTable.changes``; an entry
remembers how far into that log it is current. This is only correct for values that change at a
node only when that node's column changes (see "Node-selection caches" in docs/scheduler.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from scheduler.points import BoolArray, FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.nodes import NodeTable

__all__ = ["CACHE_ENTRIES", "REFRESH_LIMIT", "NodeCache"]

#: Above this many node changes since a cache was read, refresh it with one vector call.
REFRESH_LIMIT = 32
#: Most task shapes a node-selection cache keeps before it starts over.
CACHE_ENTRIES = 512

_A = TypeVar("_A", BoolArray, FloatArray)


class NodeCache:
    """Arrays of one value per node of ``table``, by key, for one session (at most ``entries``
    of them: past that the cache starts over; entries are recomputed on demand)."""

    __slots__ = ("_entries", "_limit", "_table")

    def __init__(self, table: NodeTable, entries: int = CACHE_ENTRIES) -> None:
        self._table = table
        self._limit = entries
        #: key -> [array, position in ``table.changes`` it is current up to, what it keeps alive].
        self._entries: dict[Any, list[Any]] = {}

    def get(
        self,
        key: Any,
        build: Callable[[], _A],
        at: Callable[[int], Any],
        some: Callable[[IntArray], Any] | None = None,
        keep: Any = None,
    ) -> _A:
        """The array cached under ``key`` (do not modify it), current for every node.

        ``build()`` computes it for all nodes (a new array the cache owns); ``at(i)`` the value
        at node ``i``, used for each node changed since the last read. After more than
        :data:`REFRESH_LIMIT` changes, ``some(nodes)`` computes the values at the distinct
        changed nodes in one vector call, or without ``some`` the array is built again whole.
        ``keep`` is held by the entry (e.g. the objects whose ``id()`` is part of ``key``, so
        the ids stay unique while the entry lives).
        """
        changes = self._table.changes
        end = len(changes)
        entries = self._entries
        entry = entries.get(key)
        if entry is None:
            if len(entries) >= self._limit:
                entries.clear()  # bounded memory; entries are recomputed on demand
            values = build()
            entries[key] = [values, end, keep]
            return values
        values, pos = entry[0], entry[1]
        if pos != end:
            if end - pos > REFRESH_LIMIT:
                if some is None:
                    values[:] = build()
                else:
                    dirty = np.unique(np.asarray(changes[pos:end], dtype=np.intp))
                    values[dirty] = some(dirty)
            else:
                for i in set(changes[pos:end]):
                    values[i] = at(i)
            entry[1] = end
        out: _A = values
        return out
