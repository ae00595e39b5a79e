"""Volcano's batch scheduler as a pure-Python library: snapshot in, decisions out.

Public API: :func:`run_cycle`, :class:`Snapshot`, :class:`SchedulerConfig`,
:func:`parse_config`, :class:`ConfigError`, :class:`CycleResult`, :func:`default_registry`,
:class:`Registry`, :class:`SessionCache` and the model types.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: public name -> the module that defines it. The names load on first use (PEP 562), so that a caller of one
#: small module (``vcctl`` parses quantities with ``scheduler.quantity``) does not import the whole core and numpy.
_HOME = {
    **dict.fromkeys(("SessionCache",), "scheduler.cache"),
    **dict.fromkeys(("DEFAULT_CONFIG", "ConfigError", "dump_config", "parse_config"), "scheduler.config"),
    **dict.fromkeys(("PluginOption", "SchedulerConfig", "Tier"), "scheduler.config_types"),
    **dict.fromkeys(("run_cycle",), "scheduler.cycle"),
    **dict.fromkeys(
        (
            "Job",
            "JobPhase",
            "Node",
            "NodeSelectorRequirement",
            "NodeSelectorTerm",
            "PreferredSchedulingTerm",
            "Queue",
            "QueueState",
            "Resource",
            "Taint",
            "Task",
            "TaskStatus",
            "Toleration",
        ),
        "scheduler.model",
    ),
    **dict.fromkeys(("PriorityClass",), "scheduler.policies"),
    **dict.fromkeys(("QuantityError", "format_quantity", "parse_quantity", "parse_resource"), "scheduler.quantity"),
    **dict.fromkeys(("Registry", "RegistryError", "default_registry"), "scheduler.registry"),
    **dict.fromkeys(("CycleResult", "Eviction", "JobReason", "ReasonKind"), "scheduler.result"),
    **dict.fromkeys(("Snapshot", "advance"), "scheduler.snapshot"),
}


if not TYPE_CHECKING:  # mypy reads the imports above; a module-level __getattr__ would make every name valid to it

    def __getattr__(name: str) -> Any:
        home = _HOME.get(name)
        if home is None:
            raise AttributeError(f"module 'scheduler' has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*globals(), *__all__])
