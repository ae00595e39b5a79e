"""Built-in scheduler plugins."""

from __future__ import annotations

from scheduler.framework import Plugin
from scheduler.plugins.basic import ConformancePlugin, GangPlugin, PriorityPlugin
from scheduler.plugins.capacity import CapacityPlugin
from scheduler.plugins.enqueuegate import EnqueueGatePlugin
from scheduler.plugins.nodegroup import NodeGroupPlugin
from scheduler.plugins.pdb import PdbPlugin
from scheduler.plugins.placement import BinpackPlugin, NodeOrderPlugin, PredicatesPlugin
from scheduler.plugins.resourcequota import ResourceQuotaPlugin
from scheduler.plugins.shares import DrfPlugin, OvercommitPlugin, ProportionPlugin
from scheduler.plugins.sla import SlaPlugin

__all__ = [
    "BUILTIN_PLUGINS",
    "BinpackPlugin",
    "CapacityPlugin",
    "ConformancePlugin",
    "DrfPlugin",
    "EnqueueGatePlugin",
    "GangPlugin",
    "NodeGroupPlugin",
    "NodeOrderPlugin",
    "OvercommitPlugin",
    "PdbPlugin",
    "PredicatesPlugin",
    "PriorityPlugin",
    "ProportionPlugin",
    "ResourceQuotaPlugin",
    "SlaPlugin",
]

BUILTIN_PLUGINS: tuple[type[Plugin], ...] = (
    PriorityPlugin,
    GangPlugin,
    ConformancePlugin,
    OvercommitPlugin,
    DrfPlugin,
    PredicatesPlugin,
    ProportionPlugin,
    CapacityPlugin,
    NodeOrderPlugin,
    BinpackPlugin,
    SlaPlugin,
    ResourceQuotaPlugin,
    PdbPlugin,
    NodeGroupPlugin,
    EnqueueGatePlugin,
)
