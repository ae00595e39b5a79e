"""The usage plugin: load-aware placement from the nodes' measured utilisation.

Volcano's ``pkg/scheduler/plugins/usage`` over ``Node.usage`` (cpu and memory percent per averaging period:
Volcano's ``NODE_METRICS_PERIOD``, ``10m``, which our ``metricsPeriod`` argument may change; the
``volcanoweb.io/node-usage`` annotation in manifests) measured at ``Node.usage_time``
(``volcanoweb.io/node-usage-time``). Metrics are *fresh* when they have a time no more than five minutes
before ``Snapshot.now`` (any time counts as fresh without a clock); stale or timeless metrics switch the
plugin off on that node (pass, score 0), as Volcano's.

* **predicate** (unresolvable): a node whose cpu usage is above ``thresholds.cpu`` (default 80) fails
  with ``the CPU load of the node exceeds the upper limit.``, else one whose memory usage is above
  ``thresholds.mem`` (80) with ``the memory load of the node exceeds the upper limit.``
* **node order**: ``((1 - U_cpu)·cpu.weight + (1 - U_mem)·memory.weight) / (cpu.weight + memory.weight)
  * 100 * usage.weight`` (defaults 1, 1, 5), where ``U_r`` is the composite utilisation, clamped to
  [0, 1]: the measured percent of the node's allocatable plus the *shadow* estimate of the pods the
  metrics cannot see yet, over the allocatable.
* **shadow estimates** (Volcano's ``ShadowLoadCache``): at open, every pod on a node that is Allocated,
  Binding or Bound, or Running and started less than the metrics interval (30 s, Volcano's default
  ``metrics.interval``) before the clock (or with no known start), and every pod placed in the session
  (``on_allocate``; taken back by ``on_deallocate``), adds ``request * estimator.request_ratio`` (0.7)
  times the node's risk factor (see below for the limit); a BestEffort pod adds ``estimator.be_cpu`` (250m)
  and ``estimator.be_mem`` (200Mi) times it. The risk factor is ``estimator.risk_factor`` (1.2) once the
  node's composite load (cpu and memory composites weighted by cpu.weight and memory.weight) reaches
  ``estimator.risk_threshold`` (0.6), else 1.

  A pod's estimate adds ``(limit - request) * estimator.burst_ratio`` (0) for its cpu and memory limits
  (``Task.limits``; none: the request), and is clamped to the limit. Each pod's estimate is kept as it was
  added (:class:`ShadowLoad`, Volcano's per-pod snapshot), so taking it back subtracts exactly that.

Differences: a Running pod's start is its ``PodScheduled`` time; the capacity is the node's allocatable;
out-of-range values keep the default as in Volcano (negative weights, thresholds outside 0-100, ratios
outside 0-1, a risk factor below 1), while wrongly typed ones are configuration errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import AllocateHandler, ArgSpec, NodeOrder, Plugin, Predicate
from scheduler.model import TaskStatus
from scheduler.points import BoolArray, Filter, FloatArray, IntArray
from scheduler.quantity import QuantityError, parse_cpu, parse_memory

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = [
    "ShadowLoad",
    "UsagePlugin",
    "UsageState",
    "composite",
    "estimate_best_effort",
    "estimate_pod",
    "load_composite",
    "node_score",
    "risk_factor",
    "shadow_tracked",
]

CPU_REASON = "the CPU load of the node exceeds the upper limit."
MEMORY_REASON = "the memory load of the node exceeds the upper limit."
METRICS_ACTIVE = 300.0
METRICS_INTERVAL = 30.0
_SHADOW = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND})
_THRESHOLDS = {"cpu": 80.0, "mem": 80.0}
_ESTIMATOR = {"request_ratio": 0.7, "burst_ratio": 0.0, "risk_threshold": 0.6, "risk_factor": 1.2}
_BEST_EFFORT = {"be_cpu": 250.0, "be_mem": float(200 * 1024 * 1024)}


def _check_thresholds(value: Any) -> str | None:
    for key, v in value.items():
        if key not in _THRESHOLDS:
            return f"unknown key {key!r} (known: cpu, mem)"
        if isinstance(v, bool) or not isinstance(v, int):
            return f"{key}: expected an integer percent, got {v!r}"
    return None


def _check_estimator(value: Any) -> str | None:
    for key, v in value.items():
        if key in _ESTIMATOR:
            if isinstance(v, bool) or not isinstance(v, int | float):
                return f"{key}: expected a number, got {v!r}"
        elif key in _BEST_EFFORT:
            if isinstance(v, bool) or not isinstance(v, int | str):
                return f"{key}: expected a quantity or an integer, got {v!r}"
        else:
            return f"unknown key {key!r} (known: {', '.join([*_ESTIMATOR, *_BEST_EFFORT])})"
    return None


def _best_effort(key: str, value: Any, default: float) -> float:
    """``be_cpu`` (millicores; an integer counts millicores) or ``be_mem`` (bytes; an integer counts Mi);
    a negative or unparsable value keeps the default, as Volcano's."""
    if isinstance(value, int):
        if value < 0:
            return default
        return float(value) if key == "be_cpu" else float(value) * 1024 * 1024
    if isinstance(value, str):
        try:
            amount = parse_cpu(value) if key == "be_cpu" else parse_memory(value)
        except QuantityError:
            return default
        return default if amount < 0 else float(amount)
    return default


def load_composite(cpu: float, mem: float, cpu_weight: int, mem_weight: int) -> float:
    """Volcano's ``CalcLoadCompositePercentage``: the cpu and memory composites (0-1) weighted by the
    plugin's cpu and memory weights (0 when both weights are 0)."""
    total = cpu_weight + mem_weight
    if total == 0:
        return 0.0
    return (cpu * cpu_weight + mem * mem_weight) / total


def risk_factor(load: float, threshold: float, factor: float) -> float:
    """Volcano's ``CalcAppliedRiskFactor``: ``factor`` once ``load`` reaches ``threshold`` (factors below
    1 never apply)."""
    if factor < 1.0:
        return 1.0
    return factor if load >= threshold else 1.0


def estimate_pod(request: float, limit: float, request_ratio: float, burst_ratio: float, risk: float) -> float:
    """Volcano's ``EstimatePodResource``: ``(request·request_ratio + (limit - request)·burst_ratio) · risk``
    clamped to [0, limit] (a missing or smaller limit is the request)."""
    request = max(request, 0.0)
    limit = request if limit <= 0 or limit < request else limit
    estimate = (request * request_ratio + (limit - request) * burst_ratio) * risk
    return min(max(estimate, 0.0), limit)


def estimate_best_effort(configured: float, risk: float) -> float:
    """Volcano's ``EstimateBestEffortResource``: the configured amount (a negative one counts 0) times the
    risk factor."""
    return max(configured, 0.0) * risk


def composite(percent: float, shadow: float, capacity: float) -> float:
    """Volcano's ``CalcCompositeUtilization``: measured plus shadow load over the capacity, in [0, 1]."""
    if capacity <= 0:
        return 0.0
    return min(max((percent / 100.0 * capacity + shadow) / capacity, 0.0), 1.0)


def node_score(cpu: float, mem: float, cpu_weight: int, mem_weight: int, usage_weight: int) -> float:
    """Volcano's ``CalcNodeScore`` over composite utilisations in [0, 1]."""
    total = cpu_weight + mem_weight
    if total == 0:
        return 0.0
    return ((1.0 - cpu) * cpu_weight + (1.0 - mem) * mem_weight) / total * 100.0 * usage_weight


def shadow_tracked(status: TaskStatus, started: float, now: float | None, interval: float = METRICS_INTERVAL) -> bool:
    """Volcano's ``shouldAddToShadowCache`` for a pod on a node: Allocated, Binding, Bound, or Running
    without a known start (``started`` 0) or started less than ``interval`` before ``now``."""
    if status in _SHADOW:
        return True
    if status != TaskStatus.RUNNING:
        return False
    if started <= 0:
        return True
    return now is not None and now - started < interval


class ShadowLoad:
    """Volcano's ``ShadowLoadCache`` over node positions: each node's estimated cpu (millicores) and memory
    (bytes) of the pods its metrics cannot see yet, and each pod's estimate as it was added, so that taking
    the pod back subtracts exactly that (adding a pod again first takes back its earlier estimate)."""

    def __init__(self, nodes: int) -> None:
        self.load = np.zeros((2, nodes), dtype=np.float64)
        self.pods: dict[str, tuple[int, float, float]] = {}

    def add(self, node: int, uid: str, cpu: float, mem: float) -> None:
        """Add a pod's estimate on ``node`` (``AddEstimate``)."""
        self.sub(uid)
        self.pods[uid] = (node, cpu, mem)
        self.load[0, node] += cpu
        self.load[1, node] += mem

    def sub(self, uid: str) -> None:
        """Take back the estimate the pod was added with, no node going below 0 (``SubEstimateBySnapshot``;
        nothing for a pod never added)."""
        held = self.pods.pop(uid, None)
        if held is not None:
            node, cpu, mem = held
            self.load[0, node] = max(self.load[0, node] - cpu, 0.0)
            self.load[1, node] = max(self.load[1, node] - mem, 0.0)

    def node(self, node: int) -> tuple[float, float]:
        """The node's estimated (cpu, memory) (``GetNodeEst``)."""
        return float(self.load[0, node]), float(self.load[1, node])

    def pod(self, uid: str) -> tuple[int, float, float] | None:
        """The (node, cpu, memory) the pod was added with (``GetSnapshot``; None: not held)."""
        return self.pods.get(uid)

    def reset(self) -> None:
        """Forget every estimate (``Reset``)."""
        self.load[:] = 0.0
        self.pods.clear()

    def is_clean(self) -> bool:
        """No estimate held (``IsClean``)."""
        return not self.pods and not self.load.any()


def _weight(value: Any, default: int) -> int:
    return default if not isinstance(value, int) or value < 0 else value


class UsageState(PluginState):
    """The usage plugin's cycle: its arguments as read (weights, thresholds, estimator, best-effort amounts,
    averaging period), each node's metrics (fresh or not, cpu and memory percent, cpu and memory capacity),
    the shadow load of the pods the metrics cannot see yet, and the threshold filter."""

    fresh: BoolArray
    cpu: FloatArray
    mem: FloatArray
    capacity: FloatArray
    shadow: ShadowLoad
    filters: list[Filter]

    def __init__(self, session: SessionHandle, args: Mapping[str, Any]) -> None:
        super().__init__(session)
        self.usage_weight = _weight(args["usage.weight"], 5)
        self.cpu_weight = _weight(args["cpu.weight"], 1)
        self.mem_weight = _weight(args["memory.weight"], 1)
        self.thresholds = dict(_THRESHOLDS)
        for key, v in (args.get("thresholds") or {}).items():
            if 0 <= v <= 100:
                self.thresholds[key] = float(v)
        est = dict(args.get("estimator") or {})
        self.estimator = dict(_ESTIMATOR)
        for key in ("request_ratio", "burst_ratio", "risk_threshold"):
            if key in est and 0 <= est[key] <= 1:
                self.estimator[key] = float(est[key])
        if "risk_factor" in est and est["risk_factor"] >= 1:
            self.estimator["risk_factor"] = float(est["risk_factor"])
        self.best_effort = {k: _best_effort(k, est.get(k), d) for k, d in _BEST_EFFORT.items()}
        self.period = str(args["metricsPeriod"] or "")


class UsagePlugin(Plugin, Predicate, NodeOrder, AllocateHandler):
    """Load-aware filtering and scoring (see the module docstring)."""

    name = "usage"
    node_local_filters = True
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "usage.weight": ArgSpec("int", 5, "the plugin's weight in the node order (negative: 5)"),
        "cpu.weight": ArgSpec("int", 1, "cpu's weight in the score (negative: 1)"),
        "memory.weight": ArgSpec("int", 1, "memory's weight in the score (negative: 1)"),
        "thresholds": ArgSpec("map", None, "{cpu: percent, mem: percent} (80, 80)", check=_check_thresholds),
        "estimator": ArgSpec("map", None, "shadow load estimator parameters", check=_check_estimator),
        "metricsPeriod": ArgSpec("str", "10m", "the averaging period read from Node.usage (Volcano's fixed 10m)"),
    }

    def open(self, session: SessionHandle) -> UsageState:
        """The arguments, each node's metrics, the shadow load of the pods already on the nodes and the filter."""
        st = UsageState(session, self.args)
        table = session.nodes
        now = session.snapshot.now
        st.fresh = np.array([self._fresh(st, n.usage_time, now) for n in table.nodes], dtype=np.bool_)
        st.cpu = np.array([n.usage.get(st.period, {}).get("cpu", 0.0) for n in table.nodes], dtype=np.float64)
        st.mem = np.array([n.usage.get(st.period, {}).get("memory", 0.0) for n in table.nodes], dtype=np.float64)
        st.capacity = table.alloc[:2].astype(np.float64)
        st.shadow = ShadowLoad(len(table))
        for i in range(len(table)):
            for t in list(table.tasks[i].values()):
                if shadow_tracked(t.status, t.task.scheduled_at, now):
                    self._add(st, t, i)
        st.filters = self._build_filters(st)
        return st

    def _fresh(self, st: UsageState, measured: float | None, now: float | None) -> bool:
        if not st.period or measured is None:
            return False
        return now is None or now - measured <= METRICS_ACTIVE

    def _build_filters(self, st: UsageState) -> list[Filter]:
        over_cpu = st.fresh & (st.cpu > st.thresholds["cpu"])
        over_mem = st.fresh & ~over_cpu & (st.mem > st.thresholds["mem"])
        reasons = [CPU_REASON if c else MEMORY_REASON if m else "" for c, m in zip(over_cpu, over_mem, strict=True)]
        return [Filter(self.name, ~(over_cpu | over_mem), CPU_REASON, True, reasons)]

    def _composites(self, st: UsageState, i: int) -> tuple[float, float]:
        shadow_cpu, shadow_mem = st.shadow.node(i)
        cpu = composite(float(st.cpu[i]), shadow_cpu, float(st.capacity[0, i]))
        mem = composite(float(st.mem[i]), shadow_mem, float(st.capacity[1, i]))
        return cpu, mem

    def _add(self, st: UsageState, t: TaskInfo, i: int) -> None:
        cpu, mem = self._composites(st, i)
        load = load_composite(cpu, mem, st.cpu_weight, st.mem_weight)
        risk = risk_factor(load, st.estimator["risk_threshold"], st.estimator["risk_factor"])
        if t.best_effort:
            est_cpu = estimate_best_effort(st.best_effort["be_cpu"], risk)
            est_mem = estimate_best_effort(st.best_effort["be_mem"], risk)
        else:
            ratio, burst = st.estimator["request_ratio"], st.estimator["burst_ratio"]
            limits = t.task.limits
            est_cpu = estimate_pod(float(t.req[0]), float(limits.cpu), ratio, burst, risk)
            est_mem = estimate_pod(float(t.req[1]), float(limits.memory), ratio, burst, risk)
        st.shadow.add(i, t.uid, est_cpu, est_mem)

    def predicate(self, st: UsageState, task: TaskInfo) -> Sequence[Filter]:
        """Nodes with fresh metrics above a threshold fail."""
        return st.filters

    def node_order(self, st: UsageState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """The composite-utilisation score of each node with fresh metrics (0 elsewhere)."""
        out = np.zeros(len(nodes), dtype=np.float64)
        for k, i in enumerate(nodes):
            if st.fresh[i]:
                cpu, mem = self._composites(st, int(i))
                out[k] = node_score(cpu, mem, st.cpu_weight, st.mem_weight, st.usage_weight)
        return out

    def on_allocate(self, st: UsageState, task: TaskInfo) -> None:
        if task.node >= 0:
            self._add(st, task, task.node)

    def on_deallocate(self, st: UsageState, task: TaskInfo) -> None:
        st.shadow.sub(task.uid)
