"""The policy objects around pods, as values: PriorityClasses, namespace ResourceQuotas and
PodDisruptionBudgets (what the priority, resourcequota and pdb plugins read from the snapshot)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.model import NodeSelectorRequirement

if TYPE_CHECKING:
    from scheduler.model import Task

__all__ = ["PodDisruptionBudget", "PriorityClass", "ResourceQuota"]


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """A namespace ``v1`` ResourceQuota: ``hard`` limits and ``used`` amounts (scheduler units),
    keyed by the quota's resource names (``cpu``, ``memory``, ``nvidia.com/gpu``, ...)."""

    name: str
    namespace: str
    hard: Mapping[str, int] = field(default_factory=dict)
    used: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """A ``policy/v1`` PodDisruptionBudget as the pdb plugin reads it: the selector, the
    controller-kept ``status.disruptionsAllowed`` and the names of ``status.disruptedPods``.

    ``match_labels`` None means no selector; a missing or empty selector selects no pod here
    (Volcano's pdb plugin skips a PDB whose selector is empty).
    """

    name: str
    namespace: str
    match_labels: tuple[tuple[str, str], ...] | None = None
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()

    def selects(self, pod: Task) -> bool:
        """Return whether this PDB covers ``pod`` (same namespace, non-empty selector matching)."""
        if pod.namespace != self.namespace or self.match_labels is None:
            return False
        if not self.match_labels and not self.match_expressions:
            return False
        labels = pod.labels
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.match_expressions
        )


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A ``scheduling.k8s.io/v1`` PriorityClass."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
