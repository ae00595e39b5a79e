"""The shuffle action: Volcano's TestShuffle (a test-only plugin naming the low-priority pods) through the
library with a registry of its own, and shuffle with tdm (pods on a revocable node whose window closed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from scheduler import parse_config, run_cycle
from scheduler.cycle_state import PluginState
from scheduler.framework import Plugin, VictimTasks
from scheduler.info import TaskInfo
from scheduler.model import JobPhase, TaskStatus
from scheduler.registry import default_registry
from scheduler.snapshot import Snapshot
from scheduler.testing import make_job, make_node, make_snapshot, make_task

RUNNING = TaskStatus.RUNNING


class _LowPriority(Plugin, VictimTasks):
    """TestShuffle's fake plugin: every candidate of priority 10 is a victim."""

    name = "fake"

    def victim_tasks(self, st: PluginState, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        return [t for t in tasks if t.priority == 10]


def test_shuffle_select_pods_with_low_priority_and_evict_them() -> None:
    """TestShuffle / "select pods with low priority and evict them"."""
    placed = {
        "pg1": [("pod1-1", "node1", 10), ("pod1-2", "node1", 100), ("pod1-3", "node1", 100)],
        "pg2": [("pod2-1", "node1", 10), ("pod2-2", "node2", 100)],
        "pg3": [("pod3-1", "node2", 10), ("pod3-2", "node2", 100)],
    }
    jobs = []
    for pg, pods in placed.items():
        tasks = [
            make_task(
                name, job=f"test/{pg}", namespace="test", cpu="1", memory="2G", node=node, priority=prio, status=RUNNING
            )
            for name, node, prio in pods
        ]
        jobs.append(make_job(pg, namespace="test", min_available=0, tasks=tasks, phase=JobPhase.RUNNING))
    snap = make_snapshot([make_node("node1", cpu="4", memory="8Gi"), make_node("node2", cpu="4", memory="8Gi")], jobs)
    registry = default_registry().with_plugin(_LowPriority)
    conf = parse_config("actions: shuffle\ntiers: [{plugins: [{name: fake, enabledVictim: true}]}]", registry)
    result = run_cycle(snap, conf, registry)
    assert sorted(e.task for e in result.evictions) == ["test/pod1-1", "test/pod2-1", "test/pod3-1"]
    assert {e.action for e in result.evictions} == {"shuffle"}


def _revocable(window: str) -> tuple[Snapshot, str]:
    lent = make_node("lent", cpu="4", memory="8Gi", labels={"volcano.sh/revocable-zone": "rz1"})
    job = make_job("elastic", replicas=2, min_available=0, cpu="1", running_on=["lent", "lent"], phase=JobPhase.RUNNING)
    snap = replace(make_snapshot([lent], [job]), now=1_700_000_000.0)  # 22:13 UTC
    conf = f"actions: shuffle\ntiers: [{{plugins: [{{name: tdm, arguments: {{tdm.revocable-zone.rz1: '{window}'}}}}]}}]"
    return snap, conf


def test_shuffle_with_tdm_evicts_from_a_closed_revocable_zone_within_the_budget() -> None:
    snap, conf = _revocable("0:00-0:01")
    result = run_cycle(snap, parse_config(conf))
    assert len(result.evictions) == 1  # no budget annotation: one pod per job
    snap, conf = _revocable("0:00-0:00")
    assert not run_cycle(snap, parse_config(conf)).evictions
