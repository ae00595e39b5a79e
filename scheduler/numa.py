"""NUMA topology hints, policies and CPU assignment, as Volcano's numa-aware plugin computes them.

Volcano's ``pkg/scheduler/plugins/numaaware/policy`` (the kubelet topology manager's hint merging) and
``provider/cpumanager`` (the static CPU manager's hints and ``takeByTopology``). A *hint* is a set of NUMA
node ids (None: any) and whether it is preferred. Sets of CPU ids are frozensets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

__all__ = [
    "POLICIES",
    "CpuInfo",
    "Hint",
    "admit",
    "allocate_cpus",
    "cpu_hints",
    "merge_hints",
    "take_by_topology",
]

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")


@dataclass(frozen=True, slots=True)
class Hint:
    """A topology hint: the NUMA nodes (None: no preference) and whether it is preferred."""

    numa: frozenset[int] | None
    preferred: bool


@dataclass(frozen=True, slots=True)
class CpuInfo:
    """Where one logical CPU sits (Kubernetes' ``CPUInfo``)."""

    numa: int
    socket: int
    core: int


Details = Mapping[int, CpuInfo]


def _masks(numa_nodes: Sequence[int]) -> Iterable[frozenset[int]]:
    """Every non-empty set of NUMA nodes, smallest first (Kubernetes' ``IterateBitMasks``)."""
    for size in range(1, len(numa_nodes) + 1):
        for combo in combinations(sorted(numa_nodes), size):
            yield frozenset(combo)


def cpu_hints(available: frozenset[int], details: Details, request: int) -> list[Hint]:
    """Volcano's ``generateCPUTopologyHints``: a hint per set of NUMA nodes holding ``request`` available
    CPUs; preferred are those of the smallest size whose NUMA nodes hold that many CPUs at all."""
    numa_nodes = sorted({c.numa for c in details.values()})
    smallest = len(numa_nodes)
    found: list[frozenset[int]] = []
    for mask in _masks(numa_nodes):
        in_mask = sum(1 for c in details.values() if c.numa in mask)
        if in_mask >= request and len(mask) < smallest:
            smallest = len(mask)
        if sum(1 for c in available if c in details and details[c].numa in mask) >= request:
            found.append(mask)
    return [Hint(m, len(m) == smallest) for m in found]


def _mask_value(mask: frozenset[int]) -> int:
    return sum(1 << b for b in mask)


def _narrower(a: frozenset[int], b: frozenset[int]) -> bool:
    """Kubernetes' ``IsNarrowerThan``: fewer NUMA nodes, or as many and a smaller bit value."""
    if len(a) == len(b):
        return _mask_value(a) < _mask_value(b)
    return len(a) < len(b)


def _filtered(providers: Sequence[Mapping[str, list[Hint] | None]]) -> list[list[Hint]]:
    """Volcano's ``filterProvidersHints``: no hints from a provider or a resource means any NUMA node
    (preferred); an empty list means none fits (not preferred)."""
    out: list[list[Hint]] = []
    for hints in providers:
        if not hints:
            out.append([Hint(None, True)])
            continue
        for resource in hints:
            given = hints[resource]
            if given is None:
                out.append([Hint(None, True)])
            elif not given:
                out.append([Hint(None, False)])
            else:
                out.append(list(given))
    return out


def _permutations(lists: Sequence[Sequence[Hint]], visit: Callable[[list[Hint]], None]) -> None:
    def walk(i: int, accum: list[Hint]) -> None:
        if i == len(lists):
            visit(accum)
            return
        for h in lists[i]:
            walk(i + 1, [*accum, h])

    walk(0, [])


def merge_hints(numa_nodes: Sequence[int], lists: Sequence[Sequence[Hint]]) -> Hint:
    """Volcano's ``mergeFilteredHints``: over every choice of one hint per resource, the AND of their NUMA
    nodes; preferred only if all are; the best is preferred first, then the narrowest."""
    every = frozenset(numa_nodes)
    best = [Hint(every, False)]

    def visit(perm: list[Hint]) -> None:
        merged = every
        for h in perm:
            merged = merged & (every if h.numa is None else h.numa)
        hint = Hint(merged, all(h.preferred for h in perm))
        if not merged:
            return
        if hint.preferred and not best[0].preferred:
            best[0] = hint
            return
        if not hint.preferred and best[0].preferred:
            return
        if best[0].numa is not None and not _narrower(merged, best[0].numa):
            return
        best[0] = hint

    _permutations(lists, visit)
    return best[0]


def admit(
    policy: str, numa_nodes: Sequence[int], providers: Sequence[Mapping[str, list[Hint] | None]]
) -> tuple[Hint, bool]:
    """The node's topology manager policy on the providers' hints: the best hint and whether it admits
    the container (``none``: always, with no hint; ``best-effort``: always; ``restricted`` and
    ``single-numa-node``: a preferred hint; the latter keeps only hints of one NUMA node or none)."""
    if policy not in ("best-effort", "restricted", "single-numa-node"):
        return Hint(None, False), True
    lists = _filtered(providers)
    if policy == "single-numa-node":
        lists = [[h for h in hs if h.preferred and (h.numa is None or len(h.numa) == 1)] for hs in lists]
    best = merge_hints(numa_nodes, lists)
    return best, policy == "best-effort" or best.preferred


class _Accumulator:
    """Kubernetes' ``cpuAccumulator`` as Volcano's copy has it."""

    def __init__(self, details: Details, available: frozenset[int], needed: int) -> None:
        self.all = details
        self.free = {c: details[c] for c in available if c in details}
        self.needed = needed
        self.result: set[int] = set()

    def take(self, cpus: Iterable[int]) -> None:
        for c in cpus:
            if c in self.free:
                del self.free[c]
                self.result.add(c)
                self.needed -= 1

    def sockets(self) -> list[int]:
        # As Volcano's copy: the free sockets' ids that are also free CPU ids.
        return sorted({i.socket for i in self.free.values()} & set(self.free))

    def cores(self) -> list[int]:
        # As Volcano's copy: per socket (fewest free cores first, then id), core ids that are also free CPU ids.
        by_socket: dict[int, set[int]] = {}
        for i in self.free.values():
            by_socket.setdefault(i.socket, set()).add(i.core)
        order = sorted(by_socket, key=lambda s: (len(by_socket[s] & set(self.free)), s))
        return [c for s in order for c in sorted(by_socket[s] & set(self.free))]

    def cpus(self) -> list[int]:
        cores = sorted({i.core for i in self.free.values()})

        def key(core: int) -> tuple[int, int, int, int, int]:
            socket = min((c for c, i in self.all.items() if i.core == core), default=0)
            sid = self.all[socket].socket
            coloc = sum(1 for c in self.result if self.all[c].socket == sid)
            socket_free = sum(1 for i in self.free.values() if i.socket == sid)
            core_free = sum(1 for i in self.free.values() if i.core == core)
            return (-coloc, socket_free, core_free, sid, core)

        return [c for core in sorted(cores, key=key) for c in sorted(c for c, i in self.free.items() if i.core == core)]


def take_by_topology(details: Details, available: frozenset[int], count: int) -> frozenset[int] | None:
    """Kubernetes' ``takeByTopology``: whole sockets, then whole cores, then single CPUs (None: not enough)."""
    acc = _Accumulator(details, available, count)
    if acc.needed < 1:
        return frozenset()
    if acc.needed > len(acc.free):
        return None
    per_socket = len(details) // max(len({i.socket for i in details.values()}), 1)
    per_core = len(details) // max(len({(i.socket, i.core) for i in details.values()}), 1)
    for level, attr in ((per_socket, "socket"), (per_core, "core")):
        if acc.needed >= level:
            for g in acc.sockets() if attr == "socket" else acc.cores():
                acc.take([c for c, i in acc.free.items() if getattr(i, attr) == g])
                if acc.needed < 1:
                    return frozenset(acc.result)
                if acc.needed < level:
                    break
    for c in acc.cpus():
        if acc.needed >= 1:
            acc.take([c])
        if acc.needed < 1:
            return frozenset(acc.result)
    return None


def allocate_cpus(details: Details, available: frozenset[int], request: int, hint: Hint) -> frozenset[int]:
    """Volcano's cpumanager ``Allocate``: the CPUs of the hint's NUMA nodes first, then the rest (empty
    when it cannot take them)."""
    result: frozenset[int] = frozenset()
    if hint.numa is not None:
        aligned = frozenset(c for c in available if c in details and details[c].numa in hint.numa)
        taken = take_by_topology(details, aligned, min(request, len(aligned)))
        if taken is None:
            return frozenset()
        result = taken
    rest = take_by_topology(details, available - result, request - len(result))
    return frozenset() if rest is None else result | rest
