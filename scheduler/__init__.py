"""Volcano's batch scheduler as a pure-Python library: snapshot in, decisions out.

Public API: :func:`run_cycle`, :class:`Snapshot`, :class:`SchedulerConfig`,
:func:`parse_config`, :class:`ConfigError`, :class:`CycleResult`, :func:`default_registry`,
:class:`Registry`, :class:`SessionCache` and the model types.
"""

from __future__ import annotations

from scheduler.cache import SessionCache
from scheduler.config import DEFAULT_CONFIG, ConfigError, dump_config, parse_config
from scheduler.config_types import PluginOption, SchedulerConfig, Tier
from scheduler.cycle import run_cycle
from scheduler.model import (
    Job,
    JobPhase,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Queue,
    QueueState,
    Resource,
    Taint,
    Task,
    TaskStatus,
    Toleration,
)
from scheduler.policies import PriorityClass
from scheduler.quantity import QuantityError, format_quantity, parse_quantity, parse_resource
from scheduler.registry import Registry, RegistryError, default_registry
from scheduler.result import CycleResult, Eviction, JobReason, ReasonKind
from scheduler.snapshot import Snapshot, advance

__all__ = [
    "DEFAULT_CONFIG",
    "ConfigError",
    "CycleResult",
    "Eviction",
    "Job",
    "JobPhase",
    "JobReason",
    "Node",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PluginOption",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "QuantityError",
    "Queue",
    "QueueState",
    "ReasonKind",
    "Registry",
    "RegistryError",
    "Resource",
    "SchedulerConfig",
    "SessionCache",
    "Snapshot",
    "Taint",
    "Task",
    "TaskStatus",
    "Tier",
    "Toleration",
    "advance",
    "default_registry",
    "dump_config",
    "format_quantity",
    "parse_config",
    "parse_quantity",
    "parse_resource",
    "run_cycle",
]
