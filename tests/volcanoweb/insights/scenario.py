"""A shared scenario: queue ``small`` (capability 4 CPUs) held by ``holder`` while ``waiter`` waits, then starts."""

from __future__ import annotations

from typing import Any

from tests.volcanoweb import builders
from tests.volcanoweb.reactions import react
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Job
from volcanoweb.runtime import services as runtime
from volcanoweb.scheduling.models import RunStatus
from volcanoweb.scheduling.services import run_cycle


def submit(name: str, queue: str, replicas: int, cpu: str, duration: str = "") -> Job:
    """Submit a Volcano Job to team-a through the job service (its controller creates the PodGroup)."""
    task = builders.task("w", replicas, cpu=cpu)
    if duration:
        task["template"]["metadata"] = {"annotations": {"sim.volcanoweb.io/duration": duration}}
    job = builders.make_job("team-a", name, queue=queue, tasks=[task])
    runtime.on_job_submitted(job.pk)
    return job


def cycle(clock: Any, seconds: float = 1.0) -> Any:
    """Run one scheduling cycle, then let the sim clock move and mirror the cluster (the controllers reacting to
    each, as the stack's informer does)."""
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    react()
    clock.advance(seconds)
    cluster_services.sync_from_backend()
    react()
    return run


def cycles(clock: Any, n: int, seconds: float = 5.0) -> list[Any]:
    """``n`` cycles of :func:`cycle`, the clock moving ``seconds`` after each."""
    return [cycle(clock, seconds) for _ in range(n)]


def small_queue_scenario(clock: Any, *, finish: bool = True) -> tuple[Job, Job]:
    """``holder`` (4 CPUs, 10 s) fills queue ``small``; ``waiter`` (2 x 2 CPUs) waits, and starts after it."""
    builders.make_queue("small", capability={"cpu": "4", "memory": "64Gi"}, allowed=("team-a",))
    builders.make_queue("roomy", allowed=("team-a",))
    holder = submit("holder", "small", 1, "4", duration="10s")
    for _ in range(3):
        cycle(clock)
    waiter = submit("waiter", "small", 2, "2")
    for _ in range(3):
        cycle(clock)
    if finish:
        clock.advance(15)
        cluster_services.sync_from_backend()
        react()
        for _ in range(4):
            cycle(clock)
    return holder, waiter
