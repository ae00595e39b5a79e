"""The pdb plugin: victims of preempt and reclaim are kept within PodDisruptionBudgets.

As Volcano's ``pdb`` plugin: for each call, every PDB starts from its ``status.disruptionsAllowed``
(the disruption controller's figure; evictions earlier in the session do not lower it); the
candidates are taken in the order given; a candidate **without labels is never a victim** (Volcano
skips such pods before looking at any PDB, with or without PDBs in the cluster); one covered by a
PDB (same namespace, non-empty selector matching its labels, not already listed in
``status.disruptedPods``) uses one allowed disruption of each such PDB; a candidate that takes a
PDB below zero is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from scheduler.cycle_state import PluginState
from scheduler.framework import Plugin, Preemptable, Reclaimable, VictimTasks

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo
    from scheduler.policies import PodDisruptionBudget

__all__ = ["PdbPlugin", "PdbState"]


class PdbState(PluginState):
    """Pdb's cycle: the snapshot's PodDisruptionBudgets."""

    def __init__(self, session: SessionHandle, pdbs: tuple[PodDisruptionBudget, ...]) -> None:
        super().__init__(session)
        self.pdbs = pdbs


class PdbPlugin(Plugin, Preemptable, Reclaimable, VictimTasks):
    """Keeps preempt / reclaim victims within PodDisruptionBudgets (``Snapshot.pod_disruption_budgets``)."""

    name = "pdb"

    def open(self, session: SessionHandle) -> PdbState:
        """The snapshot's PodDisruptionBudgets."""
        return PdbState(session, session.snapshot.pod_disruption_budgets)

    def victims(self, st: PdbState, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Return the candidates whose eviction keeps every PDB at or above zero (in order)."""
        pdbs = st.pdbs
        allowed = [p.disruptions_allowed for p in pdbs]
        out = []
        for c in candidates:
            pod = c.task
            if not pod.labels:
                continue  # as Volcano: a pod without labels is left out of the victims
            violated = False
            for i, pdb in enumerate(pdbs):
                if not pdb.selects(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
            if not violated:
                out.append(c)
        return out

    def preemptable(self, st: PdbState, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """The candidates within the PDBs."""
        return self.victims(st, candidates)

    def reclaimable(self, st: PdbState, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """As preemptable."""
        return self.victims(st, candidates)

    def victim_tasks(self, st: PdbState, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Volcano registers the same filter as a victim-tasks function (the shuffle action's): the
        offered pods within the PDBs."""
        return self.victims(st, list(tasks))
