"""The rescheduling plugin: evict running pods from hot nodes so they land on cool ones (with ``shuffle``).

Volcano's ``pkg/scheduler/plugins/rescheduling`` and its one strategy, ``lowNodeUtilization``, over the
nodes' measured utilisation (``Node.usage`` for the ``metricsPeriod``, default ``5m``: cpu and memory in
percent). A node is *low* when it is schedulable and every configured ``thresholds`` resource is below
its threshold, *high* when some resource is above its ``targetThresholds`` value. Nothing is evicted
when no node is low, every node is, or none is high. Otherwise the room the low nodes have up to their
targets is summed (cpu millicores and memory bytes); the high nodes, hottest first (cpu + memory
percent), give their pods in order (lower priority first, a BestEffort pod before the others) while the
node is still at or above a target and no room is exactly used up (Volcano's check: a room gone
negative does not stop it): each victim takes its request off the room and off the node's
utilisation. Victims are the running pods offered (``victim_tasks``).

Defaults (Volcano's): thresholds and targets 100 % for cpu, memory and pods. Volcano runs the strategies
once per ``interval`` (a process-wide timer); the core keeps nothing between cycles, so ``interval`` is
checked and every session with the plugin may evict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from scheduler.cycle_state import PluginState
from scheduler.framework import ArgSpec, Plugin, VictimTasks
from scheduler.quantity import duration_problem

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = ["LowNodeUtilization", "ReschedulingPlugin", "ReschedulingState"]

_DEFAULT = {"cpu": 100.0, "memory": 100.0, "pods": 100.0}


class LowNodeUtilization:
    """The strategy's parameters (Volcano's ``LowNodeUtilizationConf``)."""

    def __init__(self, params: Mapping[str, Any] | None) -> None:
        self.thresholds = dict(_DEFAULT)
        self.targets = dict(_DEFAULT)
        params = params or {}
        for key, into in (("thresholds", self.thresholds), ("targetThresholds", self.targets)):
            given = params.get(key)
            if isinstance(given, Mapping):
                # As Volcano: cpu, memory and "pod" (not "pods") are read.
                for name in ("cpu", "memory", "pod"):
                    if isinstance(given.get(name), int | float):
                        into[name] = float(given[name])


class ReschedulingState(PluginState):
    """The rescheduling plugin's cycle: its lowNodeUtilization strategies and the utilisation period it reads."""

    def __init__(self, session: SessionHandle, lnu: list[LowNodeUtilization], period: str) -> None:
        super().__init__(session)
        self.lnu = lnu
        self.period = period


def _check_strategies(value: Any) -> str | None:
    if not isinstance(value, list):
        return "expected a list of {name, params}"
    for i, s in enumerate(value):
        if not isinstance(s, Mapping) or not isinstance(s.get("name"), str):
            return f"strategies[{i}]: expected {{name, params}}"
    return None


class ReschedulingPlugin(Plugin, VictimTasks):
    """Victims of the lowNodeUtilization strategy (see the module docstring)."""

    name = "rescheduling"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "interval": ArgSpec(
            "str", "5m", "how often Volcano runs the strategies; no effect here", check=duration_problem
        ),
        "metricsPeriod": ArgSpec("str", "5m", "the utilisation average read from Node.usage"),
        "strategies": ArgSpec("any", None, "[{name: lowNodeUtilization, params: {...}}]", check=_check_strategies),
    }

    def open(self, session: SessionHandle) -> ReschedulingState:
        """The configured lowNodeUtilization strategies (one with the defaults when none is) and the period."""
        raw = self.args.get("strategies")
        strategies: list[Mapping[str, Any]] = raw if isinstance(raw, list) and raw else [{"name": "lowNodeUtilization"}]
        lnu = []
        for s in strategies:
            params = s.get("params")
            if s.get("name") == "lowNodeUtilization":
                lnu.append(LowNodeUtilization(params if isinstance(params, Mapping) else None))
        return ReschedulingState(session, lnu, str(self.args["metricsPeriod"] or "5m"))

    def victim_tasks(self, st: ReschedulingState, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """The union of the configured lowNodeUtilization strategies' victims."""
        out: dict[str, TaskInfo] = {}
        for conf in st.lnu:
            for t in self._low_node_utilization(st, conf, tasks):
                out[t.uid] = t
        return list(out.values())

    def _low_node_utilization(
        self, st: ReschedulingState, conf: LowNodeUtilization, tasks: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        table = st.session.nodes
        util = []
        for i, node in enumerate(table.nodes):
            measured = node.usage.get(st.period, {})
            util.append({"cpu": measured.get("cpu", 0.0), "memory": measured.get("memory", 0.0), "_i": float(i)})
        low = [
            u
            for u, n in zip(util, table.nodes, strict=True)
            if not n.unschedulable and all(u[r] < conf.thresholds[r] for r in ("cpu", "memory") if r in conf.thresholds)
        ]
        low_ids = {int(u["_i"]) for u in low}
        high = [
            u
            for u in util
            if int(u["_i"]) not in low_ids
            and any(u[r] > conf.targets[r] for r in ("cpu", "memory") if r in conf.targets)
        ]
        if not low or len(low) == len(util) or not high:
            return []
        cap = {"cpu": 0, "memory": 1}
        room = {"cpu": 0.0, "memory": 0.0}
        for u in low:
            i = int(u["_i"])
            for r, d in cap.items():
                room[r] += (conf.targets[r] - u[r]) * float(table.alloc[d, i]) * 0.01
        offered = {t.uid for t in tasks}
        victims: list[TaskInfo] = []
        for u in sorted(high, key=lambda u: -(u["cpu"] + u["memory"])):
            i = int(u["_i"])
            pods = sorted(table.tasks[i].values(), key=lambda t: (t.priority, not t.best_effort, t.uid))
            for t in pods:
                hot = any(u[r] >= conf.targets[r] for r in ("cpu", "memory"))
                if not hot or any(room[r] == 0 for r in room):
                    break
                if t.uid not in offered:
                    continue
                for r, d in cap.items():
                    room[r] -= t.req[d]
                    alloc = float(table.alloc[d, i])
                    if alloc > 0:
                        u[r] -= t.req[d] * 100.0 / alloc
                victims.append(t)
        return victims
