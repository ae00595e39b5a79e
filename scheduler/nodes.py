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
        self.generation = 0

    def __len__(self) -> int:
        return len(self.names)

    def add(self, t: TaskInfo, i: int) -> None:
        """Account task ``t`` (in its current status) on node ``i``."""
        self._apply(t, i, 1)
        self.tasks[i][t.uid] = t
        t.node = i

    def remove(self, t: TaskInfo) -> None:
        """Remove task ``t`` (in its current status) from its node."""
        i = t.node
        self._apply(t, i, -1)
        del self.tasks[i][t.uid]
        t.node = -1

    def _apply(self, t: TaskInfo, i: int, sign: int) -> None:
        status = t.status
        req = t.req
        target: tuple[IntMatrix, ...]
        if status == TaskStatus.PIPELINED:
            target = (self.pipelined,)
        elif status == TaskStatus.RELEASING:
            target = (self.used, self.releasing)
        else:
            target = (self.used,)
        for d, v in enumerate(req):
            if v:
                iv = int(v) * sign
                for m in target:
                    m[d, i] += iv
        col_used = self.used[:, i]
        self.idle[:, i] = self.alloc[:, i] - col_used
        self.future[:, i] = self.idle[:, i] + self.releasing[:, i] - self.pipelined[:, i]
        self.pod_count[i] += sign
        self.nz_requested[0, i] += int(t.nz[0]) * sign
        self.nz_requested[1, i] += int(t.nz[1]) * sign
        self.generation += 1

    def idle_of(self, i: int) -> list[float]:
        """Return node ``i``'s idle vector."""
        return [float(x) for x in self.idle[:, i]]

    def future_of(self, i: int) -> list[float]:
        """Return node ``i``'s future idle vector."""
        return [float(x) for x in self.future[:, i]]
