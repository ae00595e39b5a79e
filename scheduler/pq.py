"""A binary-heap priority queue ordered by a "less" callback (Volcano's PriorityQueue)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

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
    push/pop time: priorities that change while an item is queued are not re-heaped."""

    __slots__ = ("_heap", "_less", "_seq")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._seq = 0
        self._heap: list[_Entry[T]] = []
        for item in items:
            self._heap.append(_Entry(item, less, self._seq))
            self._seq += 1
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        """Add ``item``."""
        heapq.heappush(self._heap, _Entry(item, self._less, self._seq))
        self._seq += 1

    def pop(self) -> T:
        """Remove and return the first item."""
        return heapq.heappop(self._heap).item

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
