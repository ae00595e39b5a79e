"""Registry of actions and plugins: a value passed to the session, never a mutated global."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from scheduler import framework
from scheduler.framework import Action, Plugin, SharedState

__all__ = ["Registry", "RegistryError", "default_registry", "signature_problem"]


class RegistryError(ValueError):
    """A name is registered twice or a class is malformed."""


def _positional(fn: Callable[..., Any]) -> float:
    """How many positional arguments ``fn`` takes (self included; unbounded with ``*args``)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return float("inf")
    return sum(p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params)


def signature_problem(cls: type[Plugin]) -> str | None:
    """Why ``cls`` cannot be called as its capabilities are (a method taking fewer arguments than the
    capability declares: most often written for plugins that kept their state, without ``st``), or None."""
    for base in cls.__mro__[1:]:
        if base.__module__ != framework.__name__ or base in (Plugin, SharedState, object):
            continue
        for attr, declared in vars(base).items():
            mine = getattr(cls, attr, None)
            if (
                attr.startswith("_")
                or not inspect.isfunction(declared)
                or mine is declared
                or not inspect.isfunction(mine)
            ):
                continue
            if _positional(mine) < _positional(declared):
                return (
                    f"{cls.__name__}.{attr} takes {_positional(mine) - 1} argument(s), the capability "
                    f"{base.__name__} passes {_positional(declared) - 1}: a plugin method takes its cycle state "
                    "first (ADR 0033)"
                )
    return None


@dataclass(frozen=True, slots=True)
class Registry:
    """Maps action and plugin names to their classes."""

    actions: Mapping[str, type[Action]] = field(default_factory=dict)
    plugins: Mapping[str, type[Plugin]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", MappingProxyType(dict(self.actions)))
        object.__setattr__(self, "plugins", MappingProxyType(dict(self.plugins)))

    def with_plugin(self, cls: type[Plugin], name: str | None = None) -> Registry:
        """Return a new registry that also holds plugin ``cls`` under ``name`` (or ``cls.name``)."""
        key = name or cls.name
        if not key:
            raise RegistryError(f"plugin class {cls.__name__} has no name")
        if key in self.plugins:
            raise RegistryError(f"plugin {key!r} is already registered")
        problem = signature_problem(cls)
        if problem is not None:
            raise RegistryError(f"plugin {key!r}: {problem}")
        return Registry(self.actions, {**self.plugins, key: cls})

    def with_action(self, cls: type[Action], name: str | None = None) -> Registry:
        """Return a new registry that also holds action ``cls``."""
        key = name or cls.name
        if not key:
            raise RegistryError(f"action class {cls.__name__} has no name")
        if key in self.actions:
            raise RegistryError(f"action {key!r} is already registered")
        return Registry({**self.actions, key: cls}, self.plugins)


def default_registry() -> Registry:
    """Return a registry of the built-in actions and plugins."""
    from scheduler.actions import BUILTIN_ACTIONS
    from scheduler.plugins import BUILTIN_PLUGINS

    return Registry({cls.name: cls for cls in BUILTIN_ACTIONS}, {cls.name: cls for cls in BUILTIN_PLUGINS})
