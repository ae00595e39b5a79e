"""The scheduler configuration's values: the actions, the tiers of plugins and their options, as
:func:`scheduler.config.parse_config` returns them validated.

Apart from the parser so that the values sit low: the session and the handle that plugins and
actions see (:mod:`scheduler.handle`) read them, while the parser above validates names against a
registry of the plugin and action classes, which import that handle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from scheduler.points import ExtensionPoint

__all__ = ["PluginOption", "SchedulerConfig", "Tier"]


@dataclass(frozen=True, slots=True)
class PluginOption:
    """One plugin of a tier: name, switched-off extension points, hierarchy flag, arguments."""

    name: str
    disabled: frozenset[ExtensionPoint] = frozenset()
    hierarchy: bool = False
    arguments: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def enabled(self, point: ExtensionPoint) -> bool:
        """Return whether ``point`` is enabled for this plugin."""
        return point not in self.disabled


@dataclass(frozen=True, slots=True)
class Tier:
    """A tier of plugins, consulted in order."""

    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """A validated scheduler configuration."""

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    action_args: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    #: Values Volcano would log and ignore (an argument with ``ArgSpec.lenient``), each with its path:
    #: the configuration loads without them, and the dashboard and API show these lines.
    warnings: tuple[str, ...] = ()

    def plugin_names(self) -> tuple[str, ...]:
        """Return every configured plugin name in tier order."""
        return tuple(p.name for t in self.tiers for p in t.plugins)
