"""Built-in scheduler plugins."""

from __future__ import annotations

from scheduler.framework import Plugin
from scheduler.plugins.basic import ConformancePlugin, GangPlugin, PriorityPlugin
from scheduler.plugins.binpack import BinpackPlugin
from scheduler.plugins.capacity import CapacityPlugin
from scheduler.plugins.cdp import CdpPlugin
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.enqueuegate import EnqueueGatePlugin
from scheduler.plugins.extender import ExtenderPlugin
from scheduler.plugins.network_topology import NetworkTopologyAwarePlugin
from scheduler.plugins.nodegroup import NodeGroupPlugin
from scheduler.plugins.nodeorder import NodeOrderPlugin
from scheduler.plugins.numaaware import NumaAwarePlugin
from scheduler.plugins.pdb import PdbPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.plugins.rescheduling import ReschedulingPlugin
from scheduler.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from scheduler.plugins.resourcequota import ResourceQuotaPlugin
from scheduler.plugins.shares import DrfPlugin, OvercommitPlugin, ProportionPlugin
from scheduler.plugins.sla import SlaPlugin
from scheduler.plugins.task_topology import TaskTopologyPlugin
from scheduler.plugins.tdm import TdmPlugin
from scheduler.plugins.usage import UsagePlugin

__all__ = [
    "BUILTIN_PLUGINS",
    "BinpackPlugin",
    "CapacityPlugin",
    "CdpPlugin",
    "ConformancePlugin",
    "DeviceSharePlugin",
    "DrfPlugin",
    "EnqueueGatePlugin",
    "ExtenderPlugin",
    "GangPlugin",
    "NetworkTopologyAwarePlugin",
    "NodeGroupPlugin",
    "NodeOrderPlugin",
    "NumaAwarePlugin",
    "OvercommitPlugin",
    "PdbPlugin",
    "PredicatesPlugin",
    "PriorityPlugin",
    "ProportionPlugin",
    "ReschedulingPlugin",
    "ResourceQuotaPlugin",
    "ResourceStrategyFitPlugin",
    "SlaPlugin",
    "TaskTopologyPlugin",
    "TdmPlugin",
    "UsagePlugin",
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
    NetworkTopologyAwarePlugin,
    CdpPlugin,
    TdmPlugin,
    ResourceStrategyFitPlugin,
    ReschedulingPlugin,
    TaskTopologyPlugin,
    EnqueueGatePlugin,
    UsagePlugin,
    DeviceSharePlugin,
    ExtenderPlugin,
    NumaAwarePlugin,
)
