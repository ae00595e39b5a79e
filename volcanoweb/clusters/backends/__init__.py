"""Cluster backends: where pods run (see :mod:`.base` for the interface).

``SimCluster`` (the simulation engine of :mod:`.simengine` over an in-memory
store; the product's ``clusters.backends.simdb.DatabaseSimCluster`` is the same engine
over the database) and ``KubernetesBackend`` (the official client) implement
:class:`ClusterBackend`. ``KubernetesBackend`` is imported
lazily so the simulator works without loading the Kubernetes client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    GROUP_NAME_ANNOTATION,
    SIM_DURATION_ANNOTATION,
    SIM_EXIT_CODE_ANNOTATION,
    VOLCANO_SCHEDULER,
    BackendError,
    BackendEvent,
    ClusterBackend,
    Conflict,
    Container,
    EvictionBlocked,
    NodeInfo,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
    Taint,
    Unavailable,
    Volume,
    VolumeMount,
)
from .grouping import group_pods, podgroup_name_for
from .sim import Clock, ManualClock, ScaledClock, SimCluster, parse_pool_spec

if TYPE_CHECKING:
    from .kubernetes import KubernetesBackend

__all__ = [
    "GROUP_NAME_ANNOTATION",
    "SIM_DURATION_ANNOTATION",
    "SIM_EXIT_CODE_ANNOTATION",
    "VOLCANO_SCHEDULER",
    "BackendError",
    "BackendEvent",
    "Clock",
    "ClusterBackend",
    "Conflict",
    "Container",
    "EvictionBlocked",
    "KubernetesBackend",
    "ManualClock",
    "NodeInfo",
    "NotFound",
    "OwnerReference",
    "PodInfo",
    "PodSpec",
    "ScaledClock",
    "ServiceSpec",
    "SimCluster",
    "Taint",
    "Unavailable",
    "Volume",
    "VolumeMount",
    "group_pods",
    "parse_pool_spec",
    "podgroup_name_for",
]


def __getattr__(name: str) -> Any:
    if name == "KubernetesBackend":
        from .kubernetes import KubernetesBackend

        return KubernetesBackend
    raise AttributeError(name)
