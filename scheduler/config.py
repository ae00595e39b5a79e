"""Scheduler configuration: Volcano's YAML format in, a frozen validated SchedulerConfig out."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import yaml

from scheduler.config_types import PluginOption, SchedulerConfig, Tier
from scheduler.framework import ArgSpec, Plugin
from scheduler.points import ExtensionPoint

if TYPE_CHECKING:
    from scheduler.registry import Registry

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_CONFIG_YAML",
    "PRODUCT_CONFIG_YAML",
    "SWITCHES",
    "ConfigError",
    "dump_config",
    "parse_config",
]


class ConfigError(ValueError):
    """An invalid scheduler configuration; ``path`` locates the offending value."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.detail = message
        super().__init__(f"{path}: {message}" if path else message)


#: Volcano's per-plugin switches → the extension points they gate (empty: accepted, no effect).
SWITCHES: Mapping[str, tuple[ExtensionPoint, ...]] = MappingProxyType(
    {
        "enableJobOrder": (ExtensionPoint.JOB_ORDER,),
        "enableJobReady": (ExtensionPoint.JOB_READY,),
        "enableJobPipelined": (ExtensionPoint.JOB_PIPELINED,),
        "enableJobEnqueued": (ExtensionPoint.JOB_ENQUEUEABLE, ExtensionPoint.JOB_ENQUEUED),
        "enableTaskOrder": (ExtensionPoint.TASK_ORDER,),
        "enablePreemptable": (ExtensionPoint.PREEMPTABLE,),
        "enableReclaimable": (ExtensionPoint.RECLAIMABLE,),
        "enablePreemptive": (ExtensionPoint.PREEMPTIVE,),
        "enableQueueOrder": (ExtensionPoint.QUEUE_ORDER,),
        "enablePredicate": (ExtensionPoint.PREDICATE,),
        "enableBestNode": (ExtensionPoint.BEST_NODE,),
        "enableNodeOrder": (ExtensionPoint.NODE_ORDER,),
        "enableTargetJob": (ExtensionPoint.TARGET_JOB,),
        "enableReservedNodes": (ExtensionPoint.RESERVED_NODES,),
        "enabledVictim": (ExtensionPoint.VICTIM_TASKS,),
        "enableJobStarving": (ExtensionPoint.JOB_STARVING,),
        "enabledOverused": (ExtensionPoint.OVERUSED,),
        "enabledAllocatable": (ExtensionPoint.ALLOCATABLE,),
        "enabledClusterOrder": (),
        "enabledHyperNodeOrder": (ExtensionPoint.HYPERNODE_ORDER,),
        "enabledSubJobReady": (ExtensionPoint.SUB_JOB_READY,),
        "enabledSubJobPipelined": (ExtensionPoint.SUB_JOB_PIPELINED,),
        "enabledSubJobOrder": (ExtensionPoint.SUB_JOB_ORDER,),
        "enabledHyperNodeGradient": (ExtensionPoint.HYPERNODE_GRADIENT,),
    }
)
_POINT_TO_SWITCH = {p: k for k, ps in SWITCHES.items() for p in ps}

#: Plugins that can run in hierarchical mode (``enableHierarchy: true``).
HIERARCHICAL_PLUGINS = frozenset({"drf", "capacity", "nodegroup"})


def _check_arg(value: Any, spec: ArgSpec, path: str) -> Any:
    kind = spec.kind
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"expected an integer, got {value!r}")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, f"expected a number, got {value!r}")
        return float(value)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            if value in ("1", "t", "T", "true", "TRUE", "True"):
                return True
            if value in ("0", "f", "F", "false", "FALSE", "False"):
                return False
        raise ConfigError(path, f"expected a boolean, got {value!r}")
    if kind == "str":
        if not isinstance(value, str):
            raise ConfigError(path, f"expected a string, got {value!r}")
        return value
    if kind == "map":
        if not isinstance(value, Mapping):
            raise ConfigError(path, f"expected a mapping, got {value!r}")
        return value
    if kind == "any":  # structured YAML, checked by the spec's ``check``
        return value
    raise ConfigError(path, f"unsupported argument kind {kind!r}")  # pragma: no cover


def _check_args(
    raw: Any,
    exact: Mapping[str, ArgSpec],
    prefixes: Mapping[str, ArgSpec],
    path: str,
    warnings: list[str] | None = None,
) -> Mapping[str, Any]:
    if raw is None:
        return MappingProxyType({})
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"expected a mapping of arguments, got {raw!r}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        sub = f"{path}.{key}"
        if not isinstance(key, str):
            raise ConfigError(sub, "argument names must be strings")
        spec = exact.get(key)
        if spec is None:
            spec = next((s for p, s in prefixes.items() if key.startswith(p)), None)
        if spec is None:
            known = ", ".join(sorted(exact)) or "none"
            raise ConfigError(sub, f"unknown argument {key!r} (known: {known})")
        try:
            checked = _check_arg(value, spec, sub)
            problem = spec.check(checked) if spec.check is not None else None
            if problem:
                raise ConfigError(sub, problem)
        except ConfigError as exc:
            if spec.lenient is None or warnings is None:
                raise
            warnings.append(f"{exc}; ignored: {spec.lenient} (as Volcano, which logs it)")
            continue
        out[key] = checked
    return MappingProxyType(out)


def _parse_plugin(raw: Any, path: str, registry: Registry, warnings: list[str] | None = None) -> PluginOption:
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"expected a plugin mapping with a name, got {raw!r}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.name", "plugin name is required")
    cls = registry.plugins.get(name)
    if cls is None:
        known = ", ".join(sorted(registry.plugins))
        raise ConfigError(f"{path}.name", f"unknown plugin {name!r} (known: {known})")
    disabled: set[ExtensionPoint] = set()
    hierarchy = False
    arguments: Mapping[str, Any] = MappingProxyType({})
    for key, value in raw.items():
        sub = f"{path}.{key}"
        if key == "name":
            continue
        if key == "arguments":
            arguments = _check_args(value, cls.arguments, cls.argument_prefixes, sub, warnings)
        elif key == "enableHierarchy":
            hierarchy = bool(_check_arg(value, ArgSpec("bool"), sub))
            if hierarchy and name not in HIERARCHICAL_PLUGINS:
                raise ConfigError(sub, f"plugin {name!r} has no hierarchical mode")
        elif key in SWITCHES:
            if not _check_arg(value, ArgSpec("bool"), sub):
                disabled.update(SWITCHES[key])
        elif key == "disabled":
            if not isinstance(value, list):
                raise ConfigError(sub, "expected a list of extension point names")
            for i, point in enumerate(value):
                try:
                    disabled.add(ExtensionPoint(point))
                except ValueError:
                    raise ConfigError(f"{sub}[{i}]", f"unknown extension point {point!r}") from None
        else:
            raise ConfigError(sub, f"unknown plugin option {key!r}")
    _check_together(cls, arguments, path)
    return PluginOption(name, frozenset(disabled), hierarchy, arguments)


def _check_together(cls: type[Plugin], arguments: Mapping[str, Any], path: str) -> None:
    """Refuse arguments that conflict with each other (``Plugin.check_arguments``)."""
    problem = cls.check_arguments(arguments)
    if problem is not None:
        raise ConfigError(f"{path}.arguments.{problem[0]}", problem[1])


def _parse_actions(raw: Any, registry: Registry) -> tuple[str, ...]:
    if raw is None:
        raise ConfigError("actions", 'required (e.g. "enqueue, allocate, backfill")')
    if isinstance(raw, str):
        names = [a.strip() for a in raw.split(",")]
    elif isinstance(raw, list) and all(isinstance(a, str) for a in raw):
        names = [a.strip() for a in raw]
    else:
        raise ConfigError("actions", f"expected a comma-separated string, got {raw!r}")
    names = [n for n in names if n]
    if not names:
        raise ConfigError("actions", "at least one action is required")
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name not in registry.actions:
            known = ", ".join(sorted(registry.actions))
            raise ConfigError(f"actions[{i}]", f"failed to find Action {name} (known: {known})")
        if name in seen:
            raise ConfigError(f"actions[{i}]", f"action {name!r} is listed twice")
        seen.add(name)
    return tuple(names)


def _parse_configurations(raw: Any, registry: Registry) -> Mapping[str, Mapping[str, Any]]:
    if raw is None:
        return MappingProxyType({})
    if not isinstance(raw, list):
        raise ConfigError("configurations", "expected a list of {name, arguments}")
    out: dict[str, Mapping[str, Any]] = {}
    for i, item in enumerate(raw):
        path = f"configurations[{i}]"
        if not isinstance(item, Mapping):
            raise ConfigError(path, "expected a mapping with name and arguments")
        unknown = set(item) - {"name", "arguments"}
        if unknown:
            raise ConfigError(f"{path}.{sorted(unknown)[0]}", "unknown key")
        name = item.get("name")
        cls = registry.actions.get(name) if isinstance(name, str) else None
        if cls is None:
            raise ConfigError(f"{path}.name", f"failed to find Action {name}")
        if name in out:
            raise ConfigError(f"{path}.name", f"action {name!r} is configured twice")
        out[str(name)] = _check_args(item.get("arguments"), cls.arguments, {}, f"{path}.arguments")
    return MappingProxyType(out)


def _check_conflicts(tiers: tuple[Tier, ...]) -> None:
    seen: dict[str, str] = {}
    for ti, tier in enumerate(tiers):
        names = {p.name: p for p in tier.plugins}
        for pi, plugin in enumerate(tier.plugins):
            path = f"tiers[{ti}].plugins[{pi}]"
            if plugin.name in seen:
                raise ConfigError(
                    f"{path}.name", f"plugin {plugin.name!r} is already configured at {seen[plugin.name]}"
                )
            seen[plugin.name] = path
            drf = names.get("drf")
            if plugin.name == "proportion" and drf is not None and drf.hierarchy:
                raise ConfigError(path, "proportion and drf with hierarchy enabled conflicts")
            if plugin.name == "drf" and plugin.hierarchy and "proportion" in names:
                raise ConfigError(f"{path}.enableHierarchy", "proportion and drf with hierarchy enabled conflicts")
    # proportion and capacity together are accepted, as Volcano accepts them: each registers
    # its own callbacks and the tiered combine rules decide (see docs/scheduler.md).


def parse_config(data: str | Mapping[str, Any], registry: Registry | None = None) -> SchedulerConfig:
    """Return the validated configuration for Volcano scheduler YAML (or its parsed mapping).

    Accepts ``actions`` as a comma-separated string, ``tiers`` of ``plugins`` with Volcano's
    ``enableXxx``/``enabledXxx`` switches (or a ``disabled:`` list of extension points),
    ``enableHierarchy`` and ``arguments``, per-action ``configurations`` and an ignored
    ``metrics`` section. A ConfigMap wrapping ``volcano-scheduler.conf`` is unwrapped.
    Raises :class:`ConfigError` naming the path of the first problem found.
    """
    if registry is None:
        from scheduler.registry import default_registry

        registry = default_registry()
    if isinstance(data, str):
        try:
            loaded = yaml.safe_load(data)
        except yaml.YAMLError as exc:
            raise ConfigError("", f"invalid YAML: {exc}") from exc
    else:
        loaded = data
    if not isinstance(loaded, Mapping):
        raise ConfigError("", "expected a mapping with actions and tiers")
    if loaded.get("kind") == "ConfigMap":
        conf = (loaded.get("data") or {}).get("volcano-scheduler.conf")
        if not isinstance(conf, str):
            raise ConfigError("data", "ConfigMap has no volcano-scheduler.conf entry")
        return parse_config(conf, registry)
    for key in loaded:
        if key not in ("actions", "tiers", "configurations", "metrics"):
            raise ConfigError(str(key), f"unknown key {key!r}")
    actions = _parse_actions(loaded.get("actions"), registry)
    raw_tiers = loaded.get("tiers") or []
    if not isinstance(raw_tiers, list):
        raise ConfigError("tiers", "expected a list of tiers")
    tiers: list[Tier] = []
    warnings: list[str] = []
    for ti, raw_tier in enumerate(raw_tiers):
        path = f"tiers[{ti}]"
        if not isinstance(raw_tier, Mapping) or not isinstance(raw_tier.get("plugins"), list):
            raise ConfigError(path, "expected a mapping with a plugins list")
        if set(raw_tier) - {"plugins"}:
            raise ConfigError(f"{path}.{sorted(set(raw_tier) - {'plugins'})[0]}", "unknown key")
        plugins = tuple(
            _parse_plugin(p, f"{path}.plugins[{pi}]", registry, warnings) for pi, p in enumerate(raw_tier["plugins"])
        )
        tiers.append(Tier(plugins))
    result_tiers = tuple(tiers)
    _check_conflicts(result_tiers)
    configurations = _parse_configurations(loaded.get("configurations"), registry)
    return SchedulerConfig(actions, result_tiers, configurations, tuple(warnings))


def dump_config(cfg: SchedulerConfig) -> str:
    """Return ``cfg`` as Volcano scheduler YAML (parses back to an equal config)."""
    tiers: list[dict[str, Any]] = []
    for tier in cfg.tiers:
        plugins: list[dict[str, Any]] = []
        for p in tier.plugins:
            item: dict[str, Any] = {"name": p.name}
            for switch in sorted({_POINT_TO_SWITCH[d] for d in p.disabled if d in _POINT_TO_SWITCH}):
                item[switch] = False
            if p.hierarchy:
                item["enableHierarchy"] = True
            if p.arguments:
                item["arguments"] = dict(p.arguments)
            plugins.append(item)
        tiers.append({"plugins": plugins})
    doc: dict[str, Any] = {"actions": ", ".join(cfg.actions), "tiers": tiers}
    if cfg.action_args:
        doc["configurations"] = [{"name": name, "arguments": dict(args)} for name, args in cfg.action_args.items()]
    return yaml.safe_dump(doc, sort_keys=False)


DEFAULT_CONFIG_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


#: The product's built-in configuration (volcanoweb runs it when no version is stored): Volcano's default plus
#: the enqueuegate plugin, which keeps a job that can never fit any node out of the queues' admission room
#: (ADR 0028). Volcano's own default (:data:`DEFAULT_CONFIG`) stays as it is, so its cases keep their decisions.
PRODUCT_CONFIG_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: enqueuegate
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def _default_config() -> SchedulerConfig:
    # Built without the registry (plugin classes import this module); the names are validated
    # against the default registry by the test suite.
    def opt(name: str) -> PluginOption:
        return PluginOption(name)

    return SchedulerConfig(
        ("enqueue", "allocate", "backfill"),
        (
            Tier((opt("priority"), opt("gang"), opt("conformance"))),
            Tier((opt("overcommit"), opt("drf"), opt("predicates"), opt("proportion"), opt("nodeorder"))),
        ),
    )


#: Volcano's compiled-in default configuration (``DefaultSchedulerConf``).
DEFAULT_CONFIG = _default_config()
