"""The cdp plugin (cooldown protection): Volcano's parser test as a table, and a preempt cycle."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler import parse_config, run_cycle
from scheduler.decode import cooldown_time
from scheduler.model import JobPhase
from scheduler.snapshot import Snapshot
from scheduler.testing import make_job, make_node, make_snapshot


@pytest.mark.parametrize(
    ("name", "annotations", "want"),
    [
        ("normal", {"volcano.sh/cooldown-time": "600s"}, 600.0),
        ("not-enabled", {"volcano.sh/cooldown-time": "600abcde"}, None),
    ],
    ids=[
        "Test_CooldownTimePlugin_podPreemptStableTime:normal",
        "Test_CooldownTimePlugin_podPreemptStableTime:not-enabled",
    ],
)
def test_cooldown_time_plugin_pod_preempt_stable_time(
    name: str, annotations: dict[str, str], want: float | None
) -> None:
    """Test_CooldownTimePlugin_podPreemptStableTime: a Go duration, or no protection."""
    assert cooldown_time({}, annotations) == want


def test_a_label_wins_over_the_annotation() -> None:
    assert cooldown_time({"volcano.sh/cooldown-time": "1m"}, {"volcano.sh/cooldown-time": "1h"}) == 60.0


CONF = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}, {name: cdp}]
- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def _snapshot(now: float | None, ago: float) -> Snapshot:
    low = make_job("low", replicas=1, min_available=1, cpu="4", running_on=["n1"], phase=JobPhase.RUNNING, priority=1)
    pod = replace(low.tasks[0], cooldown=600.0, scheduled_at=1_000_000.0 - ago)
    high = make_job("high", replicas=1, min_available=1, cpu="4", priority=100)
    snap = make_snapshot([make_node("n1", cpu="4", memory="16Gi")], [low, high])
    tasks = tuple(pod if t.uid == pod.uid else t for t in snap.tasks)
    return replace(snap, tasks=tasks, now=now)


@pytest.mark.parametrize(
    ("now", "ago", "evicted"),
    [(1_000_000.0, 100.0, False), (1_000_000.0, 800.0, True), (None, 800.0, False)],
    ids=["inside its cooldown", "after it", "no clock: kept"],
)
def test_preempt_spares_a_pod_inside_its_cooldown_time(now: float | None, ago: float, evicted: bool) -> None:
    result = run_cycle(_snapshot(now, ago), parse_config(CONF))
    assert bool(result.evictions) is evicted
