"""The binpack plugin: prefers fuller nodes (vectorised over the session's node table)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import ArgSpec, NodeOrder, SharedState
from scheduler.points import FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = ["BinpackPlugin", "BinpackState"]


def _nonneg(weight: Any) -> float:
    """Binpack resets negative weights to 1."""
    return float(weight) if weight >= 0 else 1.0


class BinpackState(PluginState):
    """Binpack's cycle: its weight and the weight of each resource dimension it scores."""

    def __init__(self, session: SessionHandle, weight: float, weights: dict[int, float]) -> None:
        super().__init__(session)
        self.weight = weight
        self.weights = weights


class BinpackPlugin(SharedState, NodeOrder):
    """Prefers fuller nodes: Σ weight x (used + request) / allocatable over requested
    resources, normalised to 0-100 and times ``binpack.weight``."""

    name = "binpack"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "binpack.weight": ArgSpec("int", 1),
        "binpack.cpu": ArgSpec("int", 1),
        "binpack.memory": ArgSpec("int", 1),
        "binpack.resources": ArgSpec("str", ""),
    }
    argument_prefixes: ClassVar[Mapping[str, ArgSpec]] = {"binpack.resources.": ArgSpec("int", 1)}

    def open(self, session: SessionHandle) -> BinpackState:
        """The weights, with the dimensions of ``binpack.resources`` this cluster has."""
        weights: dict[int, float] = {
            0: _nonneg(self.args["binpack.cpu"]),
            1: _nonneg(self.args["binpack.memory"]),
        }
        names = [n.strip() for n in str(self.args["binpack.resources"]).split(",") if n.strip()]
        for name in names:
            w = self.args.get(f"binpack.resources.{name}", 1)
            d = session.dim_index.get(name)
            if d is not None:
                weights[d] = _nonneg(w)
        return BinpackState(session, float(self.args["binpack.weight"]), weights)

    def node_score_key(self, st: BinpackState, task: TaskInfo) -> Any:
        """The score of a node depends only on the task's requests and the node's column."""
        return task.req

    def local_scores(self, st: BinpackState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """All of binpack's score is per node."""
        return self.node_order(st, task, nodes)

    def local_score_at(self, st: BinpackState, task: TaskInfo, node: int) -> float:
        """:meth:`node_order` of one node with the same IEEE operations in scalar Python."""
        if not st.weight:
            return 0.0
        table = st.session.nodes
        score = 0.0
        overflow = False
        weight_sum = 0.0
        for d, request in enumerate(task.req):
            if request <= 0 or d not in st.weights:
                continue
            w = st.weights[d]
            alloc = float(int(table.alloc[d, node]))
            used = float(int(table.used[d, node])) + request
            if w:
                rs = used * w / alloc if alloc > 0 else 0.0
                overflow = overflow or (alloc > 0 and used > alloc)
                score += rs
            weight_sum += w
        if weight_sum > 0:
            score /= weight_sum
        if overflow:
            score = 0.0
        return score * 100.0 * st.weight

    def node_order(self, st: BinpackState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """Binpack score of each of ``nodes`` (0 where the task would not fit)."""
        if not st.weight:
            return np.zeros(len(nodes), dtype=np.float64)
        table = st.session.nodes
        score = np.zeros(len(nodes), dtype=np.float64)
        overflow = np.zeros(len(nodes), dtype=np.bool_)
        weight_sum = 0.0
        for d, request in enumerate(task.req):
            if request <= 0 or d not in st.weights:
                continue
            w = st.weights[d]
            alloc = table.alloc[d, nodes].astype(np.float64)
            used = table.used[d, nodes] + request
            if w:
                with np.errstate(divide="ignore", invalid="ignore"):
                    rs = np.where(alloc > 0, used * w / alloc, 0.0)
                overflow |= (alloc > 0) & (used > alloc)
                score += rs
            weight_sum += w
        if weight_sum > 0:
            score /= weight_sum
        score = np.where(overflow, 0.0, score)
        return score * 100.0 * st.weight
