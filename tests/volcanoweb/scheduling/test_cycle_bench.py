"""Cycle time through the Django bridge: 1,000 nodes and 1,000 pending pods (opt-in: BENCH_CYCLE=1)."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.base import GROUP_NAME_ANNOTATION
from volcanoweb.clusters.backends.sim import ManualClock
from volcanoweb.clusters.simdb import DatabaseSimCluster
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.scheduling.services import run_cycle

pytestmark = pytest.mark.skipif(not os.environ.get("BENCH_CYCLE"), reason="benchmark: set BENCH_CYCLE=1")


def test_cycle_time_1000_nodes_1000_pods(db: Any, capsys: pytest.CaptureFixture[str]) -> None:
    backend = DatabaseSimCluster("cpu:1000x16c64Gi", clock=ManualClock(0))
    backend_module.set_backend(backend)
    try:
        cluster_services.sync_from_backend(backend)
        groups = PodGroup.objects.bulk_create(
            [PodGroup(namespace="bench", name=f"j{i}", queue_name="default", min_member=4) for i in range(250)]
        )
        spec = {"schedulerName": "volcano", "containers": [{"name": "m", "image": "x"}]}
        Pod.objects.bulk_create(
            [
                Pod(
                    namespace="bench",
                    name=f"j{g}-{i}",
                    group_name=f"j{g}",
                    podgroup=group,
                    scheduler_name="volcano",
                    annotations={GROUP_NAME_ANNOTATION: f"j{g}"},
                    requests={"cpu": 1000, "memory": 2 * 1024**3},
                    spec=spec,
                )
                for g, group in enumerate(groups)
                for i in range(4)
            ]
        )
        started = time.perf_counter()
        cluster_services.sync_from_backend(backend)  # creates the 1,000 pods in the sim
        sync_s = time.perf_counter() - started
        run = run_cycle(backend=backend)
        assert run is not None
        assert run.binds == 1000, run.error
        with capsys.disabled():
            print(
                f"\nsync(create 1000 pods in sim) {sync_s * 1000:.0f} ms; cycle {run.duration_ms:.0f} ms: "
                f"snapshot {run.snapshot_ms:.0f} ms, core {run.core_ms:.0f} ms {run.action_ms}, "
                f"apply {run.apply_ms:.0f} ms, backend binds {run.bind_ms:.0f} ms"
            )
        started = time.perf_counter()
        result = cluster_services.sync_from_backend(backend)
        with capsys.disabled():
            print(f"sync after binds: {result.events} events in {(time.perf_counter() - started) * 1000:.0f} ms")
        if os.environ.get("BENCH_PROFILE"):
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            run2 = run_cycle(backend=backend)
            profiler.disable()
            with capsys.disabled():
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        else:
            run2 = run_cycle(backend=backend)
        assert run2 is not None
        with capsys.disabled():
            print(f"steady-state cycle (1000 running): {run2.duration_ms:.0f} ms, snapshot {run2.snapshot_ms:.0f} ms")
    finally:
        backend_module.set_backend(None)
