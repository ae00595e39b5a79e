"""The fast paths agree with the slow definitions they replace: order keys with the comparators,
scalar node scores with the vectorised ones, cached masks with freshly computed ones."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from scheduler import parse_config
from scheduler.actions.common import feasible_mask, idle_mask, resource_mask
from scheduler.framework import ExtensionPoint
from scheduler.model import TaskStatus
from scheduler.registry import default_registry
from scheduler.session import Session
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
