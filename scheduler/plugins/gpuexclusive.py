"""GPU exclusivity: pods matching a rule get vGPU cards no other pod of that rule holds.

Volcano's ``deviceshare.GPUExclusiveRules`` (``pkg/scheduler/plugins/deviceshare/gpuexclusive.go``, read for
behaviour): a rule is a map of labels, and a pod matches it when it carries all of them. Per node in ``hami-core``
mode, :class:`ExclusiveCards` wraps the node's :class:`~scheduler.vgpu.VgpuDevices`: each rule reserves the cards
its pods hold (found at session open from the cards' pods, else from the pods' ``volcano.sh/vgpu-ids-new``
annotations), and a pod matching rules sees those cards of its rules as full (their sharing count capped at their
use) while its cards are chosen; pods matching different rules, and pods matching none, still share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.vgpu import VgpuDevices, VgpuFit, VgpuPod, VgpuUse

__all__ = ["ExclusiveCards", "NodePod", "matching_rules", "pod_matches_rule"]


def pod_matches_rule(labels: Mapping[str, str] | None, rule: Mapping[str, str]) -> bool:
    """Whether a pod with ``labels`` carries every label of ``rule`` (Volcano's ``podMatchesRule``)."""
    if labels is None:
        return False
    return all(labels.get(k) == v for k, v in rule.items())


def matching_rules(labels: Mapping[str, str] | None, rules: Sequence[Mapping[str, str]]) -> list[int]:
    """The indices of the rules a pod with ``labels`` matches (Volcano's ``matchingRules``)."""
    if labels is None:
        return []
    return [i for i, rule in enumerate(rules) if pod_matches_rule(labels, rule)]


@dataclass(frozen=True, slots=True)
class NodePod:
    """A pod on the node, as the wrapper reads it: ``namespace/name``, uid, labels and its vGPU view."""

    key: str
    uid: str
    labels: Mapping[str, str]
    vgpu: VgpuPod | None


class ExclusiveCards:
    """One node's vGPU cards under GPU exclusivity rules (Volcano's ``exclusiveGPUDevices``)."""

    def __init__(
        self,
        inner: VgpuDevices,
        rules: Sequence[Mapping[str, str]],
        rule_cards: dict[int, set[int]] | None = None,
        pod_rules: dict[str, set[int]] | None = None,
    ) -> None:
        self.inner = inner
        self.rules = tuple(rules)
        #: Per rule, the cards its pods hold.
        self.rule_cards: dict[int, set[int]] = rule_cards if rule_cards is not None else {}
        #: Per pod (``namespace/name``) matching rules, those rules.
        self.pod_rules: dict[str, set[int]] = pod_rules if pod_rules is not None else {}
        #: Per pod on the node, its uid.
        self.pod_uids: dict[str, str] = {}

    @classmethod
    def open(cls, inner: VgpuDevices, rules: Sequence[Mapping[str, str]], pods: Sequence[NodePod]) -> ExclusiveCards:
        """The wrapper of a node at session open: the rules of the pods on it and the cards each rule holds,
        from the cards' pods, else (for a rule pod no card lists) from the pod's annotation."""
        out = cls(inner, rules)
        by_uid: dict[str, str] = {}
        for p in pods:
            out.pod_uids[p.key] = p.uid
            by_uid[p.uid] = p.key
            matched = matching_rules(p.labels, rules)
            if matched:
                out.pod_rules[p.key] = set(matched)
        for index, card in inner.cards.items():
            for uid in card.pods:
                for rule in out.pod_rules.get(by_uid.get(uid, ""), ()):
                    out.rule_cards.setdefault(rule, set()).add(index)
        by_uuid = {card.card.uuid: index for index, card in inner.cards.items()}
        for p in pods:
            rules_of = out.pod_rules.get(p.key)
            if not rules_of or p.vgpu is None or any(p.uid in c.pods for c in inner.cards.values()):
                continue
            for container in p.vgpu.devices:
                for use in container:
                    if use.uuid in by_uuid:
                        for rule in rules_of:
                            out.rule_cards.setdefault(rule, set()).add(by_uuid[use.uuid])
        return out

    def reserved(self, labels: Mapping[str, str] | None) -> set[int]:
        """The cards the rules a pod with ``labels`` matches hold (Volcano's ``reservedGPUsForPod``)."""
        out: set[int] = set()
        for rule in matching_rules(labels, self.rules):
            out |= self.rule_cards.get(rule, set())
        return out

    def cap(self, cards: set[int]) -> dict[int, int]:
        """Make ``cards`` look full (sharing count = use) and return their counts (Volcano's ``capGPUs``)."""
        saved: dict[int, int] = {}
        for index in cards:
            card = self.inner.cards.get(index)
            if card is not None:
                saved[index] = card.number
                card.number = card.used_num
        return saved

    def restore(self, saved: Mapping[int, int]) -> None:
        """Give capped cards their counts back (Volcano's ``restoreGPUs``)."""
        for index, number in saved.items():
            card = self.inner.cards.get(index)
            if card is not None:
                card.number = number

    def fit(self, labels: Mapping[str, str] | None, pod: VgpuPod, policy: str) -> VgpuFit:
        """The cards the pod would take with its rules' cards capped (Volcano's ``FilterNode``)."""
        saved = self.cap(self.reserved(labels))
        try:
            return self.inner.fit(pod, policy)
        finally:
            self.restore(saved)

    def allocate(self, key: str, uid: str, labels: Mapping[str, str] | None, pod: VgpuPod, policy: str) -> VgpuFit:
        """Take the pod's cards with its rules' cards capped; its rules then hold them (Volcano's ``Allocate``)."""
        self.pod_uids[key] = uid
        matched = matching_rules(labels, self.rules)
        if not matched:
            return self.inner.allocate(uid, pod, policy)
        saved = self.cap(self.reserved(labels))
        try:
            fit = self.inner.allocate(uid, pod, policy)
        finally:
            self.restore(saved)
        if fit.error:
            return fit
        self.pod_rules[key] = set(matched)
        for index, card in self.inner.cards.items():
            if uid in card.pods:
                for rule in matched:
                    self.rule_cards.setdefault(rule, set()).add(index)
        return fit

    def release(self, key: str, uid: str, devices: Sequence[Sequence[VgpuUse]]) -> None:
        """The pod gives its cards back and its rules stop holding those no other rule pod holds (Volcano's
        ``SubResource`` and ``untrackPod``)."""
        self.inner.sub_pod(uid, devices)
        rules_of = self.pod_rules.pop(key, None)
        self.pod_uids.pop(key, None)
        if rules_of is None:
            return
        others = {self.pod_uids.get(k) for k in self.pod_rules}
        for rule in rules_of:
            held = self.rule_cards.get(rule)
            if held is None:
                continue
            for index in list(held):
                card = self.inner.cards.get(index)
                if card is None:
                    continue
                if not any(u != uid and u in others for u in card.pods):
                    held.discard(index)
            if not held:
                del self.rule_cards[rule]
