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

from scheduler.framework import ArgSpec, JobEnqueueable, JobOrder, JobPipelined, SharedOpenState
from scheduler.points import Vote
from scheduler.quantity import SLA_ANNOTATION, parse_duration

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo

__all__ = ["SLA_ANNOTATION", "SlaPlugin"]


def _check_waiting_time(value: Any) -> str | None:
    try:
        seconds = parse_duration(str(value))
    except ValueError as exc:
        return str(exc)
    return None if seconds > 0 else f"must be a positive duration, got {value!r}"


class SlaPlugin(SharedOpenState, JobOrder, JobEnqueueable, JobPipelined):
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

    def on_session_open(self, session: SessionHandle) -> None:
        self.session = session
        raw = self.args.get("sla-waiting-time")
        self.default_wait: float | None = parse_duration(raw) if raw else None
        self.now = session.snapshot.now

    def restore_open_state(self, session: SessionHandle, state: Any) -> None:
        """Shared, as :class:`SharedOpenState`, but the clock is per snapshot."""
        super().restore_open_state(session, state)
        self.now = session.snapshot.now

    def _wait(self, job: JobInfo) -> float | None:
        own = job.job.sla_waiting_time
        return own if own is not None else self.default_wait

    def job_order_key(self, job: JobInfo) -> tuple[int, float]:
        """Jobs with a waiting time first, by deadline (creation + waiting time)."""
        wait = self._wait(job)
        if wait is None:
            return (1, 0.0)
        return (0, job.job.created_at + wait)

    def job_order(self, a: JobInfo, b: JobInfo) -> int:
        """Earlier SLA deadline first; jobs without a waiting time last."""
        ka, kb = self.job_order_key(a), self.job_order_key(b)
        return (ka > kb) - (ka < kb)

    def _permit(self, job: JobInfo) -> Vote:
        wait = self._wait(job)
        if wait is None or self.now is None or math.isnan(self.now):
            return Vote.ABSTAIN
        return Vote.PERMIT if self.now - job.job.created_at >= wait else Vote.ABSTAIN

    def job_enqueueable(self, job: JobInfo) -> Vote:
        """PERMIT once the job waited at least its SLA, else ABSTAIN."""
        return self._permit(job)

    def job_pipelined(self, job: JobInfo) -> Vote:
        """As :meth:`job_enqueueable`."""
        return self._permit(job)
