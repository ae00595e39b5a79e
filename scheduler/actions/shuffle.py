"""The shuffle action: evict the running pods the plugins name (Volcano's ``pkg/scheduler/actions/shuffle``).

Every Running pod of the session's jobs is offered to ``victim_tasks`` (Volcano's ``ssn.VictimTasks``:
the union of a tier's plugins, the first tier with any victim deciding); each victim is evicted
(reason ``shuffle``). Used with plugins that want pods moved: ``tdm`` (pods on revocable nodes whose
window closed) and Volcano's ``rescheduling``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.framework import Action
from scheduler.model import TaskStatus
from scheduler.statement import Statement

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = ["ShuffleAction"]


class ShuffleAction(Action):
    """Evicts the victim tasks of the plugins."""

    name = "shuffle"

    def execute(self, session: SessionHandle) -> None:
        """Offer every Running pod, evict the victims."""
        running = [t for job in session.jobs.values() for t in job.tasks.values() if t.status == TaskStatus.RUNNING]
        victims = session.victim_tasks(running)
        if not victims:
            return
        stmt = Statement(session, self.name)
        for victim in victims:
            if victim.status == TaskStatus.RUNNING:
                stmt.evict(victim, self.name)
        stmt.commit()
