"""The sla plugin: a PodGroup that waited longer than its SLA is admitted and pipelined first.

Volcano's ``sla`` plugin. The waiting time comes from the PodGroup's ``sla-waiting-time``
annotation, else the plugin's ``sla-waiting-time`` argument (Go duration syntax, e.g.
``1h2m3s``). Job order: jobs with a waiting time first, earliest ``creation + waiting time``
first. ``job_enqueueable`` / ``job_pipelined``: PERMIT once ``now - creation >= waiting time``,
else (or without a waiting time) ABSTAIN. ``now`` is :attr:`Snapshot.now`, given by the caller
(the core reads no clock); without it no job has waited long enough.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from scheduler.cycle_state import PluginState
from scheduler.framework import ArgSpec, JobEnqueueable, JobOrder, JobPipelined, SharedState, restore_shared
from scheduler.points import Vote
from scheduler.quantity import SLA_ANNOTATION, parse_duration

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo

__all__ = ["SLA_ANNOTATION", "SlaPlugin", "SlaState"]


def _check_waiting_time(value: Any) -> str | None:
    try:
        seconds = parse_duration(str(value))
    except ValueError as exc:
        return str(exc)
    return None if seconds > 0 else f"must be a positive duration, got {value!r}"


class SlaState(PluginState):
    """Sla's cycle: the default waiting time (seconds, None without one) and the snapshot's clock."""

    def __init__(self, session: SessionHandle, default_wait: float | None) -> None:
        super().__init__(session)
        self.default_wait = default_wait
        self.now: float | None = session.snapshot.now


class SlaPlugin(SharedState, JobOrder, JobEnqueueable, JobPipelined):
    """Job order by SLA deadline; permits enqueueing and pipelining of jobs past their SLA."""

    name = "sla"
    arguments = {
        "sla-waiting-time": ArgSpec(
            "str",
            None,
            "default waiting time of every job (Go duration)",
            _check_waiting_time,
            lenient="no default waiting time",
        )
    }
    has_job_order_key = True
    failures_repeatable = True

    def open(self, session: SessionHandle) -> SlaState:
        """The default waiting time and the snapshot's clock."""
        raw = self.args.get("sla-waiting-time")
        return SlaState(session, parse_duration(raw) if raw else None)

    def restore_state(self, session: SessionHandle, saved: Any) -> SlaState:
        """Shared, as :class:`SharedState`, but the clock is per snapshot."""
        st: SlaState = restore_shared(session, saved)
        st.now = session.snapshot.now
        return st

    def _wait(self, st: SlaState, job: JobInfo) -> float | None:
        own = job.job.sla_waiting_time
        return own if own is not None else st.default_wait

    def job_order_key(self, st: SlaState, job: JobInfo) -> tuple[int, float]:
        """Jobs with a waiting time first, by deadline (creation + waiting time)."""
        wait = self._wait(st, job)
        if wait is None:
            return (1, 0.0)
        return (0, job.job.created_at + wait)

    def job_order(self, st: SlaState, a: JobInfo, b: JobInfo) -> int:
        """Earlier SLA deadline first; jobs without a waiting time last."""
        ka, kb = self.job_order_key(st, a), self.job_order_key(st, b)
        return (ka > kb) - (ka < kb)

    def _permit(self, st: SlaState, job: JobInfo) -> Vote:
        wait = self._wait(st, job)
        if wait is None or st.now is None or math.isnan(st.now):
            return Vote.ABSTAIN
        return Vote.PERMIT if st.now - job.job.created_at >= wait else Vote.ABSTAIN

    def job_enqueueable(self, st: SlaState, job: JobInfo) -> Vote:
        """PERMIT once the job waited at least its SLA, else ABSTAIN."""
        return self._permit(st, job)

    def job_pipelined(self, st: SlaState, job: JobInfo) -> Vote:
        """As :meth:`job_enqueueable`."""
        return self._permit(st, job)
