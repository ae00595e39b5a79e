"""Hierarchical DRF (drf with ``enableHierarchy: true``): queue order over an annotation tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler import vec

if TYPE_CHECKING:
    from scheduler.info import JobInfo, TaskInfo
    from scheduler.session import Session

__all__ = ["HierarchicalDrf"]


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


class HierarchicalDrf:
    """Tree root → ``volcano.sh/hierarchy`` path elements → one leaf per job."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.total = session.total
        self.paths: dict[str, list[str]] = {}
        self.weights: dict[str, list[float]] = {}
        for q in session.queues.values():
            parts = [p for p in q.queue.hierarchy.split("/") if p] if q.queue.hierarchy else []
            if not parts:
                parts = ["root", q.name]
            ws: list[float] = []
            for w in q.queue.hierarchy_weights.split("/") if q.queue.hierarchy_weights else []:
                try:
                    ws.append(max(float(w), 1.0))
                except ValueError:
                    ws.append(1.0)
            ws += [1.0] * (len(parts) - len(ws))
            self.paths[q.name] = parts[1:]
            self.weights[q.name] = ws[1:]
        self.leaf_alloc: dict[str, list[float]] = {key: list(job.allocated) for key, job in session.jobs.items()}
        self.dirty = True
        self.root = self._build(self.leaf_alloc)

    def _build(self, allocs: dict[str, list[float]]) -> _Node:
        n = self.session.ndims
        root = _Node("root", 1.0, n)
        for key, job in self.session.jobs.items():
            node = root
            path = self.paths.get(job.queue, [job.queue])
            weights = self.weights.get(job.queue, [1.0] * len(path))
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
        return [u < t for u, t in zip(used, self.total, strict=True)]

    def _update(self, node: _Node, demanding: list[bool]) -> None:
        if not node.children:
            node.share = vec.dominant_share(node.allocated, self.total)
            node.saturated = any(
                (a >= r > 0) or (r > 0 and not demanding[i])
                for i, (a, r) in enumerate(zip(node.allocated, node.request, strict=True))
                if i != vec.PODS
            )
            return
        for child in node.children.values():
            self._update(child, demanding)
        mdr = 1.0
        for child in node.children.values():
            if not vec.is_empty(child.allocated) and not child.saturated:
                mdr = min(mdr, child.share)
        total = [0.0] * self.session.ndims
        for child in node.children.values():
            if vec.is_empty(child.allocated):
                continue
            if child.saturated or child.share == 0:
                vec.iadd(total, child.allocated)
            else:
                vec.iadd(total, [x * mdr / child.share for x in child.allocated])
        node.allocated = total
        node.share = vec.dominant_share(total, self.total)
        node.saturated = all(c.saturated for c in node.children.values())

    def update_job(self, job: JobInfo) -> None:
        """Refresh a job's leaf after its allocation changed."""
        if job.key in self.leaf_alloc:
            self.leaf_alloc[job.key] = list(job.allocated)
            self.dirty = True

    def _tree(self) -> _Node:
        if self.dirty:
            self.root = self._build(self.leaf_alloc)
            self.dirty = False
        return self.root

    def _compare(self, root: _Node, a: str, b: str) -> int:
        la, lb = root, root
        pa, pb = self.paths.get(a, [a]), self.paths.get(b, [b])
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
        """Victims whose queue still ranks after the reclaimer's once the move is simulated."""
        allocs = {k: list(v) for k, v in self.leaf_alloc.items()}
        if reclaimer.job.key in allocs:
            vec.iadd(allocs[reclaimer.job.key], reclaimer.req)
        victims = []
        for c in candidates:
            if c.job.key not in allocs:
                continue
            vec.isub(allocs[c.job.key], c.req)
            root = self._build(allocs)
            if self._compare(root, reclaimer.job.queue, c.job.queue) < 0:
                victims.append(c)
        return victims
