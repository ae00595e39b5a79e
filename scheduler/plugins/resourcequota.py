"""The resourcequota plugin: a PodGroup is admitted only within its namespace's ResourceQuotas.

Volcano's ``resourcequota`` plugin. ``job_enqueueable``: a job without ``minResources``, or in a
namespace without quotas, is PERMITted; otherwise, for every quota of the namespace, the job's
``minResources`` on the resource names the quota limits, added to the quota's ``used`` and to
what this session already admitted in the namespace, must stay ≤ ``hard`` (else REJECT, with a
reason). ``job_enqueued`` adds the admitted job's ``minResources`` to its namespace's pending use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from scheduler.cycle_state import PluginState
from scheduler.framework import JobEnqueueable, JobEnqueued, Plugin
from scheduler.points import Vote
from scheduler.policies import ResourceQuota
from scheduler.quantity import format_quantity
from scheduler.result import JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo

__all__ = ["ResourceQuotaPlugin", "ResourceQuotaState"]


def _fmt(amounts: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {format_quantity(k, v)}" for k, v in sorted(amounts.items())) + "}"


class ResourceQuotaState(PluginState):
    """Resourcequota's cycle: the ResourceQuotas by namespace, and what this session admitted in each
    namespace (resource name -> amount)."""

    def __init__(self, session: SessionHandle, quotas: dict[str, list[ResourceQuota]]) -> None:
        super().__init__(session)
        self.quotas = quotas
        self.pending: dict[str, dict[str, int]] = {}


class ResourceQuotaPlugin(Plugin, JobEnqueueable, JobEnqueued):
    """Admission within namespace ResourceQuotas (hard - used - admitted this session)."""

    name = "resourcequota"

    def open(self, session: SessionHandle) -> ResourceQuotaState:
        """The snapshot's ResourceQuotas by namespace, nothing admitted yet."""
        quotas: dict[str, list[ResourceQuota]] = {}
        for q in session.snapshot.resource_quotas:
            quotas.setdefault(q.namespace, []).append(q)
        return ResourceQuotaState(session, quotas)

    def job_enqueueable(self, st: ResourceQuotaState, job: JobInfo) -> Vote:
        """PERMIT within every quota of the job's namespace, else REJECT."""
        mres = job.job.min_resources
        quotas = st.quotas.get(job.job.namespace)
        if mres is None or not quotas:
            return Vote.PERMIT
        request = mres.to_dict()
        pending = st.pending.get(job.job.namespace, {})
        for quota in quotas:
            names = [n for n in quota.hard if n in request]
            exceeded = [n for n in names if quota.used.get(n, 0) + pending.get(n, 0) + request[n] > quota.hard[n]]
            if exceeded:
                message = (
                    f"resource quota {quota.namespace}/{quota.name} insufficient, requested: "
                    f"{_fmt({n: request[n] for n in exceeded})}, used: "
                    f"{_fmt({n: quota.used.get(n, 0) + pending.get(n, 0) for n in exceeded})}, limited: "
                    f"{_fmt({n: quota.hard[n] for n in exceeded})}"
                )
                st.session.set_reason(
                    job,
                    JobReason(
                        ReasonKind.ENQUEUE_REJECTED,
                        message,
                        self.name,
                        {},
                        {"quota": f"{quota.namespace}/{quota.name}", "exceeded": exceeded},
                    ),
                )
                return Vote.REJECT
        return Vote.PERMIT

    def job_enqueued(self, st: ResourceQuotaState, job: JobInfo) -> None:
        """Count the admitted job's minResources against its namespace."""
        mres = job.job.min_resources
        if mres is None or job.job.namespace not in st.quotas:
            return
        pending = st.pending.setdefault(job.job.namespace, {})
        for k, v in mres.to_dict().items():
            pending[k] = pending.get(k, 0) + v
