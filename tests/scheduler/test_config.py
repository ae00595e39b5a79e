"""Scheduler configuration: Volcano's YAML accepted as written, validated strictly."""

from __future__ import annotations

import pathlib

import pytest

from scheduler import DEFAULT_CONFIG, ConfigError, default_registry, dump_config, parse_config
from scheduler.config import DEFAULT_CONFIG_YAML
from scheduler.framework import Plugin
from scheduler.points import ExtensionPoint
from scheduler.registry import Registry, RegistryError

#: The project's own copy of the cookbook (never a path outside the repository).
COOKBOOK = pathlib.Path(__file__).resolve().parents[2] / "volcanoweb" / "demo" / "cookbook" / "12-scheduler-conf.yaml"


def test_default_config_mirrors_volcano() -> None:
    assert DEFAULT_CONFIG.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in t.plugins] for t in DEFAULT_CONFIG.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]
    assert parse_config(DEFAULT_CONFIG_YAML) == DEFAULT_CONFIG
    for name in DEFAULT_CONFIG.plugin_names():
        assert name in default_registry().plugins


def test_it_accepts_the_cookbook_config() -> None:
    text = COOKBOOK.read_text(encoding="utf-8")
    cfg = parse_config(text)
    assert cfg.actions == ("enqueue", "allocate", "backfill", "reclaim", "preempt")
    gang = cfg.tiers[0].plugins[1]
    assert gang.name == "gang"
    assert ExtensionPoint.PREEMPTABLE in gang.disabled
    assert cfg.tiers[1].plugins[-1].name == "binpack"


def test_switches_arguments_and_configurations_are_parsed() -> None:
    cfg = parse_config(
        """
actions: "enqueue,allocate"
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
    enableJobOrder: "false"
  - name: nodeorder
    arguments:
      leastrequested.weight: 2
      mostrequested.weight: 0
  - name: binpack
    arguments: {binpack.weight: 10, binpack.resources: nvidia.com/gpu, binpack.resources.nvidia.com/gpu: 5}
configurations:
- name: allocate
  arguments: {predicateErrorCacheEnable: false}
metrics: {type: prometheus}
"""
    )
    drf = cfg.tiers[0].plugins[0]
    assert drf.hierarchy
    assert ExtensionPoint.JOB_ORDER in drf.disabled
    assert cfg.tiers[0].plugins[1].arguments["leastrequested.weight"] == 2
    assert cfg.tiers[0].plugins[2].arguments["binpack.resources.nvidia.com/gpu"] == 5
    assert cfg.action_args["allocate"]["predicateErrorCacheEnable"] is False


def test_dump_config_round_trips() -> None:
    cfg = parse_config(
        """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang, enablePreemptable: false, enableJobStarving: false}]
- plugins: [{name: binpack, arguments: {binpack.weight: 3}}, {name: capacity, enableHierarchy: true}]
configurations: [{name: allocate, arguments: {minimumFeasibleNodes: 50}}]
"""
    )
    assert parse_config(dump_config(cfg)) == cfg
    assert parse_config(dump_config(DEFAULT_CONFIG)) == DEFAULT_CONFIG


def test_it_unwraps_a_configmap() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"volcano-scheduler.conf": DEFAULT_CONFIG_YAML}}
    assert parse_config(cm) == DEFAULT_CONFIG


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ('actions: "enqueue, allocat"', "actions[1]", "failed to find Action allocat"),
        ('actions: "allocate, allocate"', "actions[1]", "listed twice"),
        ("tiers: []", "actions", "required"),
        ('actions: ""', "actions", "at least one"),
        ('actions: "allocate"\ntiers: [{plugins: [{name: gangg}]}]', "tiers[0].plugins[0].name", "unknown plugin"),
        ('actions: "allocate"\ntiers: [{plugins: [{}]}]', "tiers[0].plugins[0].name", "required"),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang}]}, {plugins: [{name: priority}, '
            "{name: binpack, arguments: {binpack.weight: x}}]}]",
            "tiers[1].plugins[1].arguments.binpack.weight",
            "expected an integer",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: binpack, arguments: {binpack.weight: "2"}}]}]',
            "tiers[0].plugins[0].arguments.binpack.weight",
            "expected an integer",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: binpack, arguments: {binpack.wieght: 2}}]}]',
            "tiers[0].plugins[0].arguments.binpack.wieght",
            "unknown argument",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang, enableJobReady: maybe}]}]',
            "tiers[0].plugins[0].enableJobReady",
            "expected a boolean",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang, enableFoo: true}]}]',
            "tiers[0].plugins[0].enableFoo",
            "unknown plugin option",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang, disabled: [job_redy]}]}]',
            "tiers[0].plugins[0].disabled[0]",
            "unknown extension point",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang, enableHierarchy: true}]}]',
            "tiers[0].plugins[0].enableHierarchy",
            "no hierarchical mode",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: drf, enableHierarchy: true}, {name: proportion}]}]',
            "tiers[0].plugins[0].enableHierarchy",
            "proportion and drf with hierarchy enabled conflicts",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang}]}, {plugins: [{name: gang}]}]',
            "tiers[1].plugins[0].name",
            "already configured",
        ),
        ('actions: "allocate"\ntier: []', "tier", "unknown key"),
        (
            'actions: "allocate"\nconfigurations: [{name: allocate, arguments: {bogus: 1}}]',
            "configurations[0].arguments.bogus",
            "unknown argument",
        ),
        ('actions: "allocate"\nconfigurations: [{name: nope}]', "configurations[0].name", "failed to find Action"),
        ("actions: [", "", "invalid YAML"),
        ("- 1", "", "expected a mapping"),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: overcommit, arguments: {overcommit-factor: true}}]}]',
            "tiers[0].plugins[0].arguments.overcommit-factor",
            "expected a number",
        ),
    ],
)
def test_it_rejects_bad_config_naming_the_path(text: str, path: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert info.value.path == path
    assert message in str(info.value)
    if path:
        assert path in str(info.value)


def test_float_arguments_accept_ints() -> None:
    cfg = parse_config(
        'actions: "enqueue"\ntiers: [{plugins: [{name: overcommit, arguments: {overcommit-factor: 2}}]}]'
    )
    assert cfg.tiers[0].plugins[0].arguments["overcommit-factor"] == 2.0


def test_a_custom_registry_is_a_value() -> None:
    class Noop(Plugin):
        name = "noop"

    base = default_registry()
    reg = base.with_plugin(Noop)
    assert "noop" in reg.plugins
    assert "noop" not in base.plugins
    cfg = parse_config('actions: "allocate"\ntiers: [{plugins: [{name: noop}]}]', reg)
    assert cfg.plugin_names() == ("noop",)
    with pytest.raises(ConfigError):
        parse_config('actions: "allocate"\ntiers: [{plugins: [{name: noop}]}]')
    with pytest.raises(RegistryError):
        reg.with_plugin(Noop)
    assert Registry().plugins == {}


def test_proportion_and_capacity_load_together_and_both_decide() -> None:
    """Volcano accepts both plugins in one configuration (its reclaim tests configure both);
    each registers its callbacks, so allocatable is the AND of proportion's deserved share
    and capacity's capability."""
    from scheduler import run_cycle
    from scheduler.testing import make_job, make_node, make_queue, make_snapshot

    cfg = parse_config(
        'actions: "enqueue, allocate"\n'
        "tiers:\n"
        "- plugins: [{name: priority}, {name: gang}]\n"
        "- plugins: [{name: proportion}, {name: capacity}, {name: predicates}]\n"
    )
    assert cfg.plugin_names() == ("priority", "gang", "proportion", "capacity", "predicates")
    snap = make_snapshot(
        [make_node("n1", cpu="8", memory="32Gi")],
        # one queue: proportion deserves it the whole cluster, capacity caps it at its capability
        [make_job(f"j{i}", queue="qa", replicas=1, cpu="1", memory="1Gi") for i in range(4)],
        [make_queue("qa", capability={"cpu": "8"}, deserved={"cpu": "2", "memory": "2Gi"})],
    )
    only_proportion = parse_config(
        'actions: "enqueue, allocate"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}]\n- plugins: [{name: proportion}, {name: predicates}]\n"
    )
    assert len(run_cycle(snap, only_proportion).binds) == 4
    both = run_cycle(snap, cfg)
    assert len(both.binds) == 4  # capacity's real capability is the queue's capability (8 CPUs)
    assert both.queue_allocated["qa"]["cpu"] == 4000
    capped = make_snapshot(
        [make_node("n1", cpu="8", memory="32Gi")],
        [make_job(f"j{i}", queue="qa", replicas=1, cpu="1", memory="1Gi") for i in range(4)],
        [make_queue("qa", capability={"cpu": "2"})],
    )
    assert len(run_cycle(capped, cfg).binds) == 2


#: Every plugin Volcano registers (pkg/scheduler/plugins/factory.go).
VOLCANO_PLUGINS = [
    "drf",
    "gang",
    "deviceshare",
    "predicates",
    "priority",
    "nodeorder",
    "conformance",
    "binpack",
    "resource-strategy-fit",
    "tdm",
    "overcommit",
    "sla",
    "task-topology",
    "numa-aware",
    "cdp",
    "rescheduling",
    "usage",
    "pdb",
    "nodegroup",
    "network-topology-aware",
    "proportion",
    "capacity",
    "extender",
    "resourcequota",
]


def test_a_configuration_naming_every_volcano_plugin_loads() -> None:
    """proportion and capacity in tiers of their own (each may also share a tier, but not with hierarchical drf)."""
    cfg = parse_config({"actions": "allocate", "tiers": [{"plugins": [{"name": n}]} for n in VOLCANO_PLUGINS]})
    assert sorted(cfg.plugin_names()) == sorted(VOLCANO_PLUGINS)


#: Every action Volcano registers (pkg/scheduler/actions/factory.go).
VOLCANO_ACTIONS = ["reclaim", "allocate", "backfill", "preempt", "gangpreempt", "gangreclaim", "enqueue", "shuffle"]


def test_a_configuration_naming_every_volcano_action_loads() -> None:
    cfg = parse_config({"actions": ", ".join(VOLCANO_ACTIONS), "tiers": [{"plugins": [{"name": "gang"}]}]})
    assert list(cfg.actions) == VOLCANO_ACTIONS


#: Arguments Volcano's plugins read that change nothing here (no vGPU model), with a value Volcano accepts.
VOLCANO_ARGUMENTS = [
    ("deviceshare", {"deviceshare.GPUExclusiveRules": [{"app": "training", "team": "ml"}, {"workload": "inference"}]}),
]


@pytest.mark.parametrize(("plugin", "arguments"), VOLCANO_ARGUMENTS, ids=[a[0] for a in VOLCANO_ARGUMENTS])
def test_a_configuration_with_volcanos_arguments_loads(plugin: str, arguments: dict[str, object]) -> None:
    cfg = parse_config({"actions": "allocate", "tiers": [{"plugins": [{"name": plugin, "arguments": arguments}]}]})
    assert list(cfg.plugin_names()) == [plugin]


@pytest.mark.parametrize(
    ("plugin", "arguments", "path"),
    [
        ("deviceshare", {"deviceshare.GPUSharingEnable": "maybe"}, "arguments.deviceshare.GPUSharingEnable"),
        ("deviceshare", {"deviceshare.ScheduleWeight": "10"}, "arguments.deviceshare.ScheduleWeight"),
        ("numa-aware", {"weight": 1.5}, "arguments.weight"),
        ("usage", {"thresholds": [80]}, "arguments.thresholds"),
        ("extender", {"extender.managedResources": "nvidia.com/gpu"}, "arguments.extender.managedResources"),
        ("extender", {"extender.predicate": "filter"}, "arguments.extender.predicate"),
    ],
)
def test_the_new_plugins_name_a_wrong_argument(plugin: str, arguments: dict[str, object], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"actions": "allocate", "tiers": [{"plugins": [{"name": plugin, "arguments": arguments}]}]})
    assert path in str(err.value)
