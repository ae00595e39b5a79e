"""Built-in scheduler actions."""

from __future__ import annotations

from scheduler.actions.allocate import AllocateAction
from scheduler.actions.backfill import BackfillAction
from scheduler.actions.enqueue import EnqueueAction
from scheduler.actions.evict import PreemptAction, ReclaimAction
from scheduler.actions.gang import GangPreemptAction, GangReclaimAction
from scheduler.actions.shuffle import ShuffleAction
from scheduler.framework import Action

__all__ = [
    "BUILTIN_ACTIONS",
    "AllocateAction",
    "BackfillAction",
    "EnqueueAction",
    "GangPreemptAction",
    "GangReclaimAction",
    "PreemptAction",
    "ReclaimAction",
    "ShuffleAction",
]

BUILTIN_ACTIONS: tuple[type[Action], ...] = (
    EnqueueAction,
    AllocateAction,
    BackfillAction,
    PreemptAction,
    ReclaimAction,
    GangPreemptAction,
    GangReclaimAction,
    ShuffleAction,
)
