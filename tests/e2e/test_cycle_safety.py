"""Scheduling cycles in real processes: two at once never bind anything twice; a kill mid-cycle loses nothing.

The worker processes are ``manage.py shell -c`` programs on the pytest-django test database with the
database-backed simulated cluster, so they share the cluster state with this test process.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from tests.e2e.procs import ROOT, database_url, manage
from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster
from volcanoweb.clusters.models import SimPod
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.scheduling import lease
from volcanoweb.scheduling.models import PodIntent, RunStatus, SchedulerLease, SchedulingRun

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

POOL = "cpu:4x8c32Gi"  # 32 CPUs
NODE_CPU = 8000

#: Cycles in a loop, each under a lease far shorter than a cycle: the other worker takes the lease
#: mid-cycle, so both run cycles at the same time and the fencing token has to keep them apart.
RACING = """
import time
from volcanoweb.scheduling import cycles, lease
deadline = time.time() + {seconds}
runs = 0
while time.time() < deadline:
    holder = lease.default_holder()
    token = lease.claim_cycle(holder, seconds=0.01)
    if token is not None:
        cycles.run_claimed_cycle(token, holder)
        runs += 1
print("runs", runs)
"""
ONE_CYCLE = "from volcanoweb.scheduling import cycles; print('run', cycles.run_cycle())"
#: One cycle whose worker is killed (SIGKILL) between its commit and its cluster calls: its cluster
#: dies at the first bind the cycle asks for (the intents are committed by then).
CRASHING_CYCLE = """
import os, signal
from volcanoweb.clusters.backend import get_backend
from volcanoweb.scheduling import cycles

class Dying:
    def __init__(self, backend):
        self.backend = backend
    def __getattr__(self, name):
        return getattr(self.backend, name)
    def bind_many(self, binds):
        os.kill(os.getpid(), signal.SIGKILL)
    def bind(self, namespace, name, node):
        os.kill(os.getpid(), signal.SIGKILL)

print("run", cycles.run_cycle(backend=Dying(get_backend())))
"""


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path),
        "CLUSTER_BACKEND": "sim",
        "SIM_NODE_POOL": POOL,
        "SIM_DEFAULT_DURATION": "100000",
        "SIM_CLOCK_SPEED": "1",
        "LOG_LEVEL": "WARNING",
        **extra,
    }


def start(code: str, environ: dict[str, str], log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        manage("shell", "-c", code), cwd=ROOT, env=environ, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True
    )


@pytest.fixture
def sim() -> Any:
    """The database-backed sim (same settings as the worker processes), installed as this process's backend."""
    backend = DatabaseSimCluster(POOL, speed=1.0, default_duration=100000)
    previous = backend_module.set_backend(backend)
    backend.ensure_state()
    cluster_services.sync_from_backend(backend)
    yield backend
    backend_module.set_backend(previous)


def make_gangs(count: int, size: int, cpu: int) -> list[PodGroup]:
    """Gangs already admitted (Inqueue), so that the first cycle binds."""
    ensure_builtin_queues()  # a transactional test before this one flushed root and default
    tenant = builders.make_tenant("team-a")
    groups = [make_gang(f"g{i:02d}", size, tenant=tenant, cpu=cpu, phase="Inqueue")[0] for i in range(count)]
    cluster_services.sync_from_backend()  # the pods exist in the cluster, unbound
    return groups


def assert_consistent(groups: list[PodGroup]) -> None:
    """Every gang fully bound or fully unbound, in the database and in the cluster; no node over capacity."""
    sim_nodes = dict(SimPod.objects.values_list("name", "node_name"))
    used: Counter[str] = Counter()
    for group in groups:
        pods = list(Pod.objects.filter(podgroup=group))
        bound = [p for p in pods if p.node_name]
        assert len(bound) in (0, len(pods)), (group.name, [(p.name, p.node_name) for p in pods])
        for pod in pods:
            assert sim_nodes[pod.name] == pod.node_name, (pod.name, sim_nodes[pod.name], pod.node_name)
            if pod.node_name:
                used[pod.node_name] += pod.requests["cpu"]
    assert all(cpu <= NODE_CPU for cpu in used.values()), used
    assert not PodIntent.objects.exists()


def binds_per_pod() -> Counter[str]:
    """How many applied cycles bound each pod (more than one would be a double bind)."""
    counts: Counter[str] = Counter()
    for decisions in SchedulingRun.objects.filter(status=RunStatus.SUCCEEDED).values_list("decisions", flat=True):
        counts.update(list((decisions or {}).get("binds") or {}))
    return counts


def test_two_workers_cycling_at_once_never_bind_twice(sim: Any, tmp_path: Path) -> None:
    groups = make_gangs(12, 4, 1000)  # 48 CPUs asked, 32 there: 8 gangs fit
    environ = env(tmp_path)
    workers = [start(RACING.format(seconds=5), environ, tmp_path / f"worker{i}.log") for i in range(2)]
    for i, proc in enumerate(workers):
        assert proc.wait(120) == 0, (tmp_path / f"worker{i}.log").read_text()
    runs = SchedulingRun.objects.all()
    assert runs.filter(status=RunStatus.SUCCEEDED).exists()
    holders = {h.split(":")[1] for h in runs.values_list("holder", flat=True)}
    assert len(holders) == 2  # both processes ran cycles
    counts = binds_per_pod()
    assert counts
    assert max(counts.values()) == 1, counts
    assert len(counts) == 32  # 8 gangs of 4 fill the 32 CPUs
    assert_consistent(groups)


def test_a_worker_killed_after_applying_loses_nothing(sim: Any, tmp_path: Path) -> None:
    groups = make_gangs(6, 4, 2000)  # 48 CPUs asked, 32 there: 4 gangs fit
    crashing = start(CRASHING_CYCLE, env(tmp_path), tmp_path / "crash.log")
    assert crashing.wait(120) == -signal.SIGKILL, (tmp_path / "crash.log").read_text()

    # Killed between its commit and its cluster calls: decisions recorded as intents, nothing bound yet.
    intents = PodIntent.objects.count()
    assert intents == 16
    assert not SimPod.objects.exclude(node_name="").exists()
    assert Pod.objects.exclude(node_name="").count() == 16
    # The dead worker's lease runs out (simulated: its expiry moved to now), and another worker takes over.
    SchedulerLease.objects.filter(name=lease.LEASE_NAME).update(expires_at=timezone.now())
    survivor = start(ONE_CYCLE, env(tmp_path), tmp_path / "survivor.log")
    assert survivor.wait(120) == 0, (tmp_path / "survivor.log").read_text()
    recovering = SchedulingRun.objects.order_by("-pk").first()
    assert recovering is not None
    assert recovering.recovered == 16, recovering.error
    assert_consistent(groups)
    assert SimPod.objects.exclude(node_name="").count() == 16
    assert max(binds_per_pod().values(), default=0) <= 1  # the crashed run is not counted: it never finished
