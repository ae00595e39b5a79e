"""The resource-strategy-fit plugin: per-resource scoring strategies, SRA and proportional reservation.

Volcano's ``pkg/scheduler/plugins/resource-strategy-fit``:

* **Score** (node order, when ``resourceStrategyFitWeight`` > 0; default 10, negative ⇒ 10): over the
  resources the pod requests, each configured in ``resources`` (``{name: {type: MostAllocated |
  LeastAllocated, weight}}``; an exact name, else the longest ``prefix*`` pattern; default cpu and
  memory, LeastAllocated, weight 1; a bad type ⇒ LeastAllocated, a weight ≤ 0 ⇒ 1; ``*`` and other
  patterns are dropped), ``weight x (used + request) / allocatable`` (MostAllocated) or ``weight x
  (allocatable - used - request) / allocatable`` (LeastAllocated), 0 for no allocatable; a resource
  that overflows makes the whole score 0. The weighted mean, x 100 x the plugin weight. A pod's
  annotations ``volcano.sh/resource-strategy-scoring-type`` and ``volcano.sh/resource-strategy-weight``
  (JSON ``{resource: weight}``) replace the configuration for it (an invalid or missing weight map ⇒ 0).
* **SRA** (``sra: {enable, resources, weight, resourceWeight}``): a node that lacks a resource the pod
  requests scores 0; else ``(1 - Σ weights of the SRA resources the node has / Σ weights) x 100 x
  weight`` (keeps scarce resources' nodes free for the pods that need them).
* **Proportional** (``proportional: {enable, resources, resourceProportion}``, a predicate,
  unresolvable): a pod requesting none of the listed resources must leave, per unit of each listed
  resource idle on the node, ``<res>.cpu`` cores and ``<res>.memory`` GB (10^9 bytes) of idle cpu and
  memory (Volcano's millicores and MB per milli-unit of the scalar resource).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import ArgSpec, NodeOrder, Plugin, Predicate
from scheduler.points import Filter, FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = [
    "ResourceStrategyFitPlugin",
    "ResourceStrategyFitState",
    "StrategyFit",
    "find_resource_config",
    "least_requested",
    "most_requested",
    "parse_fit",
    "parse_proportional",
    "parse_sra",
    "proportional_fits",
    "sra_score",
    "strategy_score",
]

MOST, LEAST = "MostAllocated", "LeastAllocated"
SCORING_TYPE = "volcano.sh/resource-strategy-scoring-type"
SCORING_WEIGHT = "volcano.sh/resource-strategy-weight"
DEFAULT_WEIGHT = 10


@dataclass(frozen=True)
class StrategyFit:
    """The plugin weight and the per-resource ``(type, weight)``."""

    weight: int
    resources: Mapping[str, tuple[str, int]]


def _valid_pattern(name: str) -> bool:
    if "*" not in name:
        return True
    return name != "*" and name.endswith("*") and name.count("*") == 1


def parse_fit(args: Mapping[str, Any]) -> StrategyFit:
    """Volcano's ``calculateWeight``."""
    weight = args.get("resourceStrategyFitWeight")
    if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
        weight = DEFAULT_WEIGHT
    raw = args.get("resources")
    if not isinstance(raw, Mapping) or not raw:
        raw = {"cpu": {"type": LEAST, "weight": 1}, "memory": {"type": LEAST, "weight": 1}}
    resources: dict[str, tuple[str, int]] = {}
    for name, cfg in raw.items():
        if not _valid_pattern(str(name)):
            continue
        cfg = cfg if isinstance(cfg, Mapping) else {}
        kind = cfg.get("type")
        w = cfg.get("weight")
        w = w if isinstance(w, int) and not isinstance(w, bool) and w > 0 else 1
        resources[str(name)] = (kind if kind in (MOST, LEAST) else LEAST, w)
    return StrategyFit(weight, resources)


def find_resource_config(name: str, resources: Mapping[str, tuple[str, int]]) -> tuple[str, int] | None:
    """Volcano's ``findResourceConfigWithPrefix``: an exact name, else the longest ``prefix*``."""
    if name in resources:
        return resources[name]
    best, found = "", None
    for key, cfg in resources.items():
        if "*" in key:
            prefix = key[:-1]
            if name.startswith(prefix) and len(prefix) > len(best):
                best, found = prefix, cfg
    return found


def most_requested(request: float, used: float, capacity: float, weight: int) -> float | None:
    """``weight x (used + request) / capacity``; None when it overflows (0 for no capacity)."""
    if weight == 0 or capacity == 0:
        return 0.0
    total = request + used
    return None if total > capacity else total * weight / capacity


def least_requested(request: float, used: float, capacity: float, weight: int) -> float | None:
    """``weight x (capacity - used - request) / capacity``; None when it overflows."""
    if weight == 0 or capacity == 0:
        return 0.0
    total = request + used
    return None if total > capacity else (capacity - total) * weight / capacity


def strategy_score(
    requests: Mapping[str, float],
    used: Mapping[str, float],
    allocatable: Mapping[str, float],
    fit: StrategyFit,
    annotations: Mapping[str, str],
) -> float:
    """Volcano's ``Score`` for one node (``requests``: the resources the pod requests, non-zero)."""
    pod_type = annotations.get(SCORING_TYPE, "")
    pod_weights: dict[str, int] = {}
    if pod_type:
        text = annotations.get(SCORING_WEIGHT, "")
        if not text:
            return 0.0
        try:
            loaded = json.loads(text)
        except ValueError:
            return 0.0
        if not isinstance(loaded, dict):
            return 0.0
        pod_weights = {str(k): int(v) for k, v in loaded.items() if isinstance(v, int)}
    score, weights = 0.0, 0
    for name, request in requests.items():
        if pod_type:
            if name not in pod_weights:
                continue
            kind, w = pod_type, pod_weights[name]
        else:
            cfg = find_resource_config(name, fit.resources)
            if cfg is None:
                continue
            kind, w = cfg
        fn = most_requested if kind == MOST else least_requested if kind == LEAST else None
        part = 0.0 if fn is None else fn(request, used.get(name, 0.0), allocatable.get(name, 0.0), w)
        if part is None:
            return 0.0
        score += part
        weights += w
    if weights > 0:
        score /= weights
    return score * 100.0 * fit.weight


def parse_sra(args: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    """Volcano's ``calculateSraWeight``: (weight, {resource: weight}); (0, {}) when not enabled."""
    cfg = args.get("sra")
    if not isinstance(cfg, Mapping) or not cfg.get("enable"):
        return 0, {}
    given = cfg.get("resourceWeight") if isinstance(cfg.get("resourceWeight"), Mapping) else {}
    assert isinstance(given, Mapping)
    resources: dict[str, int] = {}
    for name in str(cfg.get("resources") or "").split(","):
        name = name.strip()
        if not name:
            continue
        w = given.get(name, 1)
        resources[name] = w if isinstance(w, int) and w >= 0 else 1
    weight = cfg.get("weight", 0)
    return (weight if isinstance(weight, int) else 0), resources


def sra_score(
    requests: Sequence[str], allocatable: Mapping[str, float], weight: int, resources: Mapping[str, int]
) -> float:
    """Volcano's ``sraScore``: 0 if the node lacks a requested resource; else the share of the SRA
    resources' weight the node does *not* have, x 100 x weight."""
    if any(allocatable.get(name, 0.0) == 0 for name in requests):
        return 0.0
    total = sum(resources.values())
    score = float(sum(w for name, w in resources.items() if allocatable.get(name, 0.0) > 0))
    if total > 0:
        score = 1.0 - score / total
    return score * 100.0 * weight


def parse_proportional(args: Mapping[str, Any]) -> dict[str, tuple[float, float]] | None:
    """Volcano's ``calculateProportionalResources``: {resource: (cpu per unit, memory MB per unit)}."""
    cfg = args.get("proportional")
    if not isinstance(cfg, Mapping) or not cfg.get("enable"):
        return None
    rates = cfg.get("resourceProportion") if isinstance(cfg.get("resourceProportion"), Mapping) else {}
    assert isinstance(rates, Mapping)
    out: dict[str, tuple[float, float]] = {}
    for name in str(cfg.get("resources") or "").split(","):
        name = name.strip()
        if not name:
            continue
        cpu = float(rates.get(f"{name}.cpu", 1.0))
        mem = float(rates.get(f"{name}.memory", 1.0))
        out[name] = (cpu if cpu >= 0 else 1.0, mem if mem >= 0 else 1.0)
    return out


def proportional_fits(
    requests: Mapping[str, float], idle: Mapping[str, float], proportional: Mapping[str, tuple[float, float]]
) -> str:
    """Volcano's ``checkNodeResourceIsProportional``: "" if it passes, else the failure reason."""
    if any(requests.get(name, 0.0) > 0 for name in proportional):
        return ""
    for name, (cpu_rate, mem_rate) in proportional.items():
        if name in idle:
            value = idle[name] * 1000  # Volcano counts scalar resources in milli-units

            if (
                idle.get("cpu", 0.0) - requests.get("cpu", 0.0) < value * cpu_rate
                or idle.get("memory", 0.0) - requests.get("memory", 0.0) < value * mem_rate * 1000 * 1000
            ):
                return f"proportional of resource {name} check failed"
    return ""


def _check_resources(value: Any) -> str | None:
    for name, cfg in value.items():
        if not isinstance(cfg, Mapping):
            return f"resources.{name}: expected a mapping of type and weight"
    return None


class ResourceStrategyFitState(PluginState):
    """The plugin's cycle: the session's resource dimensions (names by index)."""

    def __init__(self, session: SessionHandle) -> None:
        super().__init__(session)
        self.dims: tuple[str, ...] = session.dims


class ResourceStrategyFitPlugin(Plugin, NodeOrder, Predicate):
    """Per-resource most/least-allocated scoring, SRA and proportional reservation (see the module)."""

    name = "resource-strategy-fit"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "resourceStrategyFitWeight": ArgSpec("int", DEFAULT_WEIGHT, "the strategy score's weight (negative: 10)"),
        "resources": ArgSpec(
            "map", None, "per resource: {type: MostAllocated|LeastAllocated, weight}", check=_check_resources
        ),
        "sra": ArgSpec("map", None, "{enable, resources, weight, resourceWeight}"),
        "proportional": ArgSpec("map", None, "{enable, resources, resourceProportion}"),
    }

    def __init__(self, args: Mapping[str, Any], hierarchy: bool = False) -> None:
        super().__init__(args, hierarchy)
        given = {k: v for k, v in self.args.items() if v is not None}
        self.fit = parse_fit(given)
        self.sra_weight, self.sra_resources = parse_sra(given)
        self.proportional = parse_proportional(given)

    def open(self, session: SessionHandle) -> ResourceStrategyFitState:
        """The session's resource dimensions."""
        return ResourceStrategyFitState(session)

    def _named(self, st: ResourceStrategyFitState, values: Sequence[float] | np.ndarray) -> dict[str, float]:
        return {d: float(values[i]) for i, d in enumerate(st.dims) if values[i]}

    def node_order(self, st: ResourceStrategyFitState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """The strategy score plus the SRA score of each node."""
        out = np.zeros(len(nodes), dtype=np.float64)
        if self.fit.weight <= 0 and self.sra_weight <= 0:
            return out
        table = st.session.nodes
        requests = {d: float(v) for d, v in zip(st.dims, task.req, strict=True) if v > 0}
        annotations = {SCORING_TYPE: task.task.scoring_type, SCORING_WEIGHT: task.task.scoring_weights}
        for k, i in enumerate(nodes.tolist()):
            alloc = self._named(st, table.alloc[:, i])
            score = 0.0
            if self.fit.weight > 0:
                score += strategy_score(requests, self._named(st, table.used[:, i]), alloc, self.fit, annotations)
            if self.sra_weight > 0:
                score += sra_score(list(requests), alloc, self.sra_weight, self.sra_resources)
            out[k] = score
        return out

    def predicate(self, st: ResourceStrategyFitState, task: TaskInfo) -> Sequence[Filter]:
        """The proportional check (when enabled), unresolvable."""
        if self.proportional is None:
            return []
        table = st.session.nodes
        requests = {d: float(v) for d, v in zip(st.dims, task.req, strict=True) if v > 0}
        reasons = []
        for i in range(len(table)):
            idle = {d: float(table.idle[j, i]) for j, d in enumerate(st.dims) if d in self.proportional or j < 2}
            reasons.append(proportional_fits(requests, idle, self.proportional))
        passed = np.array([not r for r in reasons], dtype=np.bool_)
        return [Filter(self.name, passed, "proportional check failed", True, reasons)]
