"""The cycle state: each plugin's per-cycle state, owned by the framework, not by the plugin.

As in the Kubernetes scheduling framework, a plugin is built once from its arguments and keeps
nothing of a cycle on itself: what it computes when a session opens (shares, indexes, caches, the
session it was opened over) is a state object of its own type (:class:`PluginState`), returned by
``Plugin.open`` and written by the session into the cycle's :class:`CycleState` under the
plugin's name. Every capability method receives that state as its first argument
(``job_order(state, a, b)``), as Kubernetes hands ``*CycleState`` to ``Filter`` and ``Score``.

The session dispatches through a :class:`BoundPlugin` per plugin and cycle: the plugin's methods
with its state bound in (``functools.partial``, made when the cycle opens), so a combine loop calls
``p.job_order(a, b)`` without looking the state up on every call. Flags a plugin may set per cycle
(``failures_repeatable``, ``node_local_filters``) are read from the state when it has them.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache, partial
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle

__all__ = ["BoundPlugin", "CycleState", "PluginState"]

#: Plugin attributes that are never bound to a state (the framework's, not the capabilities').
_UNBOUND = frozenset(
    {"open", "save_state", "restore_state", "refresh_state", "check_arguments", "args", "hierarchy", "name"}
)


class _Plugin(Protocol):
    """What a :class:`BoundPlugin` reads of a ``scheduler.framework.Plugin`` (which sits above)."""

    @property
    def name(self) -> str: ...

    @property
    def failures_repeatable(self) -> bool: ...


class PluginState:
    """Base of a plugin's per-cycle state: the session it was opened over, and (in subclasses) what
    the plugin computed from it. Plugins whose state is only the session use it as is."""

    def __init__(self, session: SessionHandle) -> None:
        self.session = session


class CycleState:
    """The per-cycle states of one session's plugins, by plugin name (the framework's store)."""

    __slots__ = ("_states",)

    def __init__(self) -> None:
        self._states: dict[str, Any] = {}

    def write(self, key: str, state: Any) -> None:
        """Store ``state`` under ``key`` (a plugin's name)."""
        self._states[key] = state

    def read(self, key: str) -> Any:
        """The state stored under ``key``; KeyError naming the key when there is none."""
        try:
            return self._states[key]
        except KeyError:
            raise KeyError(f"no cycle state for {key!r}") from None

    def __contains__(self, key: object) -> bool:
        return key in self._states

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)


@cache
def _attributes(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The public methods of a plugin class, to bind, and its other public class attributes."""
    methods: list[str] = []
    values: list[str] = []
    for attr in dir(cls):
        if attr.startswith("_") or attr in _UNBOUND:
            continue
        (methods if callable(getattr(cls, attr)) else values).append(attr)
    return tuple(methods), tuple(values)


class BoundPlugin:
    """A plugin with its cycle state bound in: what the session's combine loops call.

    Each public method of the plugin is there with the state as its first argument (bound when the
    cycle opens); every other public attribute is the plugin's, except the per-cycle flags
    ``failures_repeatable`` and ``node_local_filters``, which the state overrides when it sets them.
    An attribute the plugin lacks is missing here too (``getattr(bound, name, None)`` is None), at
    the cost of a plain attribute lookup.
    """

    def __init__(self, plugin: _Plugin, state: Any) -> None:
        methods, values = _attributes(type(plugin))
        d = self.__dict__
        for attr in values:
            d[attr] = getattr(plugin, attr)
        for attr, value in vars(plugin).items():
            if not attr.startswith("_"):
                d[attr] = value
        for attr in methods:
            d[attr] = partial(getattr(plugin, attr), state)
        self.plugin = plugin
        self.state = state
        self.name = plugin.name
        self.failures_repeatable: bool = getattr(state, "failures_repeatable", plugin.failures_repeatable)
        self.node_local_filters: bool = getattr(
            state, "node_local_filters", getattr(plugin, "node_local_filters", False)
        )

    if TYPE_CHECKING:

        def __getattr__(self, attr: str) -> Any: ...

    def __repr__(self) -> str:
        return f"<BoundPlugin {self.name}>"
