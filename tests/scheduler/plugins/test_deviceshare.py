"""The deviceshare plugin's gpushare device (Volcano's ``pkg/scheduler/api/devices/nvidia/gpushare``) and its arguments.

Volcano's own tests of it, as tables: share_test.go (TestGetDevicesIdleGPUMemory_OverSubscribedCardReportsZero,
TestPredicateGPUbyMemory_OverSubscribedCardNotOffered), device_info_test.go (TestGetGPUMemoryOfPod,
TestGetGPUNumberOfPod: a pod's GPU memory and number are the sum over its containers, or the largest init
container's if larger, which is how the manifests sum every request; Volcano reads the limits, which Kubernetes
copies into unset requests), deviceshare_test.go's TestArguments (the schedule weight and policy are read),
gpuexclusive_test.go's TestLoadGPUExclusiveConfig and TestParseExclusiveRulesHandlesEdgeCases (the
``deviceshare.GPUExclusiveRules`` argument loads). The vGPU tests (TestVgpuScore, Test_FilterNode and the rest of
gpuexclusive_test.go) are in test_vgpu.py. The scenarios in between are ours: the predicate, the card chosen and
the annotation written with the bind, and Volcano's start-up refusal of GPU sharing with GPU number, or either
with vGPU."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import ConfigError
from scheduler.decode import load_manifests, snapshot_from_manifests
from scheduler.plugins.deviceshare import Cards, DeviceSharePlugin
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.snapshot import Snapshot

#: Volcano refuses GPU sharing and GPU number together (test_sharing_with_number_is_refused): one each.
SHARING = """
actions: allocate
tiers:
- plugins:
  - name: predicates
  - name: deviceshare
    arguments: {deviceshare.GPUSharingEnable: true}
"""
NUMBER = SHARING.replace("GPUSharingEnable", "GPUNumberEnable")


def _node(name: str, memory: int, number: int, unhealthy: str = "") -> str:
    ann = f"\n  annotations: {{volcano.sh/gpu-unhealthy-ids: '{unhealthy}'}}" if unhealthy else ""
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}{ann}
status:
  allocatable:
    {{cpu: '8', memory: 32Gi, pods: '10', volcano.sh/gpu-memory: '{memory}', volcano.sh/gpu-number: '{number}'}}
"""


def _pod(name: str, gpu: dict[str, int], node: str = "", index: str = "", init: dict[str, int] | None = None) -> str:
    req = ", ".join(f"volcano.sh/gpu-{k}: '{v}'" for k, v in gpu.items())
    placed = f"\n  nodeName: {node}" if node else ""
    inits = ""
    if init:
        ireq = ", ".join(f"volcano.sh/gpu-{k}: '{v}'" for k, v in init.items())
        inits = f"\n  initContainers:\n  - name: i\n    resources: {{requests: {{{ireq}}}}}"
    ann = f", volcano.sh/gpu-index: '{index}'" if index else ""
    phase = "Running" if node else "Pending"
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  uid: {name}
  annotations: {{scheduling.k8s.io/group-name: pg-{name}{ann}}}
spec:
  schedulerName: volcano{placed}
  containers:
  - name: c
    resources: {{requests: {{cpu: '1', memory: 1Gi, {req}}}}}{inits}
status: {{phase: {phase}}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: pg-{name}}}
spec: {{minMember: 1, queue: default}}
status: {{phase: {"Running" if node else "Inqueue"}}}
"""


def _snapshot(*docs: str) -> Snapshot:
    return snapshot_from_manifests(load_manifests("---".join(docs)))


def test_an_over_subscribed_card_reports_no_free_memory_and_is_not_offered() -> None:
    cards = Cards("n1", 1000, 1)
    cards.hold("p1", [0], 3000)
    assert cards.free_memory(0) == 0
    assert cards.by_memory(500) == []


POD_REQUEST_CASES = [
    ("GPUs required only in Containers", _pod("p", {"memory": 4}), 4),
    ("GPUs required both in initContainers and Containers", _pod("p", {"memory": 2}, init={"memory": 3}), 3),
    ("GPU number only in Containers", _pod("p", {"number": 4}), 4),
    ("GPU number both in initContainers and Containers", _pod("p", {"number": 2}, init={"number": 3}), 3),
]


@pytest.mark.parametrize(("name", "pod", "want"), POD_REQUEST_CASES, ids=[c[0] for c in POD_REQUEST_CASES])
def test_gpu_requests_of_a_pod(name: str, pod: str, want: int) -> None:
    snap = _snapshot(pod)
    scalars = snap.tasks[0].requests.scalars
    assert scalars.get("volcano.sh/gpu-memory", scalars.get("volcano.sh/gpu-number")) == want


def test_arguments_are_read() -> None:
    cfg = parse_config(
        {
            "actions": "allocate",
            "tiers": [
                {
                    "plugins": [
                        {
                            "name": "deviceshare",
                            "arguments": {
                                "deviceshare.VGPUEnable": True,
                                "deviceshare.SchedulePolicy": "binpack",
                                "deviceshare.ScheduleWeight": 10,
                            },
                        }
                    ]
                }
            ],
        }
    )
    plugin = DeviceSharePlugin(cfg.tiers[0].plugins[0].arguments)
    assert plugin.args["deviceshare.ScheduleWeight"] == 10
    assert plugin.args["deviceshare.SchedulePolicy"] == "binpack"


def _filters(snap: Snapshot, pod: str, conf: str) -> dict[str, str]:
    session = Session(snap, parse_config(conf), default_registry())
    task = next(t for j in session.jobs.values() for t in j.tasks.values() if t.task.name == pod)
    out = {}
    for f in session.filters(task):
        if f.plugin == "deviceshare":
            out = {n: f.reason_at(i) if not f.passed[i] else "" for i, n in enumerate(session.nodes.names)}
    return out


SCENARIOS: list[tuple[str, str, list[str], str, dict[str, Any]]] = [
    (
        "memory: a card with room is needed, one with the total free is not enough",
        SHARING,
        [_node("n1", 8000, 2), _pod("old", {"memory": 3000}, "n1", "0"), _pod("old2", {"memory": 3000}, "n1", "1")],
        _pod("new", {"memory": 2000}),
        {"reasons": {"n1": "GpuShare no enough gpu memory on node n1"}, "binds": {}},
    ),
    (
        "memory: the lowest card with room is chosen and written with the bind",
        SHARING,
        [_node("n1", 8000, 2), _pod("old", {"memory": 3000}, "n1", "0")],
        _pod("new", {"memory": 1000}),
        {"reasons": {"n1": ""}, "binds": {"default/new": "n1"}, "gpu_index": "0"},
    ),
    (
        "number: only cards no pod holds count",
        NUMBER,
        [_node("n1", 8000, 2), _pod("old", {"memory": 100}, "n1", "0")],
        _pod("new", {"number": 2}),
        {"reasons": {"n1": "GpuNumber no enough gpu number on node n1"}, "binds": {}},
    ),
    (
        "number: the lowest idle cards are chosen",
        NUMBER,
        [_node("n1", 12000, 3), _pod("old", {"memory": 100}, "n1", "0")],
        _pod("new", {"number": 2}),
        {"reasons": {"n1": ""}, "binds": {"default/new": "n1"}, "gpu_index": "1,2"},
    ),
    (
        "unhealthy cards are out of service",
        NUMBER,
        [_node("n1", 8000, 2, "0")],
        _pod("new", {"number": 2}),
        {"reasons": {"n1": "GpuNumber no enough gpu number on node n1"}, "binds": {}},
    ),
]


@pytest.mark.parametrize(("name", "conf", "cluster", "pod", "want"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_gpushare(name: str, conf: str, cluster: list[str], pod: str, want: dict[str, Any]) -> None:
    snap = _snapshot(*cluster, pod)
    assert _filters(snap, "new", conf) == want["reasons"]
    result = run_cycle(snap, parse_config(conf))
    assert dict(result.binds) == want["binds"]
    if "gpu_index" in want:
        assert result.bind_annotations["default/new"]["volcano.sh/gpu-index"] == want["gpu_index"]


def test_pods_of_one_session_share_cards_in_turn() -> None:
    """Two 3000-memory pods on one node with two 4000 cards: the second cannot share the first's card, so it gets
    card 1; a third of 1500 finds no card with room (the total free, 2000, is split 1000 + 1000)."""
    pods = [_pod(f"p{i}", {"memory": m}) for i, m in enumerate((3000, 3000, 1500))]
    result = run_cycle(_snapshot(_node("n1", 8000, 2), *pods), parse_config(SHARING))
    got = {k: v["volcano.sh/gpu-index"] for k, v in result.bind_annotations.items()}
    assert got == {"default/p0": "0", "default/p1": "1"}
    assert "GpuShare no enough gpu memory on node n1" in result.unschedulable["default/pg-p2"].message


def test_the_next_cycle_sees_the_cards_held() -> None:
    """advance() keeps the cards a bound pod got: a pod arriving next cycle cannot share its card."""
    from dataclasses import replace

    from scheduler.snapshot import advance

    first = _snapshot(_node("n1", 8000, 2), _pod("p0", {"memory": 3000}))
    result = run_cycle(first, parse_config(SHARING))
    later = _snapshot(_pod("p1", {"memory": 3000}))
    nxt = advance(first, result)
    nxt = replace(nxt, jobs=nxt.jobs + later.jobs, tasks=nxt.tasks + later.tasks)
    assert run_cycle(nxt, parse_config(SHARING)).bind_annotations["default/p1"]["volcano.sh/gpu-index"] == "1"


def _exclusive_rules(rules: Any) -> tuple[dict[str, str], ...]:
    arguments = {} if rules is _ABSENT else {"deviceshare.GPUExclusiveRules": rules}
    cfg = parse_config(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "deviceshare", "arguments": arguments}]}]}
    )
    return DeviceSharePlugin(cfg.tiers[0].plugins[0].arguments).exclusive_rules


_ABSENT = object()

#: gpuexclusive_test.go's TestLoadGPUExclusiveConfig and TestParseExclusiveRulesHandlesEdgeCases: the
#: ``deviceshare.GPUExclusiveRules`` argument loads (a list of label maps, empty maps skipped). Its "wrong type"
#: case is a configuration error here (deviation 12), in test_a_wrong_exclusive_rule_is_a_configuration_error.
EXCLUSIVE_RULE_CASES = [
    ("TestLoadGPUExclusiveConfig:defaults with no rules", _ABSENT, ()),
    (
        "TestLoadGPUExclusiveConfig:rules from map[string]interface{}",
        [{"app": "training", "team": "ml"}, {"workload": "inference"}],
        ({"app": "training", "team": "ml"}, {"workload": "inference"}),
    ),
    ("TestParseExclusiveRulesHandlesEdgeCases:nil input", None, ()),
    ("TestParseExclusiveRulesHandlesEdgeCases:empty slice", [], ()),
    ("TestParseExclusiveRulesHandlesEdgeCases:empty map skipped", [{}], ()),
]


@pytest.mark.parametrize(("name", "rules", "want"), EXCLUSIVE_RULE_CASES, ids=[c[0] for c in EXCLUSIVE_RULE_CASES])
def test_gpu_exclusive_rules_load(name: str, rules: Any, want: tuple[dict[str, str], ...]) -> None:
    assert _exclusive_rules(rules) == want


def test_gpu_exclusive_rules_from_yaml_text() -> None:
    """TestLoadGPUExclusiveConfig:rules from map[interface{}]interface{} (what Go's YAML decoder makes of a
    configuration file: here the same rules read from the file's text)."""
    cfg = parse_config(
        "actions: allocate\ntiers:\n- plugins:\n  - name: deviceshare\n"
        "    arguments:\n      deviceshare.GPUExclusiveRules:\n      - {app: training}\n"
    )
    assert DeviceSharePlugin(cfg.tiers[0].plugins[0].arguments).exclusive_rules == ({"app": "training"},)


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ("not a slice", "expected a list of label maps"),
        (["app=training"], "[0]: expected a map of labels"),
        ([{"app": "training", "gpus": 2}], "[0].gpus: expected a string label value"),
    ],
    ids=[
        "TestParseExclusiveRulesHandlesEdgeCases:wrong type",
        "ours: a rule that is not a map",
        "ours: a label value that is not a string",
    ],
)
def test_a_wrong_exclusive_rule_is_a_configuration_error(rules: Any, message: str) -> None:
    """Volcano drops what is not a list of string maps without a word; here the configuration names it."""
    with pytest.raises(ConfigError) as err:
        _exclusive_rules(rules)
    assert "deviceshare.GPUExclusiveRules" in str(err.value)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("arguments", "named", "message"),
    [
        (
            {"deviceshare.GPUSharingEnable": True, "deviceshare.GPUNumberEnable": True},
            "deviceshare.GPUNumberEnable",
            "can not define true in both gpu sharing and gpu number",
        ),
        (
            {"deviceshare.GPUSharingEnable": True, "deviceshare.VGPUEnable": True},
            "deviceshare.VGPUEnable",
            "gpu-share and vgpu can't be used together (deviceshare.GPUSharingEnable and deviceshare.VGPUEnable)",
        ),
        (
            {"deviceshare.GPUNumberEnable": True, "deviceshare.VGPUEnable": True},
            "deviceshare.VGPUEnable",
            "gpu-share and vgpu can't be used together (deviceshare.GPUNumberEnable and deviceshare.VGPUEnable)",
        ),
    ],
    ids=["sharing with number", "sharing with vgpu", "number with vgpu"],
)
def test_sharing_with_number_is_refused(arguments: dict[str, bool], named: str, message: str) -> None:
    """Volcano's enablePredicate stops the scheduler (klog.Fatal) on these; here the configuration does not load,
    naming the argument and both switches."""
    with pytest.raises(ConfigError) as err:
        parse_config({"actions": "allocate", "tiers": [{"plugins": [{"name": "deviceshare", "arguments": arguments}]}]})
    assert err.value.path == f"tiers[0].plugins[0].arguments.{named}"
    assert message in str(err.value)


def test_each_device_alone_loads() -> None:
    for switch in ("GPUSharingEnable", "GPUNumberEnable", "VGPUEnable"):
        cfg = parse_config(
            {
                "actions": "allocate",
                "tiers": [{"plugins": [{"name": "deviceshare", "arguments": {f"deviceshare.{switch}": True}}]}],
            }
        )
        assert cfg.tiers[0].plugins[0].arguments[f"deviceshare.{switch}"] is True
