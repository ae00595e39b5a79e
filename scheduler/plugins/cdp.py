"""The cdp plugin (cooldown protection): preemptible pods are not evicted too soon after they start.

Volcano's ``pkg/scheduler/plugins/cdp``: a candidate victim whose ``volcano.sh/cooldown-time`` (label,
else annotation; a Go duration, an invalid one is ignored) is set, that is Running and whose
``PodScheduled`` condition turned true less than that long ago, is left out of the preemptable and
reclaimable victims; every other candidate stays. The core reads no clock: "now" is
``Snapshot.now``; without it a protected pod's cooldown cannot have run out, so it is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.cycle_state import PluginState
from scheduler.framework import Plugin, Preemptable, Reclaimable
from scheduler.model import TaskStatus

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = ["CdpPlugin", "CdpState"]


class CdpState(PluginState):
    """cdp's cycle: the snapshot's clock ("now"; None: none)."""

    def __init__(self, session: SessionHandle, now: float | None) -> None:
        super().__init__(session)
        self.now = now


class CdpPlugin(Plugin, Preemptable, Reclaimable):
    """Leaves pods inside their cooldown time out of eviction (see the module docstring)."""

    name = "cdp"

    def open(self, session: SessionHandle) -> CdpState:
        """The snapshot's clock."""
        return CdpState(session, session.snapshot.now)

    def protected(self, st: CdpState, victim: TaskInfo) -> bool:
        """Whether ``victim`` is Running and still inside its cooldown time."""
        pod = victim.task
        if pod.cooldown is None or pod.status != TaskStatus.RUNNING or not pod.scheduled_at:
            return False
        return st.now is None or pod.scheduled_at + pod.cooldown > st.now

    def preemptable(self, st: CdpState, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """The candidates not inside their cooldown time."""
        return [c for c in candidates if not self.protected(st, c)]

    def reclaimable(self, st: CdpState, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """As preemptable."""
        return [c for c in candidates if not self.protected(st, c)]
