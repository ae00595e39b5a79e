"""Hierarchical DRF (drf with ``enableHierarchy: true``): queue order over an annotation tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler import vec
from scheduler.cycle_state import PluginState
from scheduler.model import TaskStatus

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, TaskInfo

__all__ = ["HierarchicalDrf"]

#: Volcano's ``minResource``: smaller amounts do not make a dimension "present".
MIN_RESOURCE = 0.1


def _held(job: JobInfo) -> list[float]:
    """The job's DRF allocation as Volcano's event handlers keep it: allocated-status tasks plus
    the tasks pipelined in this session (a session opens without pipelined tasks)."""
    out = list(job.allocated)
    if job.counts[TaskStatus.PIPELINED]:
        for t in job.tasks.values():
            if t.status == TaskStatus.PIPELINED:
                vec.iadd(out, t.req)
    return out


class _Node:
    __slots__ = ("allocated", "children", "name", "request", "saturated", "share", "weight")

    def __init__(self, name: str, weight: float, ndims: int) -> None:
        self.name = name
        self.weight = weight
        self.children: dict[str, _Node] = {}
        self.allocated = [0.0] * ndims
        self.request = [0.0] * ndims
        self.share = 0.0
        self.saturated = False


class HierarchicalDrf(PluginState):
    """Tree root → ``volcano.sh/hierarchy`` path elements → one leaf per job.

    The hierarchical part of drf's cycle state (``DrfState.hdrf``): built when drf opens in
    hierarchical mode, its leaves updated by drf's allocation events, the tree rebuilt lazily."""

    def __init__(self, session: SessionHandle) -> None:
        super().__init__(session)
        self.total = session.total
        self.paths: dict[str, list[str]] = {}
        self.weights: dict[str, list[float]] = {}
        for q in session.queues.values():
            # As Volcano: the first path element stands for the root whatever its name; a queue
            # without the annotation (or just "root") puts its jobs directly under the root.
            parts = q.queue.hierarchy.split("/")
            ws: list[float] = []
            for w in q.queue.hierarchy_weights.split("/"):
                try:
                    f = float(w)
                except ValueError:
                    f = 0.0  # Go's ParseFloat error value
                ws.append(f if f >= 1.0 else 1.0)  # NaN and < 1 → 1
            ws += [1.0] * (len(parts) - len(ws))  # Volcano would index out of range here
            self.paths[q.name] = parts[1:]
            self.weights[q.name] = ws[1:]
        self.leaf_alloc: dict[str, list[float]] = {key: _held(job) for key, job in session.jobs.items()}
        self.dirty = True
        self.root = self._build(self.leaf_alloc)

    def _build(self, allocs: dict[str, list[float]]) -> _Node:
        n = self.session.ndims
        root = _Node("root", 1.0, n)
        for key, job in self.session.jobs.items():
            node = root
            if job.queue not in self.paths:
                continue
            path = self.paths[job.queue]
            weights = self.weights[job.queue]
            for name, w in zip(path, weights, strict=False):
                child = node.children.get(name)
                if child is None:
                    child = node.children[name] = _Node(name, w, n)
                node = child
            leaf = node.children[f"job:{key}"] = _Node(f"job:{key}", 1.0, n)
            leaf.allocated = list(allocs[key])
            leaf.request = list(job.total_request)
        demanding = self._demanding(allocs)
        self._update(root, demanding)
        return root

    def _demanding(self, allocs: dict[str, list[float]]) -> list[bool]:
        used = [0.0] * self.session.ndims
        for a in allocs.values():
            vec.iadd(used, a)
        return [t >= MIN_RESOURCE and u < t for u, t in zip(used, self.total, strict=True)]

    def _update(self, node: _Node, demanding: list[bool]) -> None:
        if not node.children:
            node.share = vec.dominant_share(node.allocated, self.total)
            # Volcano resourceSaturated: only dimensions the job holds (≥ 0.1) are looked at,
            # pods included.
            node.saturated = any(
                (a >= r > 0) or (r > 0 and not demanding[i])
                for i, (a, r) in enumerate(zip(node.allocated, node.request, strict=True))
                if a >= MIN_RESOURCE
            )
            return
        for child in node.children.values():
            self._update(child, demanding)
        mdr = 1.0
        for child in node.children.values():
            if child.share != 0 and not child.saturated:
                mdr = min(mdr, child.share)
        total = [0.0] * self.session.ndims
        for child in node.children.values():
            if child.share == 0:  # empty children do not count
                continue
            if child.saturated:
                vec.iadd(total, child.allocated)
            else:
                vec.iadd(total, [x * mdr / child.share for x in child.allocated])
        node.allocated = total
        node.share = vec.dominant_share(total, self.total)
        node.saturated = all(c.saturated for c in node.children.values())

    def update_job(self, job: JobInfo) -> None:
        """Refresh a job's leaf after its allocation changed."""
        if job.key in self.leaf_alloc:
            self.leaf_alloc[job.key] = _held(job)
            self.dirty = True

    def _tree(self) -> _Node:
        if self.dirty:
            self.root = self._build(self.leaf_alloc)
            self.dirty = False
        return self.root

    def _compare(self, root: _Node, a: str, b: str) -> int:
        la, lb = root, root
        pa, pb = self.paths.get(a, []), self.paths.get(b, [])
        for na, nb in zip(pa, pb, strict=False):
            ca, cb = la.children.get(na), lb.children.get(nb)
            if ca is None or cb is None:
                return 0
            if ca is cb:
                la, lb = ca, cb
                continue
            if ca.saturated != cb.saturated:
                return 1 if ca.saturated else -1
            ra, rb = ca.share / ca.weight, cb.share / cb.weight
            if ra != rb:
                return -1 if ra < rb else 1
            la, lb = ca, cb
        return 0

    def compare_queues(self, a: str, b: str) -> int:
        """Negative when queue ``a`` should be served before ``b``."""
        return self._compare(self._tree(), a, b)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims whose queue ranks after the reclaimer's once the move is simulated.

        As Volcano, every candidate is judged on its own: the reclaimer's request is added to its
        job, this candidate's request alone is taken from its job (earlier candidates are put
        back), and the reclaimer's queue must then compare strictly before the candidate's."""
        if reclaimer.job.key not in self.leaf_alloc:
            return []
        allocs = {k: list(v) for k, v in self.leaf_alloc.items()}
        vec.iadd(allocs[reclaimer.job.key], reclaimer.req)
        victims = []
        for c in candidates:
            own = allocs.get(c.job.key)
            if own is None:
                continue
            saved = list(own)
            vec.isub(own, c.req)
            root = self._build(allocs)
            allocs[c.job.key] = saved
            if self._compare(root, reclaimer.job.queue, c.job.queue) < 0:
                victims.append(c)
        return victims
