"""The deviceshare plugin: GPU sharing by memory, by whole cards, and by virtual GPUs.

Volcano's ``pkg/scheduler/plugins/deviceshare`` with the ``nvidia/gpushare`` and ``nvidia/vgpu`` devices of
``pkg/scheduler/api/devices``.

gpushare. A node has GPU cards when its allocatable holds ``volcano.sh/gpu-memory`` (the total, split evenly:
``memory // number`` per card) and a non-zero ``volcano.sh/gpu-number``; the ids in its
``volcano.sh/gpu-unhealthy-ids`` annotation are out of service. A pod on the node holds the cards of its
``volcano.sh/gpu-index`` annotation.

* ``deviceshare.GPUSharingEnable`` (false): a pod requesting ``volcano.sh/gpu-memory`` needs one card
  with that much memory free (the card's memory less the requests of the pods holding it), else the node
  fails with ``GpuShare no enough gpu memory on node <name>`` (resolvable); it gets the lowest such card.
* ``deviceshare.GPUNumberEnable`` (false): a pod requesting ``volcano.sh/gpu-number`` *n* needs *n* cards
  no pod holds, else ``GpuNumber no enough gpu number on node <name>``; it gets the *n* lowest idle ones.
* The cards chosen are written on the pod with its bind (``CycleResult.bind_annotations``):
  ``volcano.sh/gpu-index`` (``0,1``) and ``volcano.sh/predicate-time`` (the clock in nanoseconds, when
  the snapshot has one). Node order 0.

vGPU (``deviceshare.VGPUEnable``, false): the HAMi cards of :mod:`scheduler.vgpu`. A pod asking for vGPUs
needs its cards on the node (``deviceshare.SchedulePolicy`` ``binpack``, ``spread`` or none chooses them),
else ``hami-vgpuDeviceSharing error`` (resolvable); with ``deviceshare.ScheduleWeight`` > 0 a node scores its
cards' policy score (binpack: the memory used on each card taken, in percent, after the pod; spread: 100 per
unshared card), rounded, times the weight. The cards chosen go with the bind: ``volcano.sh/vgpu-ids-new`` (and
``volcano.sh/devices-to-allocate``), ``volcano.sh/vgpu-node``, ``volcano.sh/bind-phase: allocating`` and, when
the snapshot has a clock, ``volcano.sh/vgpu-time`` and ``volcano.sh/bind-time`` (seconds).
``deviceshare.GPUExclusiveRules`` (label maps) gives the pods matching a rule cards no other pod of that rule
holds (:mod:`scheduler.plugins.gpuexclusive`). Its rules are read as Volcano reads them (an empty map is
skipped), but what Volcano silently drops (not a list, a rule that is not a map, a label value that is not a
string) is a configuration error naming the argument.

As Volcano at start-up, a configuration enabling ``GPUSharingEnable`` with ``GPUNumberEnable``, or either with
``VGPUEnable``, is refused. Nodes without cards pass (Volcano has no device there to ask); the resource fit
still checks the totals. Pods placed earlier in the session hold their cards (``on_allocate``), and give them
back when unplaced (``on_deallocate``).

Differences: Volcano lets the predicates plugin's allocate handler pick the cards; here deviceshare does
it, so it needs no predicates plugin. Volcano takes the idle cards of ``gpu-number`` in Go map order (at
random); here the lowest ids. The Ascend switches, ``NodeLockEnable`` and the known-geometries ConfigMap
arguments are accepted with no effect (no NPU, node lock or MIG model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import AllocateHandler, ArgSpec, NodeOrder, Plugin, Predicate
from scheduler.model import Node, TaskStatus
from scheduler.plugins.gpuexclusive import ExclusiveCards, NodePod
from scheduler.points import Filter, FloatArray, IntArray
from scheduler.vgpu import (
    ASSIGNED_IDS,
    ASSIGNED_NODE,
    ASSIGNED_TIME,
    ASSIGNED_TO_ALLOCATE,
    BIND_PHASE,
    BIND_TIME,
    VgpuDevices,
    VgpuFit,
    VgpuUse,
    encode_pod_devices,
    node_score,
)

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = [
    "EXCLUSIVE_RULES",
    "GPU_INDEX",
    "GPU_MEMORY",
    "GPU_NUMBER",
    "PREDICATE_TIME",
    "VGPU_FAILURE",
    "Cards",
    "DeviceSharePlugin",
    "DeviceShareState",
    "exclusive_rules",
]

GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
EXCLUSIVE_RULES = "deviceshare.GPUExclusiveRules"
SHARING, NUMBER, VGPU = "deviceshare.GPUSharingEnable", "deviceshare.GPUNumberEnable", "deviceshare.VGPUEnable"
#: The reason a node's vGPU cards give for a pod they cannot take (Volcano's ``FilterNode`` message).
VGPU_FAILURE = "hami-vgpuDeviceSharing error"
#: Pods on a node whose cards count (Volcano adds a task's devices unless it is Releasing or Pipelined).
_NOT_HOLDING = frozenset({TaskStatus.RELEASING, TaskStatus.PIPELINED})


def _check_exclusive_rules(value: Any) -> str | None:
    """A list of maps from label names to string values (null: no rules)."""
    if value is None:
        return None
    if not isinstance(value, list):
        return f"expected a list of label maps, got {value!r}"
    for k, rule in enumerate(value):
        if not isinstance(rule, Mapping):
            return f"[{k}]: expected a map of labels, got {rule!r}"
        for label, v in rule.items():
            if not isinstance(label, str) or not isinstance(v, str):
                return f"[{k}].{label}: expected a string label value, got {v!r}"
    return None


def exclusive_rules(value: Any) -> tuple[dict[str, str], ...]:
    """The rules of a checked ``deviceshare.GPUExclusiveRules`` value (Volcano's ``parseExclusiveRules``:
    empty maps skipped)."""
    return tuple(dict(rule) for rule in (value or ()) if rule)


class Cards:
    """One node's GPU cards: each card's memory and the pods holding it (uid → GPU memory request)."""

    def __init__(self, name: str, memory: int, number: int, unhealthy: Sequence[int] = ()) -> None:
        self.name = name
        per_card = memory // number
        self.memory = {i: per_card for i in range(number) if i not in set(unhealthy)}
        self.holders: dict[int, dict[str, int]] = {i: {} for i in self.memory}

    @classmethod
    def of(cls, node: Node) -> Cards | None:
        """The node's cards, or None when it has none (no gpu-memory, or no gpu-number)."""
        scalars = node.allocatable.scalars
        memory, number = scalars.get(GPU_MEMORY), scalars.get(GPU_NUMBER)
        if memory is None or not number:
            return None
        return cls(node.name, memory, number, node.unhealthy_gpus)

    def free_memory(self, card: int) -> int:
        return max(self.memory[card] - sum(self.holders[card].values()), 0)

    def by_memory(self, request: int) -> list[int]:
        """The cards with ``request`` GPU memory free, lowest id first."""
        return [c for c in sorted(self.memory) if self.free_memory(c) >= request]

    def by_number(self, count: int) -> list[int]:
        """The ``count`` lowest cards no pod holds ([] when fewer are idle)."""
        idle = [c for c in sorted(self.memory) if not self.holders[c]]
        return idle[:count] if len(idle) >= count else []

    def hold(self, uid: str, cards: Sequence[int], memory: int) -> None:
        for c in cards:
            if c in self.holders:
                self.holders[c][uid] = memory

    def release(self, uid: str) -> None:
        for held in self.holders.values():
            held.pop(uid, None)


class DeviceShareState(PluginState):
    """deviceshare's cycle: its switches, each node's GPU cards and vGPU cards, and the pods holding them."""

    def __init__(
        self, session: SessionHandle, *, sharing: bool, number: bool, vgpu_on: bool, policy: str, weight: int
    ) -> None:
        super().__init__(session)
        self.sharing = sharing
        self.number = number
        #: Each node's GPU cards (None: it has none).
        self.cards: list[Cards | None] = []
        self.dim_memory = session.dim_index.get(GPU_MEMORY)
        self.dim_number = session.dim_index.get(GPU_NUMBER)
        #: The node of every pod holding cards, by uid.
        self.held: dict[str, int] = {}
        self.vgpu_on = vgpu_on
        self.policy = policy
        self.weight = weight
        #: Each node's vGPU cards (None: it has none, or vGPU is off).
        self.vgpus: list[VgpuDevices | ExclusiveCards | None] = [None] * len(session.nodes)
        #: The node and cards of every pod placed in this session on vGPU cards, by uid.
        self.vgpu_held: dict[str, tuple[int, tuple[tuple[VgpuUse, ...], ...]]] = {}


class DeviceSharePlugin(Plugin, Predicate, NodeOrder, AllocateHandler):
    """GPU sharing (see the module docstring)."""

    name = "deviceshare"
    node_local_filters = True
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        SHARING: ArgSpec("bool", False, "share cards by volcano.sh/gpu-memory"),
        NUMBER: ArgSpec("bool", False, "whole cards by volcano.sh/gpu-number"),
        "deviceshare.NodeLockEnable": ArgSpec("bool", False, "no effect (no node lock)"),
        VGPU: ArgSpec("bool", False, "HAMi vGPU cards (volcano.sh/vgpu-number, -memory, -cores)"),
        "deviceshare.AscendMindClusterVNPUEnable": ArgSpec("bool", False, "no effect (NPUs are not modelled)"),
        "deviceshare.AscendHAMiVNPUEnable": ArgSpec("bool", False, "no effect (NPUs are not modelled)"),
        "deviceshare.SchedulePolicy": ArgSpec("str", "", "vGPU card choice: binpack, spread, or none"),
        "deviceshare.ScheduleWeight": ArgSpec("int", 0, "the vGPU score's weight (0: no score)"),
        "deviceshare.KnownGeometriesCMName": ArgSpec("str", "volcano-vgpu-device-config", "no effect"),
        "deviceshare.KnownGeometriesCMNamespace": ArgSpec("str", "kube-system", "no effect"),
        EXCLUSIVE_RULES: ArgSpec(
            "any", None, "label maps of pods given vGPU cards no other pod of their rule holds", _check_exclusive_rules
        ),
    }

    def __init__(self, args: Mapping[str, Any], hierarchy: bool = False) -> None:
        super().__init__(args, hierarchy)
        #: The GPU exclusivity rules as Volcano reads them (applied to vGPU cards).
        self.exclusive_rules = exclusive_rules(self.args[EXCLUSIVE_RULES])

    @classmethod
    def check_arguments(cls, args: Mapping[str, Any]) -> tuple[str, str] | None:
        """Volcano's start-up refusal (``enablePredicate``): GPU sharing with GPU number, either with vGPU."""
        if args.get(SHARING) and args.get(NUMBER):
            return NUMBER, f"can not define true in both gpu sharing and gpu number ({SHARING} and {NUMBER})"
        if (args.get(SHARING) or args.get(NUMBER)) and args.get(VGPU):
            other = SHARING if args.get(SHARING) else NUMBER
            return VGPU, f"gpu-share and vgpu can't be used together ({other} and {VGPU})"
        return None

    def open(self, session: SessionHandle) -> DeviceShareState:
        """Each node's cards with the pods on it holding theirs, and its vGPU cards (see :meth:`_open_vgpu`)."""
        st = DeviceShareState(
            session,
            sharing=bool(self.args[SHARING]),
            number=bool(self.args[NUMBER]),
            vgpu_on=bool(self.args[VGPU]),
            policy=str(self.args["deviceshare.SchedulePolicy"]),
            weight=int(self.args["deviceshare.ScheduleWeight"]),
        )
        table = session.nodes
        st.cards = [Cards.of(n) for n in table.nodes]
        for i, cards in enumerate(st.cards):
            if cards is None:
                continue
            for t in table.tasks[i].values():
                if t.task.gpu_index and (self._memory(st, t) > 0 or self._count(st, t) > 0):
                    cards.hold(t.uid, t.task.gpu_index, self._memory(st, t))
                    st.held[t.uid] = i
        self._open_vgpu(st, session)
        return st

    def _open_vgpu(self, st: DeviceShareState, session: SessionHandle) -> None:
        """Each node's vGPU cards with the pods on it holding theirs (wrapped by the exclusivity rules)."""
        if not st.vgpu_on:
            return
        table = session.nodes
        for i, node in enumerate(table.nodes):
            if not node.vgpu:
                continue
            devices = VgpuDevices(node.name, node.vgpu)
            on_node = list(table.tasks[i].values())
            for t in on_node:
                if t.task.vgpu is not None and t.status not in _NOT_HOLDING:
                    devices.add_pod(t.uid, t.task.vgpu)
            if self.exclusive_rules:
                pods = [NodePod(t.key, t.uid, t.task.labels, t.task.vgpu) for t in on_node]
                st.vgpus[i] = ExclusiveCards.open(devices, self.exclusive_rules, pods)
            else:
                st.vgpus[i] = devices

    def _memory(self, st: DeviceShareState, task: TaskInfo) -> int:
        return int(task.req[st.dim_memory]) if st.dim_memory is not None else 0

    def _count(self, st: DeviceShareState, task: TaskInfo) -> int:
        return int(task.req[st.dim_number]) if st.dim_number is not None else 0

    def _wants(self, st: DeviceShareState, task: TaskInfo) -> bool:
        """Volcano's ``HasDeviceRequest`` of the gpushare device."""
        return (st.sharing and self._memory(st, task) > 0) or (st.number and self._count(st, task) > 0)

    def _wants_vgpu(self, st: DeviceShareState, task: TaskInfo) -> bool:
        """Volcano's ``HasDeviceRequest`` of the vGPU device."""
        return st.vgpu_on and task.task.vgpu is not None and bool(task.task.vgpu.requests)

    def vgpu_fit(self, st: DeviceShareState, task: TaskInfo, node: int) -> VgpuFit | None:
        """The cards ``task`` would take on node ``node`` (None: the node has no vGPU cards)."""
        devices = st.vgpus[node]
        pod = task.task.vgpu
        if devices is None or pod is None:
            return None
        if isinstance(devices, ExclusiveCards):
            return devices.fit(task.task.labels, pod, st.policy)
        return devices.fit(pod, st.policy)

    def _reason(self, st: DeviceShareState, task: TaskInfo, cards: Cards) -> str:
        """The node's failure for ``task`` ("" when its cards take it)."""
        if st.sharing and self._memory(st, task) > 0 and not cards.by_memory(self._memory(st, task)):
            return f"GpuShare no enough gpu memory on node {cards.name}"
        if st.number and self._count(st, task) > 0 and not cards.by_number(self._count(st, task)):
            return f"GpuNumber no enough gpu number on node {cards.name}"
        return ""

    def predicate(self, st: DeviceShareState, task: TaskInfo) -> Sequence[Filter]:
        """Nodes whose cards cannot take the pod's GPU memory, GPU count or vGPUs fail."""
        out: list[Filter] = []
        if self._wants(st, task):
            reasons = ["" if c is None else self._reason(st, task, c) for c in st.cards]
            passed = np.array([not r for r in reasons], dtype=np.bool_)
            out.append(Filter(self.name, passed, "no enough gpu", False, reasons))
        if self._wants_vgpu(st, task):
            fits = [self.vgpu_fit(st, task, i) for i in range(len(st.vgpus))]
            passed = np.array([f is None or not f.error for f in fits], dtype=np.bool_)
            out.append(Filter(self.name, passed, VGPU_FAILURE, False))
        return out

    def node_order(self, st: DeviceShareState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """gpushare scores 0; the vGPU cards their policy score, rounded, times ``ScheduleWeight`` (if > 0)."""
        out = np.zeros(len(nodes), dtype=np.float64)
        if st.weight <= 0 or not self._wants_vgpu(st, task):
            return out
        for k, i in enumerate(nodes.tolist()):
            fit = self.vgpu_fit(st, task, i)
            if fit is not None and not fit.error:
                out[k] = node_score(fit.score, st.weight)
        return out

    def on_allocate(self, st: DeviceShareState, task: TaskInfo) -> None:
        if task.node < 0:
            return
        notes: dict[str, str] = {}
        if self._wants(st, task):
            notes.update(self._allocate_gpushare(st, task))
        if self._wants_vgpu(st, task):
            notes.update(self._allocate_vgpu(st, task))
        if notes:
            st.session.bind_annotations[task.uid] = notes

    def _allocate_gpushare(self, st: DeviceShareState, task: TaskInfo) -> dict[str, str]:
        cards = st.cards[task.node]
        if cards is None:
            return {}
        memory = self._memory(st, task)
        chosen = cards.by_memory(memory)[:1] if memory > 0 else cards.by_number(self._count(st, task))
        if not chosen:
            return {}
        cards.hold(task.uid, chosen, memory)
        st.held[task.uid] = task.node
        notes = {GPU_INDEX: ",".join(str(c) for c in chosen)}
        now = st.session.snapshot.now
        if now is not None:
            notes[PREDICATE_TIME] = str(int(now * 1e9))
        return notes

    def _allocate_vgpu(self, st: DeviceShareState, task: TaskInfo) -> dict[str, str]:
        """Volcano's vGPU ``Allocate``: the cards taken and the annotations that go with the bind."""
        devices, pod = st.vgpus[task.node], task.task.vgpu
        if devices is None or pod is None:
            return {}
        if isinstance(devices, ExclusiveCards):
            fit = devices.allocate(task.key, task.uid, task.task.labels, pod, st.policy)
        else:
            fit = devices.allocate(task.uid, pod, st.policy)
        if fit.error:  # the predicate took the same cards: cannot happen
            return {}
        st.vgpu_held[task.uid] = (task.node, fit.devices)
        ids = encode_pod_devices(fit.devices)
        notes = {ASSIGNED_NODE: devices_name(devices), ASSIGNED_IDS: ids, ASSIGNED_TO_ALLOCATE: ids}
        notes[BIND_PHASE] = "allocating"
        now = st.session.snapshot.now
        if now is not None:
            notes[ASSIGNED_TIME] = notes[BIND_TIME] = str(int(now))
        return notes

    def on_deallocate(self, st: DeviceShareState, task: TaskInfo) -> None:
        node = st.held.pop(task.uid, -1)
        cards = st.cards[node] if node >= 0 else None
        if cards is not None:
            cards.release(task.uid)
        held = st.vgpu_held.pop(task.uid, None)
        if held is not None:
            devices = st.vgpus[held[0]]
            if isinstance(devices, ExclusiveCards):
                devices.release(task.key, task.uid, held[1])
            elif devices is not None:
                devices.sub_pod(task.uid, held[1])
        st.session.bind_annotations.pop(task.uid, None)


def devices_name(devices: VgpuDevices | ExclusiveCards) -> str:
    """The node of a node's vGPU cards."""
    return devices.inner.node if isinstance(devices, ExclusiveCards) else devices.node
