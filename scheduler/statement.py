"""Statement: a transaction of allocate / pipeline / evict operations, committed or discarded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.model import TaskStatus
from scheduler.result import Eviction

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = ["Statement"]

_ALLOCATE, _PIPELINE, _EVICT = "allocate", "pipeline", "evict"


class Statement:
    """Records operations applied to the session so they can be committed or rolled back.

    ``evict`` marks a task Releasing (its resources count as releasing on the node);
    ``pipeline`` places a task on a node whose resources are still being released;
    ``allocate`` places a task on idle resources. ``commit`` turns evictions into
    :class:`Eviction` records and sends allocations for binding; ``discard`` undoes everything
    in reverse order.
    """

    __slots__ = ("_ops", "action", "session")

    def __init__(self, session: SessionHandle, action: str) -> None:
        self.session = session
        self.action = action
        self._ops: list[tuple[str, TaskInfo, TaskStatus, str, TaskInfo | None]] = []

    def __len__(self) -> int:
        return len(self._ops)

    def has_evictions(self) -> bool:
        """Return whether the statement evicts any pod."""
        return any(op[0] == _EVICT for op in self._ops)

    def allocate(self, task: TaskInfo, node: int) -> None:
        """Allocate ``task`` on ``node`` (session only until commit)."""
        self.session.place(task, node, TaskStatus.ALLOCATED)
        self._ops.append((_ALLOCATE, task, TaskStatus.PENDING, "", None))

    def pipeline(self, task: TaskInfo, node: int) -> None:
        """Pipeline ``task`` on ``node``."""
        self.session.place(task, node, TaskStatus.PIPELINED)
        self._ops.append((_PIPELINE, task, TaskStatus.PENDING, "", None))

    def evict(self, task: TaskInfo, reason: str, preemptor: TaskInfo | None = None) -> None:
        """Evict ``task`` (session only until commit)."""
        old = self.session.evict(task)
        self._ops.append((_EVICT, task, old, reason, preemptor))

    def placements(self) -> list[tuple[bool, TaskInfo, int]]:
        """The tasks the statement placed, each ``(allocated, task, node)`` (False: pipelined), while applied:
        :meth:`replay` places them again once the statement is discarded (Volcano's ``SaveOperations``)."""
        return [(op == _ALLOCATE, task, task.node) for op, task, *_ in self._ops if op != _EVICT]

    def replay(self, placements: list[tuple[bool, TaskInfo, int]]) -> None:
        """Place tasks as :meth:`placements` recorded them (Volcano's ``RecoverOperations``)."""
        for allocated, task, node in placements:
            if allocated:
                self.allocate(task, node)
            else:
                self.pipeline(task, node)

    def merge(self, other: Statement) -> None:
        """Move ``other``'s operations into this statement."""
        self._ops.extend(other._ops)
        other._ops = []

    def commit(self) -> None:
        """Make the operations real: evictions recorded, allocations dispatched for binding."""
        ssn = self.session
        for op, task, _old, reason, preemptor in self._ops:
            if op == _EVICT:
                ssn.evictions.append(
                    Eviction(
                        task.key,
                        task.uid,
                        ssn.nodes.names[task.node],
                        self.action,
                        reason,
                        preemptor.key if preemptor is not None else "",
                    )
                )
            elif op == _ALLOCATE and task.status == TaskStatus.ALLOCATED:
                ssn.dispatch(task)
        self._ops = []

    def discard(self) -> None:
        """Undo every operation in reverse order."""
        ssn = self.session
        for op, task, old, _reason, _preemptor in reversed(self._ops):
            if op == _EVICT:
                ssn.unevict(task, old)
            else:
                ssn.unplace(task)
        self._ops = []
