"""SessionCache: reusing the opened state between cycles never changes a result.

Three ways a cycle can open with a cache: a *hit* (the snapshot holds the same objects: the state
is reused as it was), an *update* (only PodGroups and pods changed: PodGroups whose Job and pod
objects are unchanged keep their JobInfo and TaskInfos, the rest are rebuilt) and a *miss* (opened
from scratch). Each must give exactly the result of a cycle without a cache; the update must
also leave exactly the opened state a fresh session would have.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import Snapshot, advance, run_cycle
from scheduler.cache import SessionCache
from scheduler.config_types import SchedulerConfig
from scheduler.model import Job, JobPhase, Task, TaskStatus
from scheduler.policies import PriorityClass
from scheduler.registry import default_registry
from scheduler.session import Session
from scheduler.testing import make_job, make_task
from tests.scheduler.golden_workloads import CONFIGS, build

NODE_COLUMNS = ("alloc", "used", "releasing", "pipelined", "idle", "future", "pod_count", "nz_requested")


def _json(result: Any) -> dict[str, Any]:
    out: dict[str, Any] = result.to_json()
    out.pop("timings", None)
    return out


def opened_state(ssn: Session, columns: bool = True) -> dict[str, Any]:
    """Everything a session holds after open that a cycle can observe, in a comparable form
    (orders included: jobs, tasks in a job, pods in a node's task list, dropped reasons).
    ``columns=False`` leaves out the node-table columns (a cache restores them at the next open)."""
    jobs = []
    for key, job in ssn.jobs.items():
        jobs.append(
            (
                key,
                job.job,
                str(job.phase),
                job.priority,
                job.min_resources,
                dict(job.counts),
                {r: dict(c) for r, c in job.role_counts.items()},
                list(job.allocated),
                list(job.total_request),
                job.ready,
                job.be_pending,
                job.best_effort_tasks,
                [(t.uid, t.task, str(t.status), t.node, t.req, t.priority, t.job is job) for t in job.tasks.values()],
            )
        )
    table = ssn.nodes
    return {
        "dims": ssn.dims,
        "jobs": jobs,
        "tasks": list(ssn.tasks),
        "dropped": [(k, r.to_json()) for k, r in ssn.dropped.items()],
        "columns": {c: getattr(table, c).tolist() for c in NODE_COLUMNS} if columns else None,
        "node_tasks": [[(uid, t.task, str(t.status)) for uid, t in d.items()] for d in table.tasks],
        "whole_requests": ssn.whole_requests,
    }


def plugin_states(ssn: Session) -> dict[str, Any]:
    """The open state of the plugins whose state depends on the jobs, comparable."""
    out: dict[str, Any] = {}
    for plugins in ssn.tiers:
        for p in plugins:
            if p.name == "drf":
                out["drf"] = dict(p.state.share)
            elif p.name == "overcommit":
                out["overcommit"] = (list(p.state.idle), list(p.state.inqueue))
            elif p.name == "proportion":
                attrs = p.state.attrs
                out["proportion"] = [
                    (k, a.allocated, a.request, a.inqueue, a.elastic, a.deserved, a.real_capability, a.share)
                    for k, a in attrs.items()
                ]
            elif p.name == "predicates":
                out["predicates"] = np.asarray(p.state._pods_passed).tolist()
    return out


# -- randomized sequences of snapshot changes -----------------------------------------------------


class Mutator:
    """Changes a snapshot the way a cluster does, keeping every unchanged object identical."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.serial = 0

    def _name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial:03d}"

    def step(self, snap: Snapshot) -> Snapshot:
        rng = self.rng
        kind = rng.choice(
            [
                "arrive",
                "arrive",
                "finish",
                "job-object",
                "job-phase",
                "pod-objects",
                "pod-status",
                "add-pod",
                "remove-pod",
                "orphan",
                "missing-queue",
                "shuffle",
                "nothing",
                "gpu-pod",
                "same-uid",
                "node",
                "priority-class",
            ]
        )
        jobs, tasks = list(snap.jobs), list(snap.tasks)
        if kind == "arrive":
            spec = make_job(
                self._name("new"),
                queue=rng.choice(snap.queues).name,
                replicas=rng.choice([1, 1, 2, 4]),
                cpu=rng.choice(["100m", "500m", "1", "2"]),
                memory=rng.choice(["256Mi", "1Gi"]),
                min_available=1,
                phase=rng.choice([JobPhase.PENDING, JobPhase.INQUEUE]),
                min_resources=rng.choice(["auto", None]),
                creation=rng.randint(0, 6),
            )
            return replace(snap, jobs=(*jobs, spec.job), tasks=(*tasks, *spec.tasks))
        if kind == "finish" and jobs:
            gone = rng.choice(jobs).key
            return replace(
                snap, jobs=tuple(j for j in jobs if j.key != gone), tasks=tuple(t for t in tasks if t.job != gone)
            )
        if kind == "job-object" and jobs:
            i = rng.randrange(len(jobs))
            jobs[i] = replace(jobs[i])  # equal value, new object
            return replace(snap, jobs=tuple(jobs))
        if kind == "job-phase" and jobs:
            i = rng.randrange(len(jobs))
            jobs[i] = replace(jobs[i], phase=rng.choice(list(JobPhase)))
            return replace(snap, jobs=tuple(jobs))
        if kind == "pod-objects" and tasks:
            for i in rng.sample(range(len(tasks)), k=min(len(tasks), rng.randint(1, 5))):
                tasks[i] = replace(tasks[i])
            return replace(snap, tasks=tuple(tasks))
        if kind == "pod-status" and tasks:
            i = rng.randrange(len(tasks))
            t = tasks[i]
            if t.node_name:
                status = rng.choice([TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.RELEASING, TaskStatus.BOUND])
                tasks[i] = replace(t, status=status)
            else:
                node = rng.choice(snap.nodes).name
                tasks[i] = replace(t, status=TaskStatus.RUNNING, node_name=node)
            return replace(snap, tasks=tuple(tasks))
        if kind == "add-pod" and jobs:
            job = rng.choice(jobs)
            t = make_task(self._name(f"{job.name}-x"), job.key, "250m", "256Mi", namespace=job.namespace)
            return replace(snap, tasks=(*tasks, t))
        if kind == "remove-pod" and tasks:
            del tasks[rng.randrange(len(tasks))]
            return replace(snap, tasks=tuple(tasks))
        if kind == "orphan":
            node = rng.choice(snap.nodes).name
            t = make_task(self._name("orphan"), "default/none", "100m", "64Mi", status=TaskStatus.RUNNING, node=node)
            return replace(snap, tasks=(*tasks, t))
        if kind == "missing-queue" and jobs:
            i = rng.randrange(len(jobs))
            jobs[i] = replace(jobs[i], queue=rng.choice(["nowhere", jobs[i].queue]))
            return replace(snap, jobs=tuple(jobs))
        if kind == "shuffle":
            rng.shuffle(tasks)
            rng.shuffle(jobs)
            return replace(snap, jobs=tuple(jobs), tasks=tuple(tasks))
        if kind == "gpu-pod" and jobs:  # may add a resource dimension: the update must step aside
            job = rng.choice(jobs)
            t = make_task(self._name(f"{job.name}-g"), job.key, "100m", "64Mi", **{"example.com/fpga": 1})
            return replace(snap, tasks=(*tasks, t))
        if kind == "same-uid" and tasks:  # two pods of one node sharing a uid
            placed = [t for t in tasks if t.node_name]
            if placed:
                t = rng.choice(placed)
                twin = replace(t, name=t.name + "-twin")
                return replace(snap, tasks=(*tasks, twin))
        if kind == "node":
            nodes = list(snap.nodes)
            i = rng.randrange(len(nodes))
            nodes[i] = replace(nodes[i])
            return replace(snap, nodes=tuple(nodes))
        if kind == "priority-class":
            return replace(snap, priority_classes=(*snap.priority_classes, PriorityClass(self._name("pc"), 5)))
        return snap


def run_sequence(seed: int, config: SchedulerConfig, steps: int, rng_seed: int) -> SessionCache:
    """Alternate cycles (then ``advance``) and random changes; compare every cycle and every
    opened state with a fresh session's."""
    rng = random.Random(rng_seed)
    mutate = Mutator(rng)
    # Mostly update whatever changed (the default limit sends small snapshots' big changes to a
    # fresh open); sometimes the default.
    cache = SessionCache(update_limit=rng.choice([math.inf, math.inf, 0.5]))
    registry = default_registry()
    snap = build(seed)
    for step in range(steps):
        want = run_cycle(snap, config)
        got = run_cycle(snap, config, cache=cache)
        assert _json(got) == _json(want), f"step {step}: cached result differs"
        # The rolled-back cached state is the opened state of ``snap`` (node columns are restored
        # from the cache's copies when it next opens).
        cached = cache._session
        assert cached is not None
        fresh = Session(snap, config, registry)
        assert opened_state(cached, columns=False) == opened_state(fresh, columns=False), f"step {step}: rollback"
        for name, saved in cache._arrays.items():
            assert np.array_equal(saved, getattr(fresh.nodes, name)), f"step {step}: saved column {name}"
        snap = advance(snap, want) if rng.random() < 0.5 else snap
        for _ in range(rng.randint(0, 3)):
            snap = mutate.step(snap)
        # The state a cache opens (hit, update or miss) equals a fresh open, plugins included.
        session = cache.open(snap, config, registry)
        fresh = Session(snap, config, registry)
        assert opened_state(session) == opened_state(fresh), f"step {step}: updated state differs"
        assert plugin_states(session) == plugin_states(fresh), f"step {step}: plugin state differs"
        cache.release(session)
    return cache


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=st.integers(0, 39), config=st.sampled_from(sorted(CONFIGS)), rng_seed=st.integers(0, 2**32 - 1))
def test_random_changes_give_the_uncached_results(seed: int, config: str, rng_seed: int) -> None:
    run_sequence(seed, CONFIGS[config], 6, rng_seed)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_long_sequences_use_every_path(config: str) -> None:
    hits = updates = misses = 0
    for seed in (3, 11, 24):
        cache = run_sequence(seed, CONFIGS[config], 12, seed * 7919)
        hits, updates, misses = hits + cache.hits, updates + cache.updates, misses + cache.misses
    assert hits
    assert updates
    assert misses


# -- the three paths, one by one --------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_cached_cycles_match_uncached(seed: int) -> None:
    for name, config in CONFIGS.items():
        cache = SessionCache(update_limit=math.inf)
        snap = build(seed)
        for cycle in range(3):
            want = _json(run_cycle(snap, config))
            first = _json(run_cycle(snap, config, cache=cache))  # cycle 0: miss; then: update
            again = _json(run_cycle(snap, config, cache=cache))  # hit: the rolled-back state
            assert first == want, f"seed {seed} {name} cycle {cycle}: miss/update differs"
            assert again == want, f"seed {seed} {name} cycle {cycle}: hit differs"
            snap = advance(snap, run_cycle(snap, config))
        assert cache.hits == 3
        assert cache.misses + cache.updates == 3
        assert cache.misses == 1, "advance() changes only pods and PodGroups: the state is updated"


def test_cache_hits_only_on_the_same_objects() -> None:
    config = CONFIGS["default"]
    snap = build(5)
    cache = SessionCache()
    run_cycle(snap, config, cache=cache)
    same = replace(snap, tasks=tuple(snap.tasks))  # new tuple, same objects: a hit
    run_cycle(same, config, cache=cache)
    assert (cache.hits, cache.updates, cache.misses) == (1, 0, 1)
    some = replace(snap, tasks=tuple(replace(t) if i % 5 == 0 else t for i, t in enumerate(snap.tasks)))
    assert _json(run_cycle(some, config, cache=cache)) == _json(run_cycle(some, config))
    assert (cache.hits, cache.updates, cache.misses) == (1, 1, 1), "a fifth of the pods changed: updated"
    changed = replace(snap, tasks=tuple(replace(t) for t in snap.tasks))  # equal values, new objects
    assert _json(run_cycle(changed, config, cache=cache)) == _json(run_cycle(changed, config))
    assert (cache.hits, cache.updates, cache.misses) == (1, 1, 2), "every pod changed: opened afresh"
    other = CONFIGS["capacity"]
    assert _json(run_cycle(changed, other, cache=cache)) == _json(run_cycle(changed, other))
    assert cache.misses == 3
    nodes = replace(changed, nodes=tuple(replace(n) for n in changed.nodes))  # nodes changed: opened again
    assert _json(run_cycle(nodes, other, cache=cache)) == _json(run_cycle(nodes, other))
    assert cache.misses == 4


def _pods(job: Job, n: int, **kw: Any) -> list[Task]:
    return [make_task(f"{job.name}-{i}", job.key, "500m", "512Mi", namespace=job.namespace, **kw) for i in range(n)]


def test_update_reuses_unchanged_jobs_and_rebuilds_changed_ones() -> None:
    config = CONFIGS["default"]
    registry = default_registry()
    snap = build(8)
    cache = SessionCache(update_limit=math.inf)
    cache.prime(snap, config, registry)
    before = cache._session
    assert before is not None
    old_jobs = dict(before.jobs)
    old_tasks = {key: dict(job.tasks) for key, job in old_jobs.items()}
    keys = sorted(old_jobs)
    phase_only, pods_changed, gone = keys[0], keys[1], keys[2]
    jobs = [replace(j, phase=JobPhase.RUNNING) if j.key == phase_only else j for j in snap.jobs if j.key != gone]
    new_job = Job("default/arrival", "arrival", queue=snap.queues[0].name)
    tasks = [replace(t) if t.job == pods_changed else t for t in snap.tasks if t.job != gone]
    changed = replace(snap, jobs=(*jobs, new_job), tasks=(*tasks, *_pods(new_job, 2)))

    session = cache.open(changed, config, registry)
    assert session is before
    assert (cache.updates, cache.misses) == (1, 1)
    for key in keys:
        if key in (phase_only, pods_changed, gone):
            continue
        assert session.jobs[key] is old_jobs[key], "an unchanged PodGroup keeps its JobInfo"
        for uid, t in session.jobs[key].tasks.items():
            assert t is old_tasks[key][uid], "and its TaskInfos"
    assert gone not in session.jobs
    assert session.jobs[phase_only] is not old_jobs[phase_only]
    for uid, t in session.jobs[phase_only].tasks.items():
        # Same pod objects: the TaskInfos are moved to the new JobInfo.
        assert t is old_tasks[phase_only][uid]
        assert t.job is session.jobs[phase_only]
    for uid, t in session.jobs[pods_changed].tasks.items():
        assert t is not old_tasks[pods_changed][uid]
    assert list(session.jobs["default/arrival"].tasks) == ["default/arrival-0", "default/arrival-1"]
    assert opened_state(session) == opened_state(Session(changed, config, registry))
    cache.release(session)
    assert _json(run_cycle(changed, config, cache=cache)) == _json(run_cycle(changed, config))


def test_update_keeps_the_open_order_of_node_task_lists() -> None:
    # Pods placed on a node by the update must sit where a fresh open puts them: ordered by
    # (PodGroup, uid), also when they sort before pods already there.
    config = CONFIGS["preempt-reclaim"]
    registry = default_registry()
    snap = build(2)
    node = snap.nodes[0].name
    early = Job("default/a-early", "a-early", queue=snap.queues[0].name, phase=JobPhase.RUNNING)
    late = Job("default/z-late", "z-late", queue=snap.queues[0].name, phase=JobPhase.RUNNING)
    tiny = {"cpu": "1m", "memory": "1Mi"}
    base = replace(
        snap, jobs=(*snap.jobs, late), tasks=(*snap.tasks, *_pods(late, 2, status=TaskStatus.RUNNING, node=node))
    )
    cache = SessionCache(update_limit=math.inf)
    cache.prime(base, config, registry)
    pods = [
        make_task(f"a-early-{i}", early.key, tiny["cpu"], tiny["memory"], status=TaskStatus.RUNNING, node=node)
        for i in range(3)
    ]
    more = replace(base, jobs=(*base.jobs, early), tasks=(*pods[:1], *base.tasks, *pods[1:]))
    session = cache.open(more, config, registry)
    assert cache.updates == 1
    order = list(session.nodes.tasks[0])
    assert order == list(Session(more, config, registry).nodes.tasks[0])
    assert order.index("default/a-early-0") < order.index("default/z-late-0")
    cache.release(session)


def test_update_steps_aside_when_it_cannot_be_exact() -> None:
    config = CONFIGS["default"]
    registry = default_registry()
    snap = build(4)
    cache = SessionCache(update_limit=math.inf)
    cache.prime(snap, config, registry)
    job = snap.jobs[0]
    gpu = make_task("new-dimension", job.key, "1", "1Gi", namespace=job.namespace, **{"example.com/fpga": 2})
    other = replace(snap, tasks=(*snap.tasks, gpu))
    assert _json(run_cycle(other, config, cache=cache)) == _json(run_cycle(other, config))
    assert (cache.updates, cache.misses) == (0, 2), "a new resource dimension needs a fresh open"
    duplicate = replace(other, jobs=(*other.jobs, replace(job)))
    assert _json(run_cycle(duplicate, config, cache=cache)) == _json(run_cycle(duplicate, config))
    assert (cache.updates, cache.misses) == (0, 3), "two PodGroups with one key"


def test_failed_cycle_drops_the_cached_state() -> None:
    config = CONFIGS["default"]
    snap = build(7)
    cache = SessionCache()
    run_cycle(snap, config, cache=cache)

    calls = []

    def boom() -> float:  # fails in the middle of the cycle, after some actions ran
        calls.append(1)
        if len(calls) > 3:
            raise RuntimeError("timer failed")
        return 0.0

    with pytest.raises(RuntimeError):
        run_cycle(snap, config, timer=boom, cache=cache)
    assert _json(run_cycle(snap, config, cache=cache)) == _json(run_cycle(snap, config))
    assert cache.misses == 2


def test_a_cached_job_closes_as_when_it_was_untouched() -> None:
    # Unchanged, untouched jobs keep their phase and reason from an earlier close; a job the
    # cycle touches is closed afresh.
    config = CONFIGS["default"]
    snap = build(13)
    cache = SessionCache()
    results = []
    for _ in range(4):
        results.append(_json(run_cycle(snap, config, cache=cache)))
        assert results[-1] == _json(run_cycle(snap, config))
    assert cache.hits == 3
    assert all(r == results[0] for r in results)


def test_a_cycle_changing_most_pods_drops_the_state(monkeypatch: pytest.MonkeyPatch) -> None:
    # Past its limit the journal stops recording: the session is dropped after the cycle instead
    # of rolled back (its successor snapshot would be opened afresh anyway).
    import scheduler.cache

    monkeypatch.setattr(scheduler.cache, "_MIN_JOURNAL", 0)
    config = CONFIGS["default"]
    for seed in range(40):
        snap = build(seed)
        cache = SessionCache(update_limit=0.05)
        first = run_cycle(snap, config, cache=cache)
        assert _json(first) == _json(run_cycle(snap, config))
        if first.binds:
            break
    else:
        pytest.fail("no seed binds a pod")
    assert cache._session is None, "the journal was abandoned: nothing kept"
    assert _json(run_cycle(snap, config, cache=cache)) == _json(run_cycle(snap, config))
    assert (cache.hits, cache.updates, cache.misses) == (0, 0, 2)
