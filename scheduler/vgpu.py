"""HAMi-style virtual GPUs: the cards a node registers, what a pod asks of them, and their sharing.

Volcano's ``nvidia/vgpu`` device of ``pkg/scheduler/api/devices`` (read for behaviour, written anew here), in its
``hami-core`` mode (software slicing: every card is shared by memory and core percentage):

* A node has vGPU cards when its ``volcano.sh/node-vgpu-register`` annotation lists them (the device plugin's
  registration: ``uuid,count,memory,type,health,mode`` per card, cards separated by ``:``; a card's id is its
  position) and its allocatable holds non-zero ``volcano.sh/vgpu-number``, ``volcano.sh/vgpu-cores`` and
  ``volcano.sh/vgpu-memory``. ``count`` is how many pods may share the card, ``memory`` its memory (MiB).
* A container asks for vGPUs with ``volcano.sh/vgpu-number`` (cards; a ``volcano.sh/vgpu-memory`` alone asks for
  one), ``volcano.sh/vgpu-memory`` (MiB per card; none: the whole card), ``volcano.sh/vgpu-memory-percentage``
  (a share of each card's memory, instead) and ``volcano.sh/vgpu-cores`` (percent of each card; 100: the card
  alone). Volcano reads them from the container's limits; here the limits, else the requests (Kubernetes makes
  a container set both alike).
* A pod on a node holds the cards of its ``volcano.sh/vgpu-ids-new`` annotation (per container ``;``, per card
  ``uuid,type,memory,cores:``), which the scheduler writes with the bind.

:class:`VgpuDevices` is one node's cards in a session: Volcano's ``checkNodeGPUSharingPredicateAndScore`` (the
cards a pod would take, by policy: ``binpack`` the most used memory first, ``spread`` the least shared first,
none the highest id first) and its score, and the accounting of the pods holding them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "ASSIGNED_IDS",
    "ASSIGNED_NODE",
    "ASSIGNED_TIME",
    "ASSIGNED_TO_ALLOCATE",
    "BIND_PHASE",
    "BIND_TIME",
    "BINPACK",
    "SPREAD",
    "VGPU_CORES",
    "VGPU_MEMORY",
    "VGPU_MEMORY_PERCENTAGE",
    "VGPU_NUMBER",
    "VGPU_REGISTER",
    "VgpuCard",
    "VgpuDevices",
    "VgpuFit",
    "VgpuPod",
    "VgpuRequest",
    "VgpuUse",
    "check_gpu_type",
    "container_requests",
    "decode_pod_devices",
    "encode_pod_devices",
    "node_score",
    "node_vgpu_cards",
    "parse_register",
    "register_text",
    "simulated_cards",
    "uuid_allowed",
    "vgpu_pod",
]

VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_REGISTER = "volcano.sh/node-vgpu-register"
ASSIGNED_IDS = "volcano.sh/vgpu-ids-new"
ASSIGNED_TO_ALLOCATE = "volcano.sh/devices-to-allocate"
ASSIGNED_NODE = "volcano.sh/vgpu-node"
ASSIGNED_TIME = "volcano.sh/vgpu-time"
BIND_TIME = "volcano.sh/bind-time"
BIND_PHASE = "volcano.sh/bind-phase"
MODE_ANNOTATION = "volcano.sh/vgpu-mode"
USE_TYPE = "nvidia.com/use-gputype"
NOUSE_TYPE = "nvidia.com/nouse-gputype"
USE_UUID = "volcano.sh/vgpu-use-gpuuuid"
NOUSE_UUID = "volcano.sh/vgpu-nouse-gpuuuid"
GROUP_POLICY = "volcano.sh/vgpu-podgroup-policy"
HAMI_CORE = "hami-core"
NVIDIA = "NVIDIA"
BINPACK, SPREAD = "binpack", "spread"
#: A container's memory percentage when it asks for none (Volcano's ``DefaultMemPercentage``).
NO_PERCENTAGE = 101
_GROUPS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
_TRUE, _FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")


@dataclass(frozen=True, slots=True)
class VgpuCard:
    """A registered card: its id (position in the registration), UUID, sharing count, memory (MiB), type and
    health (read, not used for placement, as in Volcano)."""

    index: int
    uuid: str
    number: int
    memory: int
    type: str = NVIDIA
    health: bool = True


@dataclass(frozen=True, slots=True)
class VgpuRequest:
    """One container's vGPU request (Volcano's ``ContainerDeviceRequest``): cards, MiB per card, the memory
    percentage per card (101: none) and the core percentage per card."""

    number: int
    memory: int = 0
    percentage: int = NO_PERCENTAGE
    cores: int = 0


@dataclass(frozen=True, slots=True)
class VgpuUse:
    """A card a container holds: its UUID, type, the MiB and core percentage it takes."""

    uuid: str
    type: str
    memory: int
    cores: int


@dataclass(frozen=True, slots=True)
class VgpuPod:
    """What the vGPU device reads of a pod: the requests of its containers that ask (empty: none), the cards
    its containers hold (``volcano.sh/vgpu-ids-new``), the annotations that steer the choice of cards
    (``volcano.sh/vgpu-mode``; the card types of ``nvidia.com/use-gputype`` / ``nouse-gputype``; the UUID
    allow and deny lists; ``volcano.sh/vgpu-podgroup-policy: spread``) and its PodGroup key
    (``namespace/group`` of its group annotation, "" without one)."""

    requests: tuple[VgpuRequest, ...] = ()
    devices: tuple[tuple[VgpuUse, ...], ...] = ()
    mode: str | None = None
    use_types: str | None = None
    nouse_types: str | None = None
    use_uuids: str = ""
    nouse_uuids: str = ""
    spread: bool = False
    group: str = ""


def _atoi(text: str) -> int:
    try:
        return max(int(text), 0)
    except ValueError:
        return 0


def parse_register(text: str) -> tuple[VgpuCard, ...]:
    """The cards of a ``volcano.sh/node-vgpu-register`` annotation (Volcano's ``decodeNodeDevices``): none when it
    has no ``:`` or a card has fewer than six fields. A card registered in ``mig`` mode is read in ``hami-core``
    mode, as Volcano does when its device configuration knows no MIG geometry for the card's type."""
    if ":" not in text:
        return ()
    cards: list[VgpuCard] = []
    for index, item in enumerate(text.split(":")):
        if "," not in item:
            continue
        fields = item.split(",")
        if len(fields) < 6:
            return ()
        health = fields[4] in _TRUE
        cards.append(VgpuCard(index, fields[0], _atoi(fields[1]), _atoi(fields[2]), fields[3], health))
    return tuple(cards)


def register_text(cards: Sequence[VgpuCard]) -> str:
    """The ``volcano.sh/node-vgpu-register`` annotation registering ``cards`` (in ``hami-core`` mode)."""
    return "".join(f"{c.uuid},{c.number},{c.memory},{c.type},{str(c.health).lower()},{HAMI_CORE}:" for c in cards)


def simulated_cards(node: str, cards: int, memory: int, split: int) -> tuple[VgpuCard, ...]:
    """The cards of a simulated node: ``cards`` NVIDIA cards ``GPU-<node>-<i>`` of ``memory`` MiB, each shared by up
    to ``split`` pods (the device plugin's ``--device-split-count``)."""
    return tuple(VgpuCard(i, f"GPU-{node}-{i}", split, memory) for i in range(cards))


def node_vgpu_cards(annotations: Mapping[str, str], allocatable: Mapping[str, int]) -> tuple[VgpuCard, ...]:
    """A node's vGPU cards (Volcano's ``NewGPUDevices``): its registration, if its allocatable holds non-zero
    vGPU number, cores and memory."""
    text = annotations.get(VGPU_REGISTER)
    if text is None or not all(allocatable.get(k) for k in (VGPU_NUMBER, VGPU_CORES, VGPU_MEMORY)):
        return ()
    return parse_register(text)


def _uint(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _decode_container(text: str) -> tuple[VgpuUse, ...]:
    """Volcano's ``decodeContainerDevices``: entries with fewer than four fields or a bad number are skipped."""
    out: list[VgpuUse] = []
    for item in text.split(":") if text else ():
        if "," not in item:
            continue
        fields = item.split(",")
        if len(fields) < 4:
            continue
        memory, cores = _uint(fields[2]), _uint(fields[3])
        if memory is None or cores is None or memory >= 2**32 or cores >= 2**32:
            continue
        out.append(VgpuUse(fields[0], fields[1], memory, cores))
    return tuple(out)


def decode_pod_devices(text: str) -> tuple[tuple[VgpuUse, ...], ...]:
    """The ``volcano.sh/vgpu-ids-new`` annotation: per container, the cards it holds."""
    if not text:
        return ()
    return tuple(_decode_container(part) for part in text.split(";"))


def encode_pod_devices(devices: Sequence[Sequence[VgpuUse]]) -> str:
    """The ``volcano.sh/vgpu-ids-new`` annotation of ``devices`` (Volcano's ``encodePodDevices``)."""
    return ";".join("".join(f"{u.uuid},{u.type},{u.memory},{u.cores}:" for u in c) for c in devices)


def container_requests(containers: Sequence[Mapping[str, Mapping[str, int]]]) -> tuple[VgpuRequest, ...]:
    """The vGPU requests of containers given as ``{"limits": {...}, "requests": {...}}`` of parsed quantities
    (Volcano's ``ExtractResourceRequest``; a resource missing from the limits is read from the requests)."""
    out: list[VgpuRequest] = []
    for c in containers:
        number, memory = _quantity(c, VGPU_NUMBER), _quantity(c, VGPU_MEMORY)
        if number is None and memory is None:
            continue
        percentage = _quantity(c, VGPU_MEMORY_PERCENTAGE)
        if percentage is None:
            percentage = NO_PERCENTAGE
        memory = memory or 0
        if percentage == NO_PERCENTAGE and memory == 0:
            percentage = 100
        out.append(VgpuRequest(1 if number is None else number, memory, percentage, _quantity(c, VGPU_CORES) or 0))
    return tuple(out)


def _quantity(container: Mapping[str, Mapping[str, int]], name: str) -> int | None:
    """A container's limit of ``name``, else its request (None: neither)."""
    value = (container.get("limits") or {}).get(name)
    return (container.get("requests") or {}).get(name) if value is None else value


def vgpu_pod(
    namespace: str, annotations: Mapping[str, str], containers: Sequence[Mapping[str, Mapping[str, int]]]
) -> VgpuPod | None:
    """What the vGPU device reads of a pod (None: it neither asks for vGPUs nor holds any)."""
    requests = container_requests(containers)
    devices = decode_pod_devices(annotations.get(ASSIGNED_IDS, ""))
    if not requests and not devices:
        return None
    group = next((annotations[k] for k in _GROUPS if annotations.get(k)), "")
    return VgpuPod(
        requests=requests,
        devices=devices,
        mode=annotations.get(MODE_ANNOTATION),
        use_types=annotations.get(USE_TYPE),
        nouse_types=annotations.get(NOUSE_TYPE),
        use_uuids=annotations.get(USE_UUID, ""),
        nouse_uuids=annotations.get(NOUSE_UUID, ""),
        spread=annotations.get(GROUP_POLICY) == SPREAD,
        group=f"{namespace}/{group}" if group else "",
    )


def check_gpu_type(use: str | None, nouse: str | None, card_type: str) -> bool:
    """Volcano's ``checkGPUtype``: a card type containing one of ``use`` (case-insensitive, comma-separated) when
    set; else not containing one of ``nouse``."""
    upper = card_type.upper()
    if use is not None:
        return any(v.upper() in upper for v in use.split(","))
    if nouse is not None:
        return not any(v.upper() in upper for v in nouse.split(","))
    return True


def _uuid_list(text: str) -> list[str]:
    return [u.strip() for u in text.split(",") if u.strip()]


def uuid_allowed(allow: str, deny: str, uuid: str) -> bool:
    """Volcano's UUID filter: in the allowlist (when there is one), not in the denylist; a card without a UUID
    passes only when there are neither."""
    allowed, denied = _uuid_list(allow), _uuid_list(deny)
    if not uuid and (allowed or denied):
        return False
    if allowed and uuid not in allowed:
        return False
    return uuid not in denied


class _Share:
    """A pod's share of a card (Volcano's ``GPUUsage``): memory, cores and the pod's PodGroup key."""

    __slots__ = ("cores", "group", "memory")

    def __init__(self, memory: int, cores: int, group: str) -> None:
        self.memory, self.cores, self.group = memory, cores, group


class _Card:
    """A card's sharing state: Volcano's ``GPUDevice`` (``number`` may be capped by GPU exclusivity)."""

    __slots__ = ("card", "number", "pods", "used_core", "used_mem", "used_num")

    def __init__(self, card: VgpuCard) -> None:
        self.card = card
        self.number = card.number
        self.used_num = 0
        self.used_mem = 0
        self.used_core = 0
        #: The pods holding the card, by uid.
        self.pods: dict[str, _Share] = {}

    def copy(self) -> _Card:
        out = _Card(self.card)
        out.number, out.used_num = self.number, self.used_num
        out.used_mem, out.used_core = self.used_mem, self.used_core
        out.pods = {k: _Share(v.memory, v.cores, v.group) for k, v in self.pods.items()}
        return out

    def score(self, policy: str) -> float:
        """Volcano's ``GPUScore`` of the card as it stands."""
        if policy == BINPACK:
            return 100.0 * self.used_mem / self.card.memory if self.card.memory else 0.0
        if policy == SPREAD:
            return 100.0 if self.used_num == 0 else 0.0
        return 0.0

    def has_group(self, key: str) -> bool:
        """Whether a pod of PodGroup ``key`` holds memory or cores of the card."""
        return bool(key) and any(p.group == key and (p.memory or p.cores) for p in self.pods.values())


@dataclass(frozen=True, slots=True)
class VgpuFit:
    """What a pod would take of a node's cards: per requesting container its cards, the cards' summed score, or
    why it does not fit (``error``)."""

    devices: tuple[tuple[VgpuUse, ...], ...] = ()
    score: float = 0.0
    error: str = ""


class VgpuDevices:
    """One node's vGPU cards in a session (Volcano's ``GPUDevices``): each card's use, the pods holding it."""

    def __init__(self, node: str, cards: Sequence[VgpuCard]) -> None:
        self.node = node
        self.mode = HAMI_CORE
        self.cards: dict[int, _Card] = {c.index: _Card(c) for c in cards}

    def copy(self) -> VgpuDevices:
        out = VgpuDevices(self.node, ())
        out.cards = {i: c.copy() for i, c in self.cards.items()}
        return out

    def _card_of(self, uuid: str) -> _Card | None:
        """The card a held device names (Volcano matches a card whose UUID the name contains)."""
        return next((self.cards[i] for i in sorted(self.cards) if self.cards[i].card.uuid in uuid), None)

    def add_pod(self, uid: str, pod: VgpuPod) -> None:
        """A pod on the node holds the cards of its annotation (Volcano's ``AddResource``: a pod counts once per
        card, with its first container's share)."""
        for container in pod.devices:
            for use in container:
                card = self._card_of(use.uuid)
                if card is None or uid in card.pods:
                    continue
                card.pods[uid] = _Share(use.memory, use.cores, pod.group)
                card.used_num += 1
                card.used_mem += use.memory
                card.used_core += use.cores

    def sub_pod(self, uid: str, devices: Sequence[Sequence[VgpuUse]]) -> None:
        """The pod gives its cards back (Volcano's ``SubResource``)."""
        for container in devices:
            for use in container:
                card = self._card_of(use.uuid)
                if card is None or uid not in card.pods:
                    continue
                card.used_num -= 1
                card.used_mem -= use.memory
                card.used_core -= use.cores
                del card.pods[uid]

    def record(self, uid: str, group: str, devices: Sequence[Sequence[VgpuUse]]) -> None:
        """The pod's share on the cards just taken for it (Volcano's ``addToPodMap``)."""
        for container in devices:
            for use in container:
                for i in sorted(self.cards):
                    card = self.cards[i]
                    if card.card.uuid not in use.uuid:
                        continue
                    share = card.pods.setdefault(uid, _Share(0, 0, group))
                    share.memory += use.memory
                    share.cores += use.cores
                    share.group = group

    def allocate(self, uid: str, pod: VgpuPod, policy: str) -> VgpuFit:
        """Take the cards for a pod placed on the node (Volcano's ``Allocate``): they keep its use."""
        fit = self.fit(pod, policy, apply=True)
        if not fit.error:
            self.record(uid, pod.group, fit.devices)
        return fit

    def order(self, policy: str) -> list[int]:
        """Volcano's ``sortedDeviceIndicesByPolicy``."""
        ids = sorted(self.cards)
        if policy == BINPACK:
            return sorted(ids, key=lambda i: (-self.cards[i].used_mem, i))
        if policy == SPREAD:
            return sorted(ids, key=lambda i: (self.cards[i].used_num, i))
        return ids[::-1]

    def fit(self, pod: VgpuPod, policy: str, apply: bool = False) -> VgpuFit:
        """The cards ``pod`` takes (Volcano's ``checkNodeGPUSharingPredicateAndScore``), tried on a copy of the
        cards (``apply``: on the cards themselves, which keep the pod's use)."""
        if not pod.requests:
            return VgpuFit()
        if pod.mode is not None and pod.mode != self.mode:
            return VgpuFit(error=f"pod required sharing mode {pod.mode} is not the same as the node mode {self.mode}")
        state = self if apply else self.copy()
        taken: list[tuple[_Card, int, int]] = []
        out: list[tuple[VgpuUse, ...]] = []
        score = 0.0
        for request in pod.requests:
            if request.number > len(state.cards):
                state._rollback(taken)
                return VgpuFit(error=f"no enough gpu cards on node {self.node}")
            uses, matched, score = state._take(pod, request, policy, taken, score)
            if len(uses) < request.number:
                state._rollback(taken)
                if (_uuid_list(pod.use_uuids) or _uuid_list(pod.nouse_uuids)) and not matched:
                    return VgpuFit(error=self._uuid_error(pod))
                return VgpuFit(error="not enough gpu fitted on this node")
            out.append(tuple(uses))
        return VgpuFit(tuple(out), score)

    def _uuid_error(self, pod: VgpuPod) -> str:
        return (
            f'no GPU matches UUID constraints {USE_UUID}="{pod.use_uuids}", {NOUSE_UUID}="{pod.nouse_uuids}"'
            f" on node {self.node}"
        )

    def _take(
        self, pod: VgpuPod, request: VgpuRequest, policy: str, taken: list[tuple[_Card, int, int]], score: float
    ) -> tuple[list[VgpuUse], bool, float]:
        """One container's cards, in policy order: (the cards taken, whether a card passed the UUID filter, the
        running score)."""
        uses: list[VgpuUse] = []
        matched = False
        spread_key = pod.group if pod.spread else ""
        remaining = request.number
        for i in self.order(policy):
            card = self.cards[i]
            if not uuid_allowed(pod.use_uuids, pod.nouse_uuids, card.card.uuid):
                continue
            matched = True
            memory = self._memory_for(request, card)
            if not self._admits(pod, request, card, spread_key, memory):
                continue
            card.used_num += 1
            card.used_mem += memory
            card.used_core += request.cores
            taken.append((card, memory, request.cores))
            if remaining > 0:  # a request of 0 cards takes one tentatively and records none, as Volcano
                remaining -= 1
                uses.append(VgpuUse(card.card.uuid, NVIDIA, memory, request.cores))
                score += card.score(policy)
            if remaining == 0:
                break
        return uses, matched, score

    @staticmethod
    def _memory_for(request: VgpuRequest, card: _Card) -> int:
        if request.percentage != NO_PERCENTAGE:
            return int(card.card.memory * request.percentage / 100.0)
        return request.memory

    @staticmethod
    def _admits(pod: VgpuPod, request: VgpuRequest, card: _Card, spread_key: str, memory: int) -> bool:
        """Whether the card can take one vGPU of the request as it stands."""
        if card.number <= card.used_num or card.has_group(spread_key):
            return False
        if card.card.memory - card.used_mem < memory or card.used_core + request.cores > 100:
            return False
        if request.cores == 100 and card.used_num > 0:
            return False  # a whole card's cores: the card alone
        if card.used_core == 100 and request.cores == 0:
            return False
        if NVIDIA not in card.card.type:
            return False
        return check_gpu_type(pod.use_types, pod.nouse_types, card.card.type)

    @staticmethod
    def _rollback(taken: list[tuple[_Card, int, int]]) -> None:
        for card, memory, cores in taken:
            card.used_num = max(card.used_num - 1, 0)
            card.used_mem = max(card.used_mem - memory, 0)
            card.used_core = max(card.used_core - cores, 0)
        taken.clear()


def node_score(score: float, weight: int) -> float:
    """deviceshare's node order for a device score: rounded half up, times ``deviceshare.ScheduleWeight``."""
    return float(math.floor(score + 0.5) * weight) if weight > 0 else 0.0
