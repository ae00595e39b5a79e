"""deviceshare's vGPU device (Volcano's ``pkg/scheduler/api/devices/nvidia/vgpu``) and GPU exclusivity.

Volcano's tests, each case under its Go test and case name:

* ``plugins/deviceshare/deviceshare_test.go``: TestVgpuScore (binpack and spread, the device score and the
  node order it gives) and Test_FilterNode, on nodes whose cards are registered as Volcano's device plugin
  registers them (``volcano.sh/node-vgpu-register``) and whose pods hold cards by their
  ``volcano.sh/vgpu-ids-new`` annotation, through an opened session;
* ``plugins/deviceshare/gpuexclusive_test.go``: TestPodMatchesRule and TestMatchingRules (the rule match, a
  table), TestCapGPUsOnlyAffectsSpecifiedIndices, TestReservedGPUsForPod,
  TestPodMatchingMultipleRulesSeesUnionOfReservedGPUs, TestNonMatchingPodDoesNotReserve, TestEndToEndExclusive
  and TestOnSessionOpenWrapsDevices: the Go tests set the wrapper's rule state by hand; here the pods holding the
  cards are on the node, labelled for their rules, and the session's deviceshare plugin builds it at open;
* ``api/devices/nvidia/vgpu``: utils_test.go (TestCheckGPUtype, TestCheckGPUUUID, TestGPUUUIDConstraints,
  TestGetPodGroupKey, TestDeviceHasPodFromSameGroup, TestSortedDeviceIndicesByPolicy_PicksExpectedDevice,
  TestGPUScore, TestBinpackStacksSequentialPods, TestDecodeContainerDevicesRejectsInvalidUsage),
  spread_integration_test.go (whole cycles), hamicore_test.go and device_info_test.go's TestGetGPUMemoryOfPod,
  TestAddResource and TestAddResourceSetsPodGroupKey.

The scenarios marked ``ours`` check what the Go tests do not: the bind annotations, the next cycle, exclusivity
over a whole cycle, and the pool spec's simulated cards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from scheduler import parse_config, run_cycle
from scheduler.cycle_state import BoundPlugin
from scheduler.decode import snapshot_from_manifests
from scheduler.plugins.deviceshare import VGPU_FAILURE, DeviceSharePlugin
from scheduler.plugins.gpuexclusive import ExclusiveCards, matching_rules, pod_matches_rule
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.snapshot import Snapshot
from scheduler.vgpu import (
    VgpuCard,
    VgpuDevices,
    VgpuPod,
    VgpuRequest,
    VgpuUse,
    check_gpu_type,
    container_requests,
    decode_pod_devices,
    uuid_allowed,
    vgpu_pod,
)

RULES = [{"app": "training", "team": "ml"}, {"workload": "inference"}]


def _conf(policy: str = "binpack", weight: int = 0, rules: Any = None) -> str:
    args: dict[str, Any] = {"deviceshare.VGPUEnable": True, "deviceshare.SchedulePolicy": policy}
    if weight:
        args["deviceshare.ScheduleWeight"] = weight
    if rules is not None:
        args["deviceshare.GPUExclusiveRules"] = rules
    plugins = [{"name": "gang"}, {"name": "predicates"}, {"name": "deviceshare", "arguments": args}]
    return str({"actions": "allocate", "tiers": [{"plugins": plugins}]}).replace("'", '"')


def node(name: str, cards: list[tuple[str, int, int]], card_type: str = "NVIDIA") -> dict[str, Any]:
    """A node with vGPU cards ``(uuid, sharing count, memory)``, registered as the device plugin does."""
    register = "".join(f"{u},{n},{m},{card_type},true,hami-core:" for u, n, m in cards)
    alloc = {
        "cpu": "16",
        "memory": "64Gi",
        "pods": "20",
        "volcano.sh/vgpu-number": str(sum(n for _, n, _ in cards)),
        "volcano.sh/vgpu-memory": str(sum(m for _, _, m in cards)),
        "volcano.sh/vgpu-cores": str(100 * len(cards)),
    }
    meta = {"name": name, "annotations": {"volcano.sh/node-vgpu-register": register}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"allocatable": alloc}}


def pod(
    name: str,
    limits: Mapping[str, Any] | None = None,
    *,
    on: str = "",
    holds: str = "",
    labels: Mapping[str, str] | None = None,
    group: str = "",
    annotations: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """A pod asking for vGPUs (``limits``) or holding cards (``holds``: its ``vgpu-ids-new``), with its PodGroup."""
    group = group or f"pg-{name}"
    ann = {"scheduling.k8s.io/group-name": group, **(annotations or {})}
    if holds:
        ann["volcano.sh/vgpu-ids-new"] = holds
    resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if limits:
        resources["limits"] = {k if "/" in k else f"volcano.sh/vgpu-{k}": str(v) for k, v in limits.items()}
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": resources}]}
    if on:
        spec["nodeName"] = on
    meta = {"name": name, "uid": f"uid-{name}", "labels": dict(labels or {}), "annotations": ann}
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": group},
        "spec": {"minMember": 1, "queue": "default"},
        "status": {"phase": "Running" if on else "Inqueue"},
    }
    status = {"phase": "Running" if on else "Pending"}
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}, pg]


def snapshot(*objects: dict[str, Any] | list[dict[str, Any]]) -> Snapshot:
    docs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for o in objects:
        for d in o if isinstance(o, list) else [o]:
            key = f"{d['kind']}/{d['metadata']['name']}"
            if key not in seen:  # pods sharing a PodGroup write it once
                seen.add(key)
                docs.append(d)
    return snapshot_from_manifests(list(enumerate(docs, start=1)))


def opened(snap: Snapshot, conf: str) -> tuple[Session, BoundPlugin]:
    session = Session(snap, parse_config(conf), default_registry())
    plugin = session.plugin("deviceshare")
    assert isinstance(plugin.plugin, DeviceSharePlugin)
    return session, plugin


def task_of(session: Session, name: str) -> Any:
    return next(t for j in session.jobs.values() for t in j.tasks.values() if t.task.name == name)


# --------------------------------------------------------------------------- deviceshare_test.go


def test_vgpu_score_binpack() -> None:
    """TestVgpuScore (binpack): a 30000 MiB card shared by 10, one pod holding 3000 of it; a pod asking one vGPU
    of 1000 passes, and the card's binpack score after it is 4000 x 100 / 30000 (the node order rounds it and
    multiplies it by the weight)."""
    snap = snapshot(
        node("node1", [("GPU-0", 10, 30000)]),
        pod("held", on="node1", holds="GPU-0,NVIDIA,3000,0:"),
        pod("p3", {"number": 1, "memory": 1000}),
    )
    session, plugin = opened(snap, _conf("binpack", weight=1))
    task = task_of(session, "p3")
    fit = plugin.vgpu_fit(task, 0)
    assert fit is not None
    assert fit.error == ""
    assert fit.score == pytest.approx(4000 * 100 / 30000)
    assert session.node_scores(task, np.array([0], dtype=np.intp))[0] == 13.0


def test_vgpu_score_spread() -> None:
    """TestVgpuScore (spread): an idle card passes; its score is taken after the pod is counted on it, so it is 0
    (Volcano's GPUScore rewards a card no pod shares, which the pod just placed now does); the Go test's check,
    that the score is not above 100.05, holds."""
    snap = snapshot(node("node2", [("GPU-0", 10, 30000)]), pod("p4", {"number": 1, "memory": 1000}))
    session, plugin = opened(snap, _conf("spread", weight=1))
    fit = plugin.vgpu_fit(task_of(session, "p4"), 0)
    assert fit is not None
    assert fit.error == ""
    assert fit.score == 0.0
    assert fit.score - 100 <= 0.05


def test_filter_node_three_cards_of_different_memory() -> None:
    """Test_FilterNode: case0, should allocated 3 card with diff memory for pod (three cores at 100% each: the
    whole of each card, whatever its memory)."""
    snap = snapshot(
        node("node1", [("GPU-0", 10, 30000), ("GPU-1", 10, 20000), ("GPU-2", 10, 30000)]),
        pod("p1", {"number": 3, "cores": 100}),
    )
    session, plugin = opened(snap, _conf("binpack"))
    fit = plugin.vgpu_fit(task_of(session, "p1"), 0)
    assert fit is not None
    assert fit.error == ""
    assert sorted((u.uuid, u.memory, u.cores) for c in fit.devices for u in c) == [
        ("GPU-0", 30000, 100),
        ("GPU-1", 20000, 100),
        ("GPU-2", 30000, 100),
    ]


# --------------------------------------------------------------------------- gpuexclusive_test.go

POD_MATCHES_RULE = [
    ("pod matches rule 0 (app=training, team=ml)", {"app": "training", "team": "ml"}, 0, True),
    ("pod matches rule 0 with extra labels", {"app": "training", "team": "ml", "env": "prod"}, 0, True),
    ("pod missing one label from rule 0", {"app": "training"}, 0, False),
    ("pod has wrong value for rule 0", {"app": "training", "team": "data"}, 0, False),
    ("pod matches rule 1 (workload=inference)", {"workload": "inference"}, 1, True),
    ("pod with nil labels matches nothing", None, 0, False),
]


@pytest.mark.parametrize(
    ("name", "labels", "rule", "want"), POD_MATCHES_RULE, ids=[f"TestPodMatchesRule:{c[0]}" for c in POD_MATCHES_RULE]
)
def test_pod_matches_rule(name: str, labels: dict[str, str] | None, rule: int, want: bool) -> None:
    assert pod_matches_rule(labels, RULES[rule]) is want


MATCHING_RULES = [
    ("matches rule 0 only", {"app": "training", "team": "ml"}, 1),
    ("matches rule 1 only", {"workload": "inference"}, 1),
    ("matches both rules", {"app": "training", "team": "ml", "workload": "inference"}, 2),
    ("matches no rules", {"app": "serving"}, 0),
    ("nil labels matches nothing", None, 0),
]


@pytest.mark.parametrize(
    ("name", "labels", "want"), MATCHING_RULES, ids=[f"TestMatchingRules:{c[0]}" for c in MATCHING_RULES]
)
def test_matching_rules(name: str, labels: dict[str, str] | None, want: int) -> None:
    assert len(matching_rules(labels, RULES)) == want


TRAINING = {"app": "training", "team": "ml"}
INFERENCE = {"workload": "inference"}


def _exclusive(cards: int, held: Mapping[int, tuple[str, Mapping[str, str]]]) -> tuple[Session, ExclusiveCards]:
    """A node of ``cards`` 16384 MiB cards shared by 10, ``held[card] = (pod, labels)`` holding one vGPU each, in
    a session with the Go tests' two rules; returns the node's exclusivity wrapper."""
    objs: list[Any] = [node("test-node", [(f"GPU-{i}", 10, 16384) for i in range(cards)])]
    for card, (name, labels) in held.items():
        objs.append(pod(name, on="test-node", holds=f"GPU-{card},NVIDIA,1000,0:", labels=labels))
    session, plugin = opened(snapshot(*objs), _conf(rules=RULES))
    wrapper = plugin.state.vgpus[0]
    assert isinstance(wrapper, ExclusiveCards)
    return session, wrapper


def test_cap_gpus_only_affects_specified_indices() -> None:
    """TestCapGPUsOnlyAffectsSpecifiedIndices: capping cards 0 and 1 (each used once) sets their sharing count to
    their use; cards 2 and 3 keep 10; restoring gives every card 10 again."""
    _, w = _exclusive(4, {0: ("user-a", {}), 1: ("user-b", {})})
    saved = w.cap({0, 1})
    assert [w.inner.cards[i].number for i in range(4)] == [1, 1, 10, 10]
    w.restore(saved)
    assert [w.inner.cards[i].number for i in range(4)] == [10, 10, 10, 10]


def test_reserved_gpus_for_pod() -> None:
    """TestReservedGPUsForPod: pod-a (rule 0) holds card 0, pod-b (rule 1) card 1: a new rule-0 pod sees card 0
    reserved and not card 1 (exclusivity within a rule only); a pod matching no rule sees none."""
    _, w = _exclusive(3, {0: ("pod-a", TRAINING), 1: ("pod-b", INFERENCE)})
    assert w.reserved(TRAINING) == {0}
    assert w.reserved({"app": "serving"}) == set()


def test_pod_matching_multiple_rules_sees_union_of_reserved_gpus() -> None:
    """TestPodMatchingMultipleRulesSeesUnionOfReservedGPUs: a pod matching both rules sees cards 0 and 1, not 2."""
    _, w = _exclusive(3, {0: ("pod-a", TRAINING), 1: ("pod-b", INFERENCE)})
    assert w.reserved({**TRAINING, **INFERENCE}) == {0, 1}


def test_non_matching_pod_does_not_reserve() -> None:
    """TestNonMatchingPodDoesNotReserve: one idle card, a pod matching no rule: nothing reserved, no pod tracked."""
    _, w = _exclusive(1, {})
    assert w.reserved({"app": "serving"}) == set()
    assert w.pod_rules == {}


def test_end_to_end_exclusive() -> None:
    """TestEndToEndExclusive: with pod-a (rule 0) on card 0 and pod-b (rule 1) on card 1 of four, a training pod
    sees three cards with room (card 0 capped); a serving pod reserves nothing and sees all four at 10."""
    _, w = _exclusive(4, {0: ("pod-a", TRAINING), 1: ("pod-b", INFERENCE)})
    saved = w.cap(w.reserved(TRAINING))
    available = sum(1 for c in w.inner.cards.values() if c.number > c.used_num)
    w.restore(saved)
    assert available == 3
    assert w.reserved({"app": "serving"}) == set()
    assert [w.inner.cards[i].number for i in range(4)] == [10, 10, 10, 10]


def test_open_wraps_devices() -> None:
    """TestOnSessionOpenWrapsDevices: at session open a node's cards are wrapped, and pod-a (rule 0), holding
    card 0, makes rule 0 hold card 0 and not card 1."""
    _, w = _exclusive(2, {0: ("pod-a", TRAINING)})
    assert w.rule_cards == {0: {0}}
    assert w.pod_rules == {"default/pod-a": {0}}


def test_exclusive_rule_pods_take_cards_of_their_own_over_a_cycle() -> None:
    """ours: three training pods and an inference pod on a node of two cards (binpack stacks pods on the busiest
    card; PodGroups in name order): the inference pod takes card 0, the first training pod shares it (another
    rule), the second may not share the first's card and takes card 1, the third finds none."""
    snap = snapshot(
        node("n1", [("GPU-0", 10, 16384), ("GPU-1", 10, 16384)]),
        pod("t1", {"number": 1, "memory": 1000}, labels=TRAINING),
        pod("t2", {"number": 1, "memory": 1000}, labels=TRAINING),
        pod("t3", {"number": 1, "memory": 1000}, labels=TRAINING),
        pod("i1", {"number": 1, "memory": 1000}, labels=INFERENCE),
    )
    result = run_cycle(snap, parse_config(_conf(rules=RULES)))
    ids = {k: v["volcano.sh/vgpu-ids-new"] for k, v in result.bind_annotations.items()}
    assert ids == {
        "default/i1": "GPU-0,NVIDIA,1000,0:",
        "default/t1": "GPU-0,NVIDIA,1000,0:",
        "default/t2": "GPU-1,NVIDIA,1000,0:",
    }
    assert VGPU_FAILURE in result.unschedulable["default/pg-t3"].message


def test_exclusivity_holds_into_the_next_cycle() -> None:
    """ours: a training pod bound last cycle holds its card by its annotation; the next training pod gets the other
    card although binpack prefers the busier one."""
    snap = snapshot(
        node("n1", [("GPU-0", 10, 16384), ("GPU-1", 10, 16384)]),
        pod("old", on="n1", holds="GPU-0,NVIDIA,8000,0:", labels=TRAINING),
        pod("new", {"number": 1, "memory": 1000}, labels=TRAINING),
    )
    result = run_cycle(snap, parse_config(_conf(rules=RULES)))
    assert result.bind_annotations["default/new"]["volcano.sh/vgpu-ids-new"] == "GPU-1,NVIDIA,1000,0:"
    without = run_cycle(snap, parse_config(_conf()))
    assert without.bind_annotations["default/new"]["volcano.sh/vgpu-ids-new"] == "GPU-0,NVIDIA,1000,0:"


# --------------------------------------------------------------------------- api/devices/nvidia/vgpu

CHECK_GPU_TYPE = [
    ("Single GPUInUse value matches", "NVIDIA", None, True),
    ("GPUInUse mixed case matches", "nvidia", None, True),
    ("Multiple GPUInUse values, one matches", "AMD,NVIDIA,INTEL", None, True),
    ("Multiple GPUInUse values, none matches", "AMD,INTEL,MLU", None, False),
    ("Single GPUNoUse value matches", None, "NVIDIA", False),
    ("GPUNoUse mixed case matches", None, "nvidia", False),
    ("Multiple GPUNoUse values, one matches", None, "AMD,NVIDIA,INTEL", False),
    ("Multiple GPUNoUse values, none matches", None, "AMD,INTEL,MLU", True),
    ("Empty annotations map", None, None, True),
    ("Nil annotations map", None, None, True),
]


@pytest.mark.parametrize(
    ("name", "use", "nouse", "want"), CHECK_GPU_TYPE, ids=[f"TestCheckGPUtype:{c[0]}" for c in CHECK_GPU_TYPE]
)
def test_check_gpu_type(name: str, use: str | None, nouse: str | None, want: bool) -> None:
    assert check_gpu_type(use, nouse, "NVIDIA") is want


CHECK_GPU_UUID = [
    ("no constraint", "", "", "GPU-0", True),
    ("empty allowlist is ignored", "  ", "", "GPU-0", True),
    ("separator-only allowlist is ignored", ", ,", "", "GPU-0", True),
    ("allowlist exact match", "GPU-0, GPU-1", "", "GPU-1", True),
    ("allowlist ignores empty entries", "GPU-0,, GPU-1,", "", "GPU-1", True),
    ("allowlist rejects partial match", "GPU-10", "", "GPU-1", False),
    ("allowlist rejects empty device UUID", "GPU-0,", "", "", False),
    ("denylist rejects match", "", "GPU-0, GPU-1", "GPU-1", False),
    ("denylist constraint rejects empty device UUID", "", "GPU-0,", "", False),
    ("denylist wins over allowlist", "GPU-1", "GPU-1", "GPU-1", False),
]


@pytest.mark.parametrize(
    ("name", "allow", "deny", "uuid", "want"), CHECK_GPU_UUID, ids=[f"TestCheckGPUUUID:{c[0]}" for c in CHECK_GPU_UUID]
)
def test_check_gpu_uuid(name: str, allow: str, deny: str, uuid: str, want: bool) -> None:
    assert uuid_allowed(allow, deny, uuid) is want


def _devices(cards: int, memory: int = 16384, sharing: int = 4) -> VgpuDevices:
    """Go's makeGPUDevices: ``cards`` cards GPU-0000A, GPU-0000B, ... of ``memory`` shared by ``sharing``."""
    return VgpuDevices("node-1", [VgpuCard(i, f"GPU-0000{chr(65 + i)}", sharing, memory) for i in range(cards)])


def _worker(memory: int, annotations: Mapping[str, str] | None = None) -> VgpuPod:
    """Go's makeVGPUPod (without spread or PodGroup): one vGPU of ``memory`` MiB and 25 cores."""
    ann = dict(annotations or {})
    limits = {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": memory, "volcano.sh/vgpu-cores": 25}
    out = vgpu_pod("default", ann, [{"limits": limits}])
    assert out is not None
    return out


GPU_UUID_CONSTRAINTS = [
    ("allowlist selects requested GPU", {"volcano.sh/vgpu-use-gpuuuid": "GPU-0000A"}, "GPU-0000A", ""),
    ("denylist excludes GPU", {"volcano.sh/vgpu-nouse-gpuuuid": "GPU-0000B"}, "GPU-0000A", ""),
    ("unknown allowed UUID is unschedulable", {"volcano.sh/vgpu-use-gpuuuid": "GPU-unknown"}, "", "vgpu-use-gpuuuid"),
    (
        "denylist excludes all GPUs",
        {"volcano.sh/vgpu-nouse-gpuuuid": "GPU-0000A,GPU-0000B"},
        "",
        "vgpu-nouse-gpuuuid",
    ),
]


@pytest.mark.parametrize(
    ("name", "annotations", "want_uuid", "want_error"),
    GPU_UUID_CONSTRAINTS,
    ids=[f"TestGPUUUIDConstraints:{c[0]}" for c in GPU_UUID_CONSTRAINTS],
)
def test_gpu_uuid_constraints(name: str, annotations: dict[str, str], want_uuid: str, want_error: str) -> None:
    fit = _devices(2).fit(_worker(4096, annotations), "")
    if want_error:
        assert want_error in fit.error
    else:
        assert fit.error == ""
        assert fit.devices[0][0].uuid == want_uuid


GROUP_KEYS = [
    ("nil pod", "default", None, ""),
    ("nil annotations", "ns", {}, ""),
    ("scheduling.k8s.io/group-name", "default", {"scheduling.k8s.io/group-name": "my-pg"}, "default/my-pg"),
    (
        "scheduling.volcano.sh/group-name (Volcano API)",
        "ns1",
        {"scheduling.volcano.sh/group-name": "job-pg"},
        "ns1/job-pg",
    ),
    (
        "k8s annotation takes precedence over volcano",
        "ns",
        {"scheduling.k8s.io/group-name": "k8s-pg", "scheduling.volcano.sh/group-name": "volcano-pg"},
        "ns/k8s-pg",
    ),
]


@pytest.mark.parametrize(
    ("name", "namespace", "annotations", "want"), GROUP_KEYS, ids=[f"TestGetPodGroupKey:{c[0]}" for c in GROUP_KEYS]
)
def test_get_pod_group_key(name: str, namespace: str, annotations: dict[str, str] | None, want: str) -> None:
    """A pod's PodGroup key as the vGPU device reads it ("nil pod": a pod with no annotation, which the core
    cannot be handed without a pod; its key is as empty)."""
    view = vgpu_pod(namespace, annotations or {}, [{"limits": {"volcano.sh/vgpu-number": 1}}])
    assert view is not None
    assert view.group == want


SAME_GROUP = [
    ("empty currentKey", ("ns/pg", 1000, 0), "", False),
    ("no pod from same group", ("ns/other", 1000, 0), "ns/my-pg", False),
    ("same group with non-zero usage", ("ns/my-pg", 1000, 50), "ns/my-pg", True),
    ("same group but zero usage (released)", ("ns/my-pg", 0, 0), "ns/my-pg", False),
    ("empty PodMap", None, "ns/pg", False),
]


@pytest.mark.parametrize(
    ("name", "holder", "key", "want"), SAME_GROUP, ids=[f"TestDeviceHasPodFromSameGroup:{c[0]}" for c in SAME_GROUP]
)
def test_device_has_pod_from_same_group(name: str, holder: tuple[str, int, int] | None, key: str, want: bool) -> None:
    devices = _devices(1)
    if holder is not None:
        group, memory, cores = holder
        devices.add_pod("uid1", VgpuPod(devices=((VgpuUse("GPU-0000A", "NVIDIA", memory, cores),),), group=group))
    assert devices.cards[0].has_group(key) is want


SORTED_BY_POLICY = [
    ("binpack picks busier device", 2, True, "binpack", 0),
    ("spread picks idle device over shared one", 2, True, "spread", 1),
    ("unset policy preserves legacy descending-index order", 3, False, "", 2),
]


@pytest.mark.parametrize(
    ("name", "cards", "seed", "policy", "want"),
    SORTED_BY_POLICY,
    ids=[f"TestSortedDeviceIndicesByPolicy_PicksExpectedDevice:{c[0]}" for c in SORTED_BY_POLICY],
)
def test_sorted_device_indices_by_policy(name: str, cards: int, seed: bool, policy: str, want: int) -> None:
    devices = _devices(cards)
    if seed:  # card 0 used once, 4096 MiB
        devices.add_pod("seed", VgpuPod(devices=((VgpuUse("GPU-0000A", "NVIDIA", 4096, 0),),)))
    fit = devices.fit(_worker(4096), policy)
    assert fit.error == ""
    assert fit.devices[0][0].uuid == devices.cards[want].card.uuid


GPU_SCORE = [
    ("spread rewards idle GPU", "spread", (0, 0), 100.0),
    ("spread does not reward shared GPU", "spread", (1, 4096), 0.0),
    ("spread does not reward full GPU", "spread", (4, 16384), 0.0),
    ("binpack rewards full GPU most", "binpack", (4, 16384), 100.0),
    ("binpack does not reward idle GPU", "binpack", (0, 0), 0.0),
    ("unset policy returns zero", "", (1, 4096), 0.0),
]


@pytest.mark.parametrize(("name", "policy", "used", "want"), GPU_SCORE, ids=[f"TestGPUScore:{c[0]}" for c in GPU_SCORE])
def test_gpu_score(name: str, policy: str, used: tuple[int, int], want: float) -> None:
    card = _devices(1).cards[0]
    card.used_num, card.used_mem = used
    assert card.score(policy) == want


def test_binpack_stacks_sequential_pods() -> None:
    """TestBinpackStacksSequentialPods: three 4096 MiB pods, binpack, on three cards: all on one card."""
    devices = _devices(3)
    uuids = []
    for uid in "abc":
        fit = devices.fit(_worker(4096), "binpack", apply=True)
        assert fit.error == ""
        devices.record(uid, "", fit.devices)
        uuids.append(fit.devices[0][0].uuid)
    assert len(set(uuids)) == 1


DECODE_CONTAINER = [
    ("valid entry", "GPU-0,NVIDIA,4096,30:", [("GPU-0", "NVIDIA", 4096, 30)]),
    ("negative memory is skipped", "GPU-0,NVIDIA,-5,30:", []),
    ("negative cores is skipped", "GPU-0,NVIDIA,4096,-1:", []),
    ("non-numeric usage is skipped", "GPU-0,NVIDIA,abc,30:", []),
    ("entry with missing fields is skipped", "GPU-0,NVIDIA:", []),
    (
        "valid entry kept when mixed with invalid",
        "GPU-0,NVIDIA,-5,30:GPU-1,NVIDIA,2048,10:",
        [("GPU-1", "NVIDIA", 2048, 10)],
    ),
]


@pytest.mark.parametrize(
    ("name", "text", "want"),
    DECODE_CONTAINER,
    ids=[f"TestDecodeContainerDevicesRejectsInvalidUsage:{c[0]}" for c in DECODE_CONTAINER],
)
def test_decode_container_devices(name: str, text: str, want: list[tuple[str, str, int, int]]) -> None:
    (container,) = decode_pod_devices(text)
    assert [(u.uuid, u.type, u.memory, u.cores) for u in container] == want


SPREAD_INTEGRATION = [
    # name, cards, [(pod, spread, group)], the card each pod gets (None: does not fit), whether the two differ
    ("TestSpreadPreventsCoLocation", 2, [("worker-0", True, "job-1"), ("worker-1", True, "job-1")], "differ"),
    ("TestBinpackAllowsCoLocation", 2, [("worker-0", False, "job-1"), ("worker-1", False, "job-1")], "fit"),
    ("TestSpreadDifferentGroupsCanShare", 1, [("worker-0", True, "job-1"), ("worker-1", True, "job-2")], "same"),
    ("TestSpreadWithNoRoomFails", 1, [("worker-0", True, "job-1"), ("worker-1", True, "job-1")], "second fails"),
    ("TestMixedAnnotations", 2, [("worker-0", True, "job-1"), ("worker-1", False, "job-1")], "fit"),
]


@pytest.mark.parametrize(("name", "cards", "pods", "want"), SPREAD_INTEGRATION, ids=[c[0] for c in SPREAD_INTEGRATION])
def test_spread_integration(name: str, cards: int, pods: list[tuple[str, bool, str]], want: str) -> None:
    """spread_integration_test.go, as whole cycles: the pods (one vGPU of 4096 MiB, 25% cores, one PodGroup per
    ``group``) placed in turn on a node of 16384 MiB cards shared by 4, binpack."""
    objs: list[Any] = [node("node-1", [(f"GPU-0000{chr(65 + i)}", 4, 16384) for i in range(cards)])]
    for name_, spread, group in pods:
        ann = {"volcano.sh/vgpu-podgroup-policy": "spread"} if spread else {}
        objs.append(pod(name_, {"number": 1, "memory": 4096, "cores": 25}, group=group, annotations=ann))
    result = run_cycle(snapshot(*objs), parse_config(_conf("binpack")))
    got = [result.bind_annotations.get(f"default/{p[0]}", {}).get("volcano.sh/vgpu-ids-new") for p in pods]
    if want == "second fails":
        assert got[0] is not None
        assert got[1] is None
        return
    assert None not in got
    if want == "differ":
        assert got[0] != got[1]
    if want == "same":
        assert got[0] == got[1]


HAMI_ADD_POD = [
    ("fresh add increments counters and seeds PodMap", False),
    ("duplicate add is a no-op", True),
    ("add after Allocate's TryAddPod and addToPodMap does not double-count", True),
]


@pytest.mark.parametrize(
    ("name", "before"), HAMI_ADD_POD, ids=[f"TestHAMICoreFactory_AddPod:{c[0]}" for c in HAMI_ADD_POD]
)
def test_hami_core_add_pod(name: str, before: bool) -> None:
    """A pod counts once on a card: adding it again (or after the session's own allocation) changes nothing."""
    devices = _devices(1, memory=16384, sharing=10)
    held = VgpuPod(devices=((VgpuUse("GPU-0000A", "NVIDIA", 1000, 25),),))
    if before:
        devices.add_pod("pod-a", held)
    devices.add_pod("pod-a", held)
    card = devices.cards[0]
    assert (card.used_num, card.used_mem, card.used_core) == (1, 1000, 25)
    assert "pod-a" in card.pods


def test_hami_core_add_pod_distinct_uids_accumulate() -> None:
    """TestHAMICoreFactory_AddPodDistinctUIDsAccumulate."""
    devices = _devices(1, sharing=10)
    for uid in ("pod-a", "pod-b", "pod-c"):
        devices.add_pod(uid, VgpuPod(devices=((VgpuUse("GPU-0000A", "NVIDIA", 1000, 25),),)))
    card = devices.cards[0]
    assert (card.used_num, card.used_mem, card.used_core) == (3, 3000, 75)


def test_hami_core_sub_pod_removes_entry() -> None:
    """TestHAMICoreFactory_SubPodRemovesEntry."""
    devices = _devices(1, sharing=10)
    use = ((VgpuUse("GPU-0000A", "NVIDIA", 1000, 25),),)
    devices.add_pod("pod-a", VgpuPod(devices=use))
    devices.sub_pod("pod-a", use)
    card = devices.cards[0]
    assert "pod-a" not in card.pods
    assert (card.used_num, card.used_mem, card.used_core) == (0, 0, 0)
    devices.add_pod("pod-a", VgpuPod(devices=use))
    assert (card.used_num, card.used_mem) == (1, 1000)


def test_get_gpu_memory_of_pod() -> None:
    """device_info_test.go TestGetGPUMemoryOfPod: GPUs required only in Containers (per container: 1 x 3000, 3 x
    5000)."""
    requests = container_requests(
        [
            {"limits": {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 3000}},
            {"limits": {"volcano.sh/vgpu-number": 3, "volcano.sh/vgpu-memory": 5000}},
        ]
    )
    assert [(r.number, r.memory) for r in requests] == [(1, 3000), (3, 5000)]


ADD_RESOURCE = [
    ("Pod assigned to known GPU UUID", "GPU-1234,NVIDIA,16384,0", True),
    ("Pod assigned to unknown GPU UUID", "GPU-5678,NVIDIA,16384,0", False),
    ("Pod without AssignedIDsAnnotations", "", False),
]


@pytest.mark.parametrize(("name", "ids", "want"), ADD_RESOURCE, ids=[f"TestAddResource:{c[0]}" for c in ADD_RESOURCE])
def test_add_resource(name: str, ids: str, want: bool) -> None:
    devices = VgpuDevices("n", [VgpuCard(0, "GPU-1234", 10, 16384)])
    devices.add_pod("pod-abc", VgpuPod(devices=decode_pod_devices(ids)))
    assert ("pod-abc" in devices.cards[0].pods) is want


def test_add_resource_sets_pod_group_key() -> None:
    """TestAddResourceSetsPodGroupKey: a held card records the pod's PodGroup key."""
    devices = VgpuDevices("n", [VgpuCard(0, "GPU-1234", 10, 16384)])
    view = vgpu_pod(
        "default",
        {"volcano.sh/vgpu-ids-new": "GPU-1234,NVIDIA,4096,0", "scheduling.k8s.io/group-name": "my-job-pg"},
        [],
    )
    assert view is not None
    devices.add_pod("pod-with-group", view)
    assert devices.cards[0].pods["pod-with-group"].group == "default/my-job-pg"


# --------------------------------------------------------------------------- ours: whole cycles


def test_cards_chosen_go_with_the_bind_and_hold_next_cycle() -> None:
    """ours: the bind carries the cards taken (and the node, the bind phase, the clock); a pod arriving the next
    cycle sees the card used by the pod's annotation (binpack would stack it there, but 384 MiB are left)."""
    from dataclasses import replace

    from scheduler.snapshot import advance

    first = replace(
        snapshot(node("n1", [("GPU-0", 2, 16384), ("GPU-1", 2, 16384)]), pod("p0", {"memory": 16000})), now=1.7e9
    )
    result = run_cycle(first, parse_config(_conf("binpack")))
    notes = result.bind_annotations["default/p0"]
    assert notes["volcano.sh/vgpu-ids-new"] == notes["volcano.sh/devices-to-allocate"] == "GPU-0,NVIDIA,16000,0:"
    assert notes["volcano.sh/vgpu-node"] == "n1"
    assert notes["volcano.sh/bind-phase"] == "allocating"
    assert notes["volcano.sh/vgpu-time"] == notes["volcano.sh/bind-time"] == "1700000000"
    # advance() keeps the cards taken, as the product writes the annotations on the pod with its bind.
    nxt = advance(first, result)
    later = snapshot(pod("p1", {"memory": 1000}))
    nxt = replace(nxt, tasks=nxt.tasks + later.tasks, jobs=nxt.jobs + later.jobs)
    again = run_cycle(nxt, parse_config(_conf("binpack")))
    assert again.bind_annotations["default/p1"]["volcano.sh/vgpu-ids-new"] == "GPU-1,NVIDIA,1000,0:"


@pytest.mark.parametrize(
    ("limits", "annotations", "binds"),
    [
        ({"number": 1, "memory-percentage": 50}, {}, "GPU-1,NVIDIA,8192,0:"),
        ({"number": 1, "cores": 100}, {}, "GPU-0,NVIDIA,16384,100:"),
        ({"number": 1, "memory": 100}, {"volcano.sh/vgpu-mode": "mig"}, None),
        ({"number": 1, "memory": 100}, {"nvidia.com/use-gputype": "A100"}, None),
        ({"number": 1, "memory": 100}, {"nvidia.com/nouse-gputype": "A100"}, "GPU-1,NVIDIA,100,0:"),
        ({"number": 3}, {}, None),
    ],
    ids=[
        "ours: a memory percentage of each card (no policy: the highest id first)",
        "ours: 100% of the cores needs a card no pod shares",
        "ours: a pod asking for another sharing mode",
        "ours: a pod asking for another card type",
        "ours: a pod refusing another card type",
        "ours: more cards than the node has",
    ],
)
def test_what_a_pod_asks(limits: dict[str, int], annotations: dict[str, str], binds: str | None) -> None:
    snap = snapshot(
        node("n1", [("GPU-0", 4, 16384), ("GPU-1", 4, 16384)]),
        pod("held", on="n1", holds="GPU-1,NVIDIA,100,10:"),
        pod("p", limits, annotations=annotations),
    )
    result = run_cycle(snap, parse_config(_conf("")))
    got = result.bind_annotations.get("default/p", {}).get("volcano.sh/vgpu-ids-new")
    assert got == binds
    if binds is None:
        assert VGPU_FAILURE in result.unschedulable["default/pg-p"].message


def test_registration_needs_the_vgpu_resources() -> None:
    """ours: a node registering cards without allocatable vGPU resources has none (Volcano's NewGPUDevices)."""
    doc = node("n1", [("GPU-0", 4, 16384)])
    del doc["status"]["allocatable"]["volcano.sh/vgpu-cores"]
    assert snapshot(doc).nodes[0].vgpu == ()
    assert snapshot(node("n1", [("GPU-0", 4, 16384)])).nodes[0].vgpu == (VgpuCard(0, "GPU-0", 4, 16384),)


def test_requests_read_as_volcano_reads_them() -> None:
    """ours: memory alone asks for one card; no memory takes the whole card (percentage 100); a container without
    vGPU resources asks nothing; a resource set only in requests is read there."""
    assert container_requests(
        [
            {"limits": {"volcano.sh/vgpu-memory": 3000}},
            {"limits": {"volcano.sh/vgpu-number": 2}},
            {"limits": {"cpu": 1}},
            {"requests": {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-cores": 30}},
        ]
    ) == (VgpuRequest(1, 3000), VgpuRequest(2, 0, 100), VgpuRequest(1, 0, 100, 30))
