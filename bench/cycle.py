"""Stack-cycle benchmark: the Django scheduling cycle on PostgreSQL with and without insights recording.

A fresh database ``volcanoweb_cycle_<pid>`` (dropped afterwards), the database-backed sim on a manual
clock with ``--nodes`` nodes (16 CPUs, 64 GiB), ``--running`` pods in gangs of 4 that bind in the first
cycles and keep running, and ``--pending`` pods in gangs of 4 too big for any node (each cycle gives them
a reason). Then ``--cycles`` steady-state cycles alternate recording on and off (``INSIGHTS_RECORD``), in
pairs, so that both halves see the same state and the same machine noise; the report gives the median
cycle duration of each half and the relative overhead.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from bench.pages import _drop, _setup


def populate(nodes: int, running: int, pending: int) -> Any:
    """Create the cluster, the queues and the pods; return the sim backend."""
    from scheduler.manifests import GROUP_ANNOTATION
    from volcanoweb.clusters import backend as backend_module
    from volcanoweb.clusters import services as cluster_services
    from volcanoweb.clusters.backends.sim import ManualClock
    from volcanoweb.clusters.simdb import DatabaseSimCluster
    from volcanoweb.jobs.models import Pod, PodGroup
    from volcanoweb.queues.builtin import ensure_builtin_queues

    ensure_builtin_queues()
    backend = DatabaseSimCluster(f"cpu:{nodes}x16c64Gi", default_duration=1e9, clock=ManualClock(0))
    backend_module.set_backend(backend)
    cluster_services.sync_from_backend(backend)
    spec = {"schedulerName": "volcano", "containers": [{"name": "m", "image": "x"}]}
    for prefix, count, cpu in (("run", running, 4000), ("big", pending, 32000)):
        groups = PodGroup.objects.bulk_create(
            [
                PodGroup(namespace="bench", name=f"{prefix}{i}", queue_name="default", min_member=4)
                for i in range(count // 4)
            ]
        )
        Pod.objects.bulk_create(
            [
                Pod(
                    namespace="bench",
                    name=f"{prefix}{g}-{i}",
                    group_name=f"{prefix}{g}",
                    podgroup=group,
                    scheduler_name="volcano",
                    annotations={GROUP_ANNOTATION: f"{prefix}{g}"},
                    requests={"cpu": cpu, "memory": 2 * 1024**3},
                    spec=spec,
                )
                for g, group in enumerate(groups)
                for i in range(4)
            ],
            batch_size=1000,
        )
    cluster_services.sync_from_backend(backend)
    return backend


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Populate, warm up, then time alternating cycles with recording on and off."""
    db_name = f"volcanoweb_cycle_{os.getpid()}"
    _setup(db_name)
    try:
        from django.conf import settings

        from volcanoweb.clusters import services as cluster_services
        from volcanoweb.insights.models import CycleInput
        from volcanoweb.scheduling.services import run_cycle

        backend = populate(args.nodes, args.running, args.pending)
        for _ in range(args.warmup):
            run_cycle(backend=backend)
            cluster_services.sync_from_backend(backend)
        times: dict[str, list[float]] = {"on": [], "off": []}
        record_ms: list[float] = []
        for i in range(args.cycles):
            for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
                settings.INSIGHTS_RECORD = mode == "on"
                run = run_cycle(backend=backend)
                assert run is not None
                assert run.status == "succeeded", run.error
                times[mode].append(run.duration_ms)
                if mode == "on":
                    row = CycleInput.objects.filter(run_id=run.pk).only("record_ms").first()
                    record_ms.append(row.record_ms if row else 0.0)
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        return {
            "nodes": args.nodes,
            "running_pods": args.running,
            "pending_pods": args.pending,
            "cycles_per_mode": args.cycles,
            "median_cycle_ms": {"recording": round(on, 2), "no_recording": round(off, 2)},
            "median_record_ms": round(statistics.median(record_ms), 2) if record_ms else None,
            "overhead_pct": round((on - off) / off * 100, 2) if off else None,
            "target_pct": 5.0,
            "database": db_name,
        }
    finally:
        _drop(db_name)


def main(args: argparse.Namespace) -> dict[str, Any]:
    """Run and time the whole benchmark."""
    t0 = time.perf_counter()
    section = run(args)
    section["seconds"] = round(time.perf_counter() - t0, 1)
    return section
