"""Node hardware and pod QoS read from manifests: the simulated NUMA layout, Guaranteed pods' CPUs and a
pod's resource limits.

``volcanoweb.io/numa-topology`` (a node annotation, JSON) declares what Volcano reads from the resource
exporter's Numatopology object, in the simulated cluster's terms::

    {"cpuManagerPolicy": "static", "topologyManagerPolicy": "single-numa-node",
     "sockets": 2, "numaPerSocket": 1, "coresPerNuma": 4, "threadsPerCore": 2, "reservedCpu": "0"}

NUMA node ``s * numaPerSocket + n`` of socket ``s`` holds cores numbered on across the node, and core ``k``
the logical CPUs ``k * threadsPerCore + t`` (the siblings of a core are adjacent, as in Volcano's tests).
An optional ``allocatable`` list of CPU ids is what the exporter reports free; without it the numa-aware
plugin derives it from the Guaranteed pods on the node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.model import NumaTopology
from scheduler.numa import POLICIES
from scheduler.quantity import QuantityError, parse_cpu, parse_resource

__all__ = [
    "NUMA_TOPOLOGY",
    "guaranteed_cpus",
    "numa_layout",
    "numa_topology",
    "parse_numa_annotation",
    "pod_limits",
]

NUMA_TOPOLOGY = "volcanoweb.io/numa-topology"
_COUNTS = ("sockets", "numaPerSocket", "coresPerNuma", "threadsPerCore")
_KEYS = {*_COUNTS, "cpuManagerPolicy", "topologyManagerPolicy", "reservedCpu", "allocatable"}


def numa_layout(
    sockets: int, numa_per_socket: int, cores_per_numa: int, threads: int
) -> tuple[tuple[int, int, int, int], ...]:
    """``(cpu, NUMA node, socket, core)`` for every logical CPU of the layout."""
    out: list[tuple[int, int, int, int]] = []
    for s in range(sockets):
        for n in range(numa_per_socket):
            numa = s * numa_per_socket + n
            for c in range(cores_per_numa):
                core = numa * cores_per_numa + c
                out.extend((core * threads + t, numa, s, core) for t in range(threads))
    return tuple(out)


def numa_topology(value: Mapping[str, Any]) -> NumaTopology:
    """The topology a ``volcanoweb.io/numa-topology`` mapping declares (raises ValueError naming the key)."""
    unknown = set(value) - _KEYS
    if unknown:
        raise ValueError(f"unknown key {sorted(unknown)[0]!r} (known: {', '.join(sorted(_KEYS))})")
    counts = [value.get(k, 1) for k in _COUNTS]
    for k, v in zip(_COUNTS, counts, strict=True):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{k}: expected a positive integer, got {v!r}")
    policy = value.get("topologyManagerPolicy", "none")
    if policy not in POLICIES:
        raise ValueError(f"topologyManagerPolicy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    manager = value.get("cpuManagerPolicy", "static")
    if manager not in ("static", "none"):
        raise ValueError(f"cpuManagerPolicy: expected static or none, got {manager!r}")
    try:
        reserved = parse_cpu(str(value.get("reservedCpu", "0")))
    except QuantityError as exc:
        raise ValueError(f"reservedCpu: {exc}") from None
    cpus = numa_layout(*counts)
    free = value.get("allocatable")
    if free is not None and (not isinstance(free, list) or not all(isinstance(c, int) for c in free)):
        raise ValueError("allocatable: expected a list of CPU ids")
    return NumaTopology(manager, policy, cpus, None if free is None else tuple(free), reserved)


def parse_numa_annotation(text: str) -> NumaTopology:
    """The ``volcanoweb.io/numa-topology`` annotation (raises ValueError)."""
    try:
        raw = json.loads(text)
    except ValueError:
        raise ValueError("expected a JSON object") from None
    if not isinstance(raw, Mapping):
        raise ValueError("expected a JSON object")
    return numa_topology(raw)


def guaranteed_cpus(containers: Sequence[Mapping[str, Any]], init: Sequence[Mapping[str, Any]]) -> tuple[int, ...]:
    """Each container's cpu request in millicores when the pod's QoS class is Guaranteed (every container
    and init container limits cpu and memory, and its requests, unset ones defaulting to the limits, equal
    them), else ()."""
    cpus: list[int] = []
    for k, c in enumerate([*containers, *init]):
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, {**(res.get("limits") or {}), **(res.get("requests") or {})}
        if "cpu" not in limits or "memory" not in limits:
            return ()
        try:
            for name in ("cpu", "memory"):
                if parse_resource(name, requests[name]) != parse_resource(name, limits[name]):
                    return ()
            if k < len(containers):
                cpus.append(parse_resource("cpu", limits["cpu"]))
        except QuantityError:
            return ()
    return tuple(cpus)


def _limits_of(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    limits = resources.get("limits") if isinstance(resources, Mapping) else None
    if not isinstance(limits, Mapping):
        return {}
    return {str(k): parse_resource(str(k), v) for k, v in limits.items()}


def pod_limits(
    containers: Sequence[Mapping[str, Any]],
    init: Sequence[Mapping[str, Any]] = (),
    overhead: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """A pod's resource limits, as Volcano's ``GetPodResourceLimit`` sums them: the containers' limits,
    restartable init containers (``restartPolicy: Always``, sidecars) added to them, then the largest of
    that and each other init container's limit (plus the sidecars started before it); the overhead is
    added to the resources that have a limit. An unlimited container adds nothing (0 everywhere: no limit).
    Raises :class:`QuantityError` on a bad quantity."""
    total: dict[str, int] = {}
    for c in containers:
        for k, v in _limits_of(c).items():
            total[k] = total.get(k, 0) + v
    sidecars: dict[str, int] = {}
    largest: dict[str, int] = {}
    for c in init:
        limits = _limits_of(c)
        if c.get("restartPolicy") == "Always":
            for k, v in limits.items():
                total[k] = total.get(k, 0) + v
                sidecars[k] = sidecars.get(k, 0) + v
            running = dict(sidecars)
        else:
            running = {k: limits.get(k, 0) + sidecars.get(k, 0) for k in {*limits, *sidecars}}
        for k, v in running.items():
            largest[k] = max(largest.get(k, 0), v)
    for k, v in largest.items():
        total[k] = max(total.get(k, 0), v)
    for k, v in (overhead or {}).items():
        if total.get(str(k), 0):
            total[str(k)] += parse_resource(str(k), v)
    return {k: v for k, v in total.items() if v}
