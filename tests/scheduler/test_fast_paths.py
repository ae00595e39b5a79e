"""The fast paths agree with the slow definitions they replace: order keys with the comparators,
scalar node scores with the vectorised ones, cached masks with freshly computed ones."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from scheduler import Snapshot, parse_config, run_cycle
from scheduler.actions.allocate import AllocateAction
from scheduler.actions.common import feasible_mask, idle_mask, resource_mask
from scheduler.model import TaskStatus
from scheduler.points import ExtensionPoint
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.testing import make_job
from tests.scheduler.golden_workloads import CONFIGS, build

BINPACK = parse_config(
    """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion},
            {name: nodeorder, arguments: {mostrequested.weight: 3, balancedresource.weight: 2}},
            {name: binpack, arguments: {binpack.resources: nvidia.com/gpu}}]
"""
)


def _session(seed: int, config_name: str = "default") -> Session:
    config = BINPACK if config_name == "binpack" else CONFIGS[config_name]
    return Session(build(seed), config, default_registry())


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


@pytest.mark.parametrize("seed", range(12))
def test_order_keys_sort_like_the_comparators(seed: int) -> None:
    ssn = _session(seed)
    job_key, task_key = ssn.job_key, ssn.task_key
    assert job_key is not None
    assert task_key is not None
    jobs = list(ssn.jobs.values())
    # Make some jobs ready and shares differ, as during allocate.
    for job in jobs[::3]:
        for t in list(job.tasks.values())[:2]:
            if t.status == TaskStatus.PENDING:
                ssn.place(t, 0, TaskStatus.ALLOCATED)
    for a in jobs:
        for b in jobs:
            want = -1 if ssn.job_less(a, b) else (1 if ssn.job_less(b, a) else 0)
            got = _sign((job_key(a) > job_key(b)) - (job_key(a) < job_key(b)))
            assert got == want, (a, b)
    tasks = list(ssn.tasks.values())
    by_cmp = sorted(tasks, key=functools.cmp_to_key(lambda a, b: -1 if ssn.task_less(a, b) else 1))
    assert by_cmp == sorted(tasks, key=task_key)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("config_name", ["default", "binpack", "capacity"])
def test_scalar_scores_equal_vector_scores(seed: int, config_name: str) -> None:
    ssn = _session(seed, config_name)
    n = len(ssn.nodes)
    nodes = np.arange(n, dtype=np.intp)
    for p in ssn._flat[ExtensionPoint.NODE_ORDER]:
        for t in list(ssn.tasks.values())[:25]:
            if p.node_score_key(t) is None:
                continue
            vector = p.local_scores(t, nodes)
            scalar = np.array([p.local_score_at(t, i) for i in range(n)])
            assert np.array_equal(vector, scalar), (p.name, t)
            extra = p.set_scores(t, nodes)
            total = vector + extra if extra is not None else vector
            assert np.array_equal(total, p.node_order(t, nodes)), (p.name, t)


@pytest.mark.parametrize("seed", range(12))
def test_cached_masks_track_node_changes(seed: int) -> None:
    ssn = _session(seed)
    tasks = [t for t in ssn.tasks.values() if t.status == TaskStatus.PENDING]
    for step, t in enumerate(tasks):
        fresh = ssn.predicate_mask(t) & resource_mask(ssn, t)
        assert np.array_equal(feasible_mask(ssn, t), fresh)
        assert np.array_equal(idle_mask(ssn, t), resource_mask(ssn, t, "idle"))
        feasible = np.flatnonzero(fresh)
        if len(feasible):
            ssn.place(t, int(feasible[step % len(feasible)]), TaskStatus.ALLOCATED)


def _backlog(seed: int) -> Snapshot:
    """A random workload plus runs of identical hopeless jobs (too big, impossible selector, more
    GPUs than any node) and jobs that fit created between the runs."""
    snap = build(seed)
    queue = snap.queues[0].name
    specs = []
    for i in range(24):
        kind = i % 4
        if kind == 0:
            specs.append(make_job(f"huge{i:02d}", queue=queue, replicas=3, min_available=3, cpu="999", creation=0))
        elif kind == 1:
            specs.append(make_job(f"nosel{i:02d}", queue=queue, cpu="100m", node_selector={"zone": "x"}, creation=2))
        elif kind == 2:
            gpus = {"nvidia_com_gpu": 64}
            specs.append(make_job(f"gpu{i:02d}", queue=queue, replicas=2, min_available=1, creation=2, **gpus))
        else:
            specs.append(make_job(f"fits{i:02d}", queue=queue, cpu="10m", memory="16Mi", creation=1))
    return replace(
        snap, jobs=(*snap.jobs, *(s.job for s in specs)), tasks=(*snap.tasks, *(t for s in specs for t in s.tasks))
    )


@pytest.mark.parametrize("seed", range(0, 40, 2))
def test_repeated_failures_are_recorded_as_when_tried(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Allocate records the failure of a job identical to one that just failed (no node changed)
    # without trying it: the results (reasons, fit errors, messages) are those of trying it.
    snap = _backlog(seed)
    repeats = []
    original = AllocateAction._repeat_failure

    def counting(*args: Any) -> None:
        repeats.append(args[1].key)
        original(*args)

    for name, config in CONFIGS.items():
        monkeypatch.setattr(AllocateAction, "_repeat_failure", staticmethod(counting))
        shortcut = run_cycle(snap, config).to_json()
        monkeypatch.setattr(Session, "failures_repeatable", property(lambda self: False))
        tried = run_cycle(snap, config).to_json()
        monkeypatch.undo()
        assert shortcut == tried, name
    assert repeats, "identical hopeless jobs were recorded without trying them again"
