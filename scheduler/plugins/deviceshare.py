"""The deviceshare plugin: GPU sharing by memory and by whole cards (Volcano's gpushare devices).

Volcano's ``pkg/scheduler/plugins/deviceshare`` with the ``nvidia/gpushare`` device of
``pkg/scheduler/api/devices``. A node has GPU cards when its allocatable holds ``volcano.sh/gpu-memory``
(the total, split evenly: ``memory // number`` per card) and a non-zero ``volcano.sh/gpu-number``; the
ids in its ``volcano.sh/gpu-unhealthy-ids`` annotation are out of service. A pod on the node holds the
cards of its ``volcano.sh/gpu-index`` annotation.

* ``deviceshare.GPUSharingEnable`` (false): a pod requesting ``volcano.sh/gpu-memory`` needs one card
  with that much memory free (the card's memory less the requests of the pods holding it), else the node
  fails with ``GpuShare no enough gpu memory on node <name>`` (resolvable); it gets the lowest such card.
* ``deviceshare.GPUNumberEnable`` (false): a pod requesting ``volcano.sh/gpu-number`` *n* needs *n* cards
  no pod holds, else ``GpuNumber no enough gpu number on node <name>``; it gets the *n* lowest idle ones.
* Nodes without cards pass (Volcano has no device there to ask); the resource fit still checks the totals.
* The cards chosen are written on the pod with its bind (``CycleResult.bind_annotations``):
  ``volcano.sh/gpu-index`` (``0,1``) and ``volcano.sh/predicate-time`` (the clock in nanoseconds, when
  the snapshot has one). Pods placed earlier in the session hold their cards (``on_allocate``), and give
  them back when unplaced (``on_deallocate``).
* node order: 0 (gpushare scores nothing; ``deviceshare.ScheduleWeight`` and ``SchedulePolicy`` weigh the
  vGPU and NPU devices, which are not modelled).

Differences: Volcano lets the predicates plugin's allocate handler pick the cards; here deviceshare does
it, so it needs no predicates plugin. Volcano takes the idle cards of ``gpu-number`` in Go map order (at
random); here the lowest ids. ``deviceshare.VGPUEnable``, the Ascend switches, ``NodeLockEnable`` and the
known-geometries ConfigMap arguments are accepted with no effect (no vGPU, NPU or node lock model), as is
``deviceshare.GPUExclusiveRules`` (a list of label maps: pods matching all labels of a rule get vGPU cards no
other pod of that rule holds; Volcano applies it to the vGPU device only). Its rules are read as Volcano reads
them (an empty map is skipped), but what Volcano silently drops (not a list, a rule that is not a map, a
label value that is not a string) is a configuration error naming the argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.framework import AllocateHandler, ArgSpec, NodeOrder, Plugin, Predicate
from scheduler.model import Node
from scheduler.points import Filter, FloatArray, IntArray

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import TaskInfo

__all__ = [
    "EXCLUSIVE_RULES",
    "GPU_INDEX",
    "GPU_MEMORY",
    "GPU_NUMBER",
    "PREDICATE_TIME",
    "Cards",
    "DeviceSharePlugin",
    "exclusive_rules",
]

GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
EXCLUSIVE_RULES = "deviceshare.GPUExclusiveRules"


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


class DeviceSharePlugin(Plugin, Predicate, NodeOrder, AllocateHandler):
    """GPU sharing (see the module docstring)."""

    name = "deviceshare"
    node_local_filters = True
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "deviceshare.GPUSharingEnable": ArgSpec("bool", False, "share cards by volcano.sh/gpu-memory"),
        "deviceshare.GPUNumberEnable": ArgSpec("bool", False, "whole cards by volcano.sh/gpu-number"),
        "deviceshare.NodeLockEnable": ArgSpec("bool", False, "no effect (no node lock)"),
        "deviceshare.VGPUEnable": ArgSpec("bool", False, "no effect (vGPU is not modelled)"),
        "deviceshare.AscendMindClusterVNPUEnable": ArgSpec("bool", False, "no effect (NPUs are not modelled)"),
        "deviceshare.AscendHAMiVNPUEnable": ArgSpec("bool", False, "no effect (NPUs are not modelled)"),
        "deviceshare.SchedulePolicy": ArgSpec("str", "", "binpack or spread; no effect on gpushare"),
        "deviceshare.ScheduleWeight": ArgSpec("int", 0, "the device score's weight; gpushare scores 0"),
        "deviceshare.KnownGeometriesCMName": ArgSpec("str", "volcano-vgpu-device-config", "no effect"),
        "deviceshare.KnownGeometriesCMNamespace": ArgSpec("str", "kube-system", "no effect"),
        EXCLUSIVE_RULES: ArgSpec(
            "any", None, "label maps of pods given vGPU cards of their own; no effect (no vGPU)", _check_exclusive_rules
        ),
    }

    def __init__(self, args: Mapping[str, Any], hierarchy: bool = False) -> None:
        super().__init__(args, hierarchy)
        #: The GPU exclusivity rules as Volcano reads them (it applies them to vGPU cards only).
        self.exclusive_rules = exclusive_rules(self.args[EXCLUSIVE_RULES])

    def on_session_open(self, session: SessionHandle) -> None:
        self.session = session
        self.sharing = bool(self.args["deviceshare.GPUSharingEnable"])
        self.number = bool(self.args["deviceshare.GPUNumberEnable"])
        table = session.nodes
        self.cards: list[Cards | None] = [Cards.of(n) for n in table.nodes]
        self.dim_memory = session.dim_index.get(GPU_MEMORY)
        self.dim_number = session.dim_index.get(GPU_NUMBER)
        #: The node of every pod holding cards, by uid.
        self.held: dict[str, int] = {}
        for i, cards in enumerate(self.cards):
            if cards is None:
                continue
            for t in table.tasks[i].values():
                if t.task.gpu_index and (self._memory(t) > 0 or self._count(t) > 0):
                    cards.hold(t.uid, t.task.gpu_index, self._memory(t))
                    self.held[t.uid] = i

    def _memory(self, task: TaskInfo) -> int:
        return int(task.req[self.dim_memory]) if self.dim_memory is not None else 0

    def _count(self, task: TaskInfo) -> int:
        return int(task.req[self.dim_number]) if self.dim_number is not None else 0

    def _wants(self, task: TaskInfo) -> bool:
        """Volcano's ``HasDeviceRequest``."""
        return (self.sharing and self._memory(task) > 0) or (self.number and self._count(task) > 0)

    def _reason(self, task: TaskInfo, cards: Cards) -> str:
        """The node's failure for ``task`` ("" when its cards take it)."""
        if self.sharing and self._memory(task) > 0 and not cards.by_memory(self._memory(task)):
            return f"GpuShare no enough gpu memory on node {cards.name}"
        if self.number and self._count(task) > 0 and not cards.by_number(self._count(task)):
            return f"GpuNumber no enough gpu number on node {cards.name}"
        return ""

    def predicate(self, task: TaskInfo) -> Sequence[Filter]:
        """Nodes whose cards cannot take the pod's GPU memory or GPU count fail."""
        if not self._wants(task):
            return ()
        reasons = ["" if c is None else self._reason(task, c) for c in self.cards]
        passed = np.array([not r for r in reasons], dtype=np.bool_)
        return [Filter(self.name, passed, "no enough gpu", False, reasons)]

    def node_order(self, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """gpushare scores every node 0."""
        return np.zeros(len(nodes), dtype=np.float64)

    def on_allocate(self, task: TaskInfo) -> None:
        cards = self.cards[task.node] if task.node >= 0 else None
        if cards is None or not self._wants(task):
            return
        memory = self._memory(task)
        chosen = cards.by_memory(memory)[:1] if memory > 0 else cards.by_number(self._count(task))
        if not chosen:
            return
        cards.hold(task.uid, chosen, memory)
        self.held[task.uid] = task.node
        notes = {GPU_INDEX: ",".join(str(c) for c in chosen)}
        now = self.session.snapshot.now
        if now is not None:
            notes[PREDICATE_TIME] = str(int(now * 1e9))
        self.session.bind_annotations[task.uid] = notes

    def on_deallocate(self, task: TaskInfo) -> None:
        node = self.held.pop(task.uid, -1)
        cards = self.cards[node] if node >= 0 else None
        if cards is not None:
            cards.release(task.uid)
        self.session.bind_annotations.pop(task.uid, None)
