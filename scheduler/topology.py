"""The network topology of a session: HyperNodes resolved over the session's nodes.

Volcano's ``HyperNodesInfo`` and the session's view of it (``pkg/scheduler/api/hyper_node_info.go``,
``framework/session.go``): each HyperNode's real nodes (its Node members by exact name, regular
expression or labels, plus the real nodes of its HyperNode members), the parent/child tree, the
HyperNodes of each tier, the tier of each ``tierName``, and a virtual top HyperNode
(:data:`CLUSTER_TOP`) one tier above the highest, parent of every HyperNode without one, holding
every node. A member HyperNode claimed by two parents, or a cycle, makes the topology not ready
(jobs with a network topology then wait, as Volcano's ``HyperNodesReadyToSchedule``).

Where Volcano iterates Go sets (children, the HyperNodes of a tier), names are taken in order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.model import HyperNode, HyperNodeMember, Job, NetworkTopology, Node
from scheduler.points import IntArray

__all__ = ["CLUSTER_TOP", "JobTopology", "Topology", "job_topology", "sub_job_topology"]

#: Volcano's ``framework.ClusterTopHyperNode``.
CLUSTER_TOP = "<cluster-top-hypernode>"


def _member_nodes(member: HyperNodeMember, nodes: Sequence[Node]) -> list[int]:
    """Indices of the nodes a Node member selects (Volcano's ``hypernodeutil.GetMembers``)."""
    if member.exact:
        return [i for i, n in enumerate(nodes) if n.name == member.exact]
    if member.regex:
        try:
            pattern = re.compile(member.regex)
        except re.error:
            return []
        return [i for i, n in enumerate(nodes) if pattern.search(n.name)]
    if member.match_labels is not None or member.match_expressions:
        labels = member.match_labels or ()
        if not labels and not member.match_expressions:
            return []
        exprs = member.match_expressions
        return [
            i
            for i, n in enumerate(nodes)
            if all(n.labels.get(k) == v for k, v in labels) and all(e.matches(n.labels) for e in exprs)
        ]
    return []


class Topology:
    """HyperNodes over the nodes of a session (node indices are the node table's)."""

    def __init__(self, hyper_nodes: Sequence[HyperNode], nodes: Sequence[Node]) -> None:
        specs = {h.name: h for h in sorted(hyper_nodes, key=lambda h: h.name)}
        self.tier: dict[str, int] = {name: h.tier for name, h in specs.items()}
        self.parent: dict[str, str] = {}
        self.children: dict[str, list[str]] = {name: [] for name in specs}
        self.problem = ""
        self._link(specs)
        members = self._resolve_members(specs, nodes)
        top_tier = max(self.tier.values(), default=0) + 1
        self.top_tier = top_tier
        self.tier[CLUSTER_TOP] = top_tier
        roots = sorted(n for n in specs if n not in self.parent)
        for n in roots:
            self.parent[n] = CLUSTER_TOP
        self.children[CLUSTER_TOP] = roots
        self.nodes: dict[str, IntArray] = {n: np.array(sorted(v), dtype=np.intp) for n, v in members.items()}
        self.nodes[CLUSTER_TOP] = np.arange(len(nodes), dtype=np.intp)
        self.by_tier: dict[int, list[str]] = {}
        for name, t in sorted(self.tier.items()):
            self.by_tier.setdefault(t, []).append(name)
        #: The tiers in ascending order (the top HyperNode's included), Volcano's ``HyperNodesTiers``.
        self.tiers: list[int] = sorted(self.by_tier)
        self.tier_names: dict[str, int] = {h.tier_name: h.tier for h in specs.values() if h.tier_name}
        self.ready = not self.problem
        self.nnodes = len(nodes)
        self._index_nodes(len(nodes))

    def _link(self, specs: Mapping[str, HyperNode]) -> None:
        """Fill ``parent`` and ``children`` from the HyperNode members of the known HyperNodes (a
        second parent is a ``problem`` and ignored)."""
        for name, h in specs.items():
            for m in h.members:
                if m.type != "HyperNode" or not m.exact or m.exact not in specs:
                    continue
                old = self.parent.get(m.exact)
                if old is not None and old != name:
                    self.problem = f"HyperNode {m.exact} has two parents, {old} and {name}"
                    continue
                self.parent[m.exact] = name
                if m.exact not in self.children[name]:
                    self.children[name].append(m.exact)
        for kids in self.children.values():
            kids.sort()

    def _resolve_members(self, specs: Mapping[str, HyperNode], nodes: Sequence[Node]) -> dict[str, set[int]]:
        """The node indices under each HyperNode, through its HyperNode members (a cycle is a
        ``problem`` unless one is already recorded, and resolves to no nodes)."""
        members: dict[str, set[int]] = {}

        def resolve(name: str, chain: tuple[str, ...]) -> set[int]:
            if name in chain:
                self.problem = self.problem or "cyclic HyperNode members: " + " -> ".join((*chain, name))
                return set()
            done = members.get(name)
            if done is not None:
                return done
            out: set[int] = set()
            for m in specs[name].members:
                if m.type == "Node":
                    out.update(_member_nodes(m, nodes))
                elif m.exact in specs:
                    out |= resolve(m.exact, (*chain, name))
            members[name] = out
            return out

        for name in specs:
            resolve(name, ())
        return members

    def _index_nodes(self, nnodes: int) -> None:
        """The per-node lookups: each node's lowest HyperNode, and every HyperNode holding it."""
        #: Per node, the first HyperNode of the lowest tier holding it ("" for none): Volcano's
        #: ``FindHyperNodeForNode``.
        leaf = [""] * nnodes
        for name in reversed(self.by_tier[self.tiers[0]]):
            for i in self.nodes[name]:
                leaf[int(i)] = name
        self.leaf: list[str] = leaf
        self._masks: dict[str, np.ndarray] = {}
        self._ancestors: dict[str, list[str]] = {}
        #: Per node, the HyperNodes holding it (for the plugins' per-HyperNode accounting).
        self.holding: list[list[str]] = [[] for _ in range(nnodes)]
        for name in sorted(self.nodes):
            for i in self.nodes[name]:
                self.holding[int(i)].append(name)

    @property
    def empty(self) -> bool:
        """No HyperNode but the top one."""
        return len(self.tier) == 1

    def mask(self, name: str) -> np.ndarray:
        """A boolean mask over the nodes of HyperNode ``name``."""
        m = self._masks.get(name)
        if m is None:
            m = np.zeros(self.nnodes, dtype=np.bool_)
            m[self.nodes.get(name, np.zeros(0, dtype=np.intp))] = True
            self._masks[name] = m
        return m

    def ancestors(self, name: str) -> list[str]:
        """``name`` then its ancestors up to the top HyperNode (Volcano's ``GetAncestors``)."""
        out = self._ancestors.get(name)
        if out is None:
            out = [name]
            cur = self.parent.get(name)
            while cur is not None and cur not in out:
                out.append(cur)
                cur = self.parent.get(cur)
            self._ancestors[name] = out
        return out

    def lca(self, a: str, b: str) -> str:
        """The lowest common ancestor of ``a`` and ``b`` ("" when either is "", the other)."""
        if not a:
            return b
        if not b:
            return a
        seen = set(self.ancestors(a))
        return next((x for x in self.ancestors(b) if x in seen), "")

    def lowest_holding(self, node_indices: Sequence[int]) -> str:
        """The lowest-tier HyperNode holding every node of ``node_indices`` (Volcano's
        ``recoverAllocatedHyperNode``): "" for none."""
        if not node_indices:
            return ""
        common = set(self.holding[node_indices[0]])
        for i in node_indices[1:]:
            common &= set(self.holding[i])
        if not common:
            return ""
        return min(common, key=lambda n: (self.tier[n], n))


@dataclass(frozen=True, slots=True)
class JobTopology:
    """A job's network topology as the session reads it (Volcano's ``adjustNetworkTopologySpec``:
    ``highestTierName`` translated, soft mode turned into hard with the top tier): ``hard`` with
    ``highest`` tier allowed, or only ``with`` a topology (not hard: a hard mode whose tier is
    unknown, or another mode)."""

    hard: bool
    highest: int


def job_topology(job: Job, tier_names: Mapping[str, int], top_tier: int) -> JobTopology | None:
    """The job's effective network topology (None: none)."""
    nt = job.network_topology
    if nt is None:
        return None
    allowed = nt.highest_tier_allowed
    if allowed is None and nt.highest_tier_name:
        allowed = tier_names.get(nt.highest_tier_name)
    if nt.mode == "soft":
        return JobTopology(True, top_tier)
    if nt.mode == "hard" and allowed is not None:
        return JobTopology(True, allowed)
    return JobTopology(False, 0)


def sub_job_topology(
    sub: NetworkTopology | None, job: Job, tier_names: Mapping[str, int], top_tier: int
) -> JobTopology | None:
    """A sub-job's effective network topology (Volcano's ``adjustNetworkTopologySpec``): its ``highestTierName``
    translated; soft mode is hard with the job's effective highest tier (the top tier when the job has none)."""
    if sub is None:
        return None
    parent = job_topology(job, tier_names, top_tier)
    limit = parent.highest if parent is not None and parent.hard else top_tier
    allowed = sub.highest_tier_allowed
    if allowed is None and sub.highest_tier_name:
        allowed = tier_names.get(sub.highest_tier_name)
    if sub.mode == "soft":
        return JobTopology(True, limit)
    if sub.mode == "hard" and allowed is not None:
        return JobTopology(True, allowed)
    return JobTopology(False, 0)
