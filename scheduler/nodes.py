"""NodeTable: per-session node state as numpy columns (one column per node, one row per resource)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scheduler.info import TaskInfo
from scheduler.model import Node, TaskStatus

__all__ = ["NodeTable"]

IntMatrix = npt.NDArray[np.int64]
IntArray = npt.NDArray[np.int64]


class NodeTable:
    """Session nodes sorted by name, with resource matrices of shape (dims, nodes).

    ``used`` is Σ requests of tasks on the node except Pipelined ones (Releasing included);
    ``releasing`` and ``pipelined`` as in Volcano; ``idle = allocatable - used`` and
    ``future = idle + releasing - pipelined`` are kept current. ``pod_count`` counts every task
    on the node; ``nz_requested`` holds Kubernetes' non-zero cpu/memory requests used by scoring.
    """

    def __init__(self, nodes: Sequence[Node], dims: tuple[str, ...]) -> None:
        self.nodes = sorted(nodes, key=lambda n: n.name)
        self.names = [n.name for n in self.nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.dims = dims
        n, r = len(self.nodes), len(dims)
        alloc = np.zeros((r, n), dtype=np.int64)
        for i, node in enumerate(self.nodes):
            a = node.allocatable
            alloc[0, i] = a.cpu
            alloc[1, i] = a.memory
            alloc[2, i] = a.pods
            for d, name in enumerate(dims[3:], start=3):
                alloc[d, i] = a.scalars.get(name, 0)
        self.alloc: IntMatrix = alloc
        self.used: IntMatrix = np.zeros((r, n), dtype=np.int64)
        self.releasing: IntMatrix = np.zeros((r, n), dtype=np.int64)
        self.pipelined: IntMatrix = np.zeros((r, n), dtype=np.int64)
        self.idle: IntMatrix = alloc.copy()
        self.future: IntMatrix = alloc.copy()
        self.pod_count: IntArray = np.zeros(n, dtype=np.int64)
        self.nz_requested: IntMatrix = np.zeros((2, n), dtype=np.int64)
        self.tasks: list[dict[str, TaskInfo]] = [{} for _ in range(n)]
        #: Index of the node of every change, in order (caches remember how far they have read).
        self.changes: list[int] = []

    def __len__(self) -> int:
        return len(self.names)

    def add(self, t: TaskInfo, i: int) -> None:
        """Account task ``t`` (in its current status) on node ``i``."""
        self._apply(t, i, 1)
        self.tasks[i][t.uid] = t
        t.node = i

    def add_bulk(self, tasks: Sequence[TaskInfo], nodes: Sequence[int]) -> None:
        """Account many tasks at once (session open): the same state as :meth:`add` for each, in
        order, with column sums computed by ``bincount`` (exact for integer resources below 2**53)."""
        for t, i in zip(tasks, nodes, strict=True):
            self.tasks[i][t.uid] = t
            t.node = i
        self.account(tasks, nodes, 1)

    def account(self, tasks: Sequence[TaskInfo], nodes: Sequence[int], sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) the columns' share of ``tasks`` on ``nodes`` in their
        current status, without touching the node task lists. Integer sums, so the columns are
        exactly those of accounting the remaining tasks one by one."""
        if not tasks:
            return
        n, r = len(self.names), len(self.dims)
        idx = np.asarray(nodes, dtype=np.intp)
        req = np.array([t.req for t in tasks], dtype=np.float64).reshape(len(tasks), r).astype(np.int64)
        status = [t.status for t in tasks]
        pip = np.fromiter((s == TaskStatus.PIPELINED for s in status), dtype=np.bool_, count=len(tasks))
        rel = np.fromiter((s == TaskStatus.RELEASING for s in status), dtype=np.bool_, count=len(tasks))

        def column_sums(rows: npt.NDArray[np.bool_] | None, values: IntMatrix) -> IntMatrix:
            out = np.zeros((values.shape[1], n), dtype=np.int64)
            ix = idx if rows is None else idx[rows]
            vals = values if rows is None else values[rows]
            if len(ix) == 0:
                return out
            for d in range(values.shape[1]):
                col = vals[:, d]
                if col.any():
                    out[d] = np.bincount(ix, weights=col.astype(np.float64), minlength=n).astype(np.int64)
            return out

        if sign > 0:
            self.used += column_sums(~pip, req)
            if rel.any():
                self.releasing += column_sums(rel, req)
            if pip.any():
                self.pipelined += column_sums(pip, req)
            self.pod_count += np.bincount(idx, minlength=n).astype(np.int64)
        else:
            self.used -= column_sums(~pip, req)
            if rel.any():
                self.releasing -= column_sums(rel, req)
            if pip.any():
                self.pipelined -= column_sums(pip, req)
            self.pod_count -= np.bincount(idx, minlength=n).astype(np.int64)
        np.subtract(self.alloc, self.used, out=self.idle)
        np.add(self.idle, self.releasing, out=self.future)
        self.future -= self.pipelined
        nz = np.array([t.nz for t in tasks], dtype=np.float64).astype(np.int64)
        if sign > 0:
            self.nz_requested += column_sums(None, nz)
        else:
            self.nz_requested -= column_sums(None, nz)

    def remove(self, t: TaskInfo) -> None:
        """Remove task ``t`` (in its current status) from its node."""
        i = t.node
        self._apply(t, i, -1)
        del self.tasks[i][t.uid]
        t.node = -1

    def _apply(self, t: TaskInfo, i: int, sign: int) -> None:
        # Integer columns updated element by element: the same values as recomputing
        # ``idle = alloc - used`` and ``future = idle + releasing - pipelined`` for the column.
        status = t.status
        used, idle, future = self.used, self.idle, self.future
        if status == TaskStatus.PIPELINED:
            pipelined = self.pipelined
            for d, v in enumerate(t.req):
                if v:
                    iv = int(v) * sign
                    pipelined[d, i] += iv
                    future[d, i] -= iv
        elif status == TaskStatus.RELEASING:
            releasing = self.releasing
            for d, v in enumerate(t.req):
                if v:
                    iv = int(v) * sign
                    used[d, i] += iv
                    releasing[d, i] += iv
                    idle[d, i] -= iv
        else:
            for d, v in enumerate(t.req):
                if v:
                    iv = int(v) * sign
                    used[d, i] += iv
                    idle[d, i] -= iv
                    future[d, i] -= iv
        self.pod_count[i] += sign
        nz = self.nz_requested
        nz[0, i] += int(t.nz[0]) * sign
        nz[1, i] += int(t.nz[1]) * sign
        self.changes.append(i)

    def future_of(self, i: int) -> list[float]:
        """Return node ``i``'s future idle vector."""
        return [float(x) for x in self.future[:, i]]
