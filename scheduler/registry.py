"""Registry of actions and plugins: a value passed to the session, never a mutated global."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from scheduler.framework import Action, Plugin

__all__ = ["Registry", "RegistryError", "default_registry"]


class RegistryError(ValueError):
    """A name is registered twice or a class is malformed."""


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
