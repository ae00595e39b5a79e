"""PriorityQueue: a binary heap ordered by a ``less`` callback (Volcano's util.PriorityQueue)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "less", "seq")

    def __init__(self, item: T, less: Callable[[T, T], bool], seq: int) -> None:
        self.item = item
        self.less = less
        self.seq = seq

    def __lt__(self, other: _Entry[T]) -> bool:
        # ``less`` is a total order (every fallback ends with a uid), so one call suffices.
        return self.less(self.item, other.item)


class PriorityQueue(Generic[T]):
    """Pop returns the item that ``less`` ranks first. Like Volcano's, the order is evaluated at
    push/pop time: priorities that change while an item is queued are not re-heaped.

    With ``key`` (a function whose tuples sort exactly as ``less`` orders, see
    ``Session.job_key``), entries are ``(key(item), seq, item)`` tuples compared in C. That is
    only equivalent when a queued item's key cannot change while it is queued, which is how the
    actions use it (a job is popped before its tasks change and pushed back after).
    """

    __slots__ = ("_heap", "_key", "_less", "_seq")

    def __init__(
        self, less: Callable[[T, T], bool], items: Iterable[T] = (), key: Callable[[T], Any] | None = None
    ) -> None:
        self._less = less
        self._key = key
        self._seq = 0
        self._heap: list[Any] = []
        if key is None:
            for item in items:
                self._heap.append(_Entry(item, less, self._seq))
                self._seq += 1
        else:
            for item in items:
                self._heap.append((key(item), self._seq, item))
                self._seq += 1
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        """Add ``item``."""
        if self._key is None:
            heapq.heappush(self._heap, _Entry(item, self._less, self._seq))
        else:
            heapq.heappush(self._heap, (self._key(item), self._seq, item))
        self._seq += 1

    def pop(self) -> T:
        """Remove and return the first item."""
        entry = heapq.heappop(self._heap)
        if self._key is None:
            item: T = entry.item
            return item
        out: T = entry[2]
        return out

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def items(self) -> list[T]:
        """The queued items, in no particular order (a copy: a clone of the queue is built from it)."""
        if self._key is None:
            return [e.item for e in self._heap]
        return [e[2] for e in self._heap]
