"""The enqueuegate plugin: keeps a job whose pods can never fit any node out of the queues' admission room.

Not a Volcano plugin. Volcano's enqueue compares a job's ``minResources`` with cluster and queue totals, never
with node shapes: a gang whose pods each ask 8 GPU on a cluster of 4-GPU nodes is admitted (Inqueue) and holds
8 GPU of its queue's admission room (proportion's and overcommit's inqueue sums) for ever, so jobs that could
run stay Pending behind it. This plugin rejects such a job at enqueue, with a reason that gives the numbers.

A pod *can never fit* when no node of the session, taken empty, passes it: its request on every resource at
most the node's allocatable, its node selector and required node affinity matched, every NoSchedule and
NoExecute taint tolerated. A cordoned node counts (a cordon is temporary). The job is rejected when the pods
that can fit (those already placed, plus the pending ones that pass some node) number fewer than its
``minAvailable``, or fewer than a role's minimum (``minTaskMember``). With no nodes at all (an inventory not
reported yet) the plugin abstains.

Only the configurations that name it run it: the product's default configuration does, Volcano's does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import JobEnqueueable, SharedState
from scheduler.info import READY
from scheduler.model import TaskStatus
from scheduler.points import Vote
from scheduler.result import JobReason, ReasonKind

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo
    from scheduler.model import Node, Taint, Task
    from scheduler.nodes import IntMatrix

__all__ = ["EnqueueGatePlugin", "EnqueueGateState", "NodeFit"]

_HARD_EFFECTS = ("NoSchedule", "NoExecute")
_PLACED = READY | {TaskStatus.PIPELINED}


@dataclass(frozen=True, slots=True)
class NodeFit:
    """Whether a pod shape fits some empty node, and the figures that say why not.

    ``eligible`` counts the nodes whose labels and taints admit the pod; ``largest`` is, per resource, the
    most any eligible node has (core units); ``short`` names the resources no eligible node has enough of.
    """

    fits: bool
    eligible: int
    largest: tuple[int, ...]
    short: tuple[int, ...]


class EnqueueGateState(PluginState):
    """Enqueuegate's cycle: the nodes' allocatable (node table columns), the nodes, each node's NoSchedule and
    NoExecute taints, and the fits found so far per pod shape (shared from one cycle to the next with the
    opened state, which they depend on only)."""

    def __init__(
        self, session: SessionHandle, alloc: IntMatrix, node_list: Sequence[Node], hard_taints: list[tuple[Taint, ...]]
    ) -> None:
        super().__init__(session)
        self.alloc = alloc
        self.node_list = node_list
        self.hard_taints = hard_taints
        self.cache: dict[tuple[Any, ...], NodeFit] = {}


class EnqueueGatePlugin(SharedState, JobEnqueueable):
    """Rejects at enqueue a job that could not start even on an empty cluster (see the module)."""

    name = "enqueuegate"

    def open(self, session: SessionHandle) -> EnqueueGateState:
        """The session's nodes, their hard taints and an empty cache of pod-shape fits."""
        table = session.nodes
        hard_taints = [tuple(t for t in n.taints if t.effect in _HARD_EFFECTS) for n in table.nodes]
        return EnqueueGateState(session, table.alloc, table.nodes, hard_taints)

    def _eligible(self, st: EnqueueGateState, t: Task) -> np.ndarray[Any, np.dtype[np.bool_]]:
        sel = t.node_selector.items()
        terms = t.required_affinity
        hard_taints = st.hard_taints
        out = np.ones(len(st.node_list), dtype=np.bool_)
        for i, node in enumerate(st.node_list):
            labels_ok = all(node.labels.get(k) == v for k, v in sel) and (
                not terms or any(term.matches(node) for term in terms)
            )
            taints_ok = all(any(tol.tolerates(taint) for tol in t.tolerations) for taint in hard_taints[i])
            out[i] = labels_ok and taints_ok
        return out

    def node_fit(self, st: EnqueueGateState, task: Task, req: tuple[float, ...]) -> NodeFit:
        """Whether a pod of ``task``'s shape (request vector ``req``) fits some empty node of the session (cached
        per node selector, required affinity, tolerations and request)."""
        key = (tuple(sorted(task.node_selector.items())), task.required_affinity, task.tolerations, req)
        found = st.cache.get(key)
        if found is not None:
            return found
        eligible = self._eligible(st, task)
        want = np.asarray(req, dtype=np.float64)
        alloc = st.alloc[:, eligible]
        ndims = len(req)
        if alloc.shape[1]:
            enough = np.all(alloc >= want[:, None], axis=0)
            largest = tuple(int(x) for x in alloc.max(axis=1))
        else:
            enough = np.zeros(0, dtype=np.bool_)
            largest = (0,) * ndims
        short = tuple(d for d in range(ndims) if want[d] > largest[d])
        found = NodeFit(bool(enough.any()), int(eligible.sum()), largest, short)
        st.cache[key] = found
        return found

    def _shapes(self, st: EnqueueGateState, job: JobInfo) -> list[tuple[Task, tuple[float, ...], TaskStatus, int]]:
        """(pod, request vector, status, count) for the job's pods, or, while it has none, for the pods its
        controller creates on admission (``Job.pod_templates``)."""
        if job.tasks:
            return [(t.task, t.req, t.status, 1) for t in job.tasks.values()]
        session = st.session
        out = []
        for template, replicas in job.job.pod_templates:
            req = session.vector(template.requests)
            if any(v > 0 and name not in session.dim_index for name, v in template.requests.scalars.items()):
                req = tuple(float("inf") if d == 2 else v for d, v in enumerate(req))  # a resource no node has
            out.append((template, req, TaskStatus.PENDING, replicas))
        return out

    def _never(self, st: EnqueueGateState, job: JobInfo) -> tuple[str, int, int, Task, tuple[float, ...]] | None:
        """(role, pods that fit, minimum, a pod that does not, its request) for the first count the job cannot
        reach."""
        fit_all = 0
        unfit: dict[str, tuple[Task, tuple[float, ...]]] = {}
        per_role: dict[str, int] = {}
        for task, req, status, count in self._shapes(st, job):
            if status in _PLACED:
                ok = True
            elif status == TaskStatus.PENDING:
                ok = self.node_fit(st, task, req).fits
            else:
                continue
            if ok:
                fit_all += count
                per_role[task.role] = per_role.get(task.role, 0) + count
            elif count:
                unfit.setdefault(task.role, (task, req))
        if not unfit:
            return None
        if fit_all < job.min_available:
            role = sorted(unfit)[0]
            return "", fit_all, job.min_available, *unfit[role]
        if not (job.task_min and job.min_available >= job.task_min_total):
            return None  # Volcano checks role minimums only then (JobInfo.check_task_valid)
        for role, minimum in sorted(job.task_min.items()):
            if role in unfit and per_role.get(role, 0) < minimum:
                return role, per_role.get(role, 0), minimum, *unfit[role]
        return None

    def job_enqueueable(self, st: EnqueueGateState, job: JobInfo) -> Vote:
        """Reject a job that cannot start even on an empty cluster; else abstain."""
        if not len(st.node_list):
            return Vote.ABSTAIN
        never = self._never(st, job)
        if never is None:
            return Vote.ABSTAIN
        role, fitting, minimum, pod, req = never
        fit = self.node_fit(st, pod, req)
        session = st.session
        task_name = pod.role or pod.name
        per_pod = session.to_dict([0.0 if v == float("inf") else v for v in req])
        per_pod.pop("pods", None)
        nodes = len(st.node_list)
        missing = sorted(k for k, v in pod.requests.scalars.items() if v > 0 and k not in session.dim_index)
        if missing:
            why = f"each pod asks {', '.join(missing)}, which no node has"
        elif not fit.eligible:
            why = f"no node of {nodes} admits its node selector, affinity and tolerations"
        elif fit.short:
            asks = session.to_dict([req[d] if d in fit.short else 0 for d in range(len(req))])
            largest = {session.dims[d]: fit.largest[d] for d in fit.short}
            why = f"each pod asks {asks}, the largest node it may use has {largest}"
        else:
            why = f"no node it may use has all of {per_pod} at once"
        who = f"role {role}" if role else "the gang"
        message = (
            f"pod group can never run: {fitting} of the {minimum} pods {who} needs fit any node, even with the "
            f"cluster empty; task {task_name}: {why} ({fit.eligible} of {nodes} nodes admit its pods)"
        )
        numbers = {
            "task": task_name,
            "fitting_pods": fitting,
            "minimum_pods": minimum,
            "per_pod": per_pod,
            "largest_node": {session.dims[d]: fit.largest[d] for d in (fit.short or range(len(req))) if d != 2},
            "eligible_nodes": fit.eligible,
            "nodes": nodes,
            "holds": session.to_dict(job.min_resources) if job.min_resources is not None else {},
        }
        session.set_reason(job, JobReason(ReasonKind.NEVER_FITS, message, self.name, {}, numbers))
        return Vote.REJECT
