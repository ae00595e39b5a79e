"""Stack-cycle benchmark: the Django scheduling cycle on PostgreSQL with and without insights recording.

A fresh database ``volcanoweb_cycle_<pid>`` (dropped afterwards), the database-backed sim on a manual
clock with ``--nodes`` nodes (16 CPUs, 64 GiB), ``--running`` pods in gangs of 4 that bind in the first
cycles and keep running, and ``--pending`` pods in gangs of 4 too big for any node (each cycle gives them
a reason). Then ``--cycles`` steady-state cycles per mode, recording on and off (``INSIGHTS_RECORD``), in
blocks of ``--block`` that alternate (a round: one block of each, in alternating order), so that both modes
see the same state and the same machine noise. Recording runs as the product runs it, in the recorder's
writer thread beside the loop (``--in-line``: inside the cycle): each block starts with an untimed lead
cycle, so that every timed cycle with recording has the previous cycle's recording going on beside it,
and ends by waiting for the last recording (untimed), so that no block without recording has one beside
it. The report gives the median cycle duration of each mode and the relative overhead (``overhead_pct``:
of the medians; ``paired_overhead_pct``: the median over rounds of the difference of the blocks' medians,
against the median without, which the machine's drift over the run does not move), and the recording's
own time, commit included (``median_whole_record_ms``: each run's ``record_ms``). With ``--busy N`` each
cycle first gets N new pods (gangs of 4) that wait, so that every cycle changes its snapshot and opens
waits, as the stack's cycles under load do.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from bench.pages import _drop, _setup


def _add_gangs(backend: Any, prefix: str, count: int, cpu: int, memory: int) -> None:
    """``count`` plain volcano pods in gangs of 4 (``<prefix><g>-<i>``), created in the cluster and mirrored."""
    from scheduler.decode import GROUP_ANNOTATION
    from volcanoweb.clusters import services as cluster_services
    from volcanoweb.jobs.models import Pod, PodGroup

    spec = {"schedulerName": "volcano", "containers": [{"name": "m", "image": "x"}]}
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
                requests={"cpu": cpu, "memory": memory},
                spec=spec,
            )
            for g, group in enumerate(groups)
            for i in range(4)
        ],
        batch_size=1000,
    )
    # The mirror creates at most 2,000 plain pods in the cluster per sync: create them all before timing.
    while cluster_services.create_plain_pods_in_backend(backend):
        pass
    cluster_services.sync_from_backend(backend)


def populate(nodes: int, running: int, pending: int, running_cpu: int = 4000) -> Any:
    """Create the cluster, the queues and the pods; return the sim backend."""
    from volcanoweb.clusters import backend as backend_module
    from volcanoweb.clusters import services as cluster_services
    from volcanoweb.clusters.backends.sim import ManualClock
    from volcanoweb.clusters.backends.simdb import DatabaseSimCluster
    from volcanoweb.queues.builtin import ensure_builtin_queues

    ensure_builtin_queues()
    backend = DatabaseSimCluster(f"cpu:{nodes}x16c64Gi", default_duration=1e9, clock=ManualClock(0))
    backend_module.set_backend(backend)
    cluster_services.sync_from_backend(backend)
    _add_gangs(backend, "run", running, running_cpu, 2 * 1024**3)
    _add_gangs(backend, "big", pending, 32000, 2 * 1024**3)
    return backend


def _split(runs: Any) -> dict[str, Any]:
    """Median snapshot / decide (core) / apply / bind / whole-cycle milliseconds of the given runs."""
    rows = list(runs.values("snapshot_ms", "core_ms", "apply_ms", "record_ms", "bind_ms", "duration_ms", "binds"))
    if not rows:
        return {}
    out: dict[str, Any] = {
        key: round(statistics.median(r[key] or 0.0 for r in rows), 2)
        for key in ("snapshot_ms", "core_ms", "apply_ms", "record_ms", "bind_ms", "duration_ms")
    }
    out["snapshot_plus_apply_ms"] = round(
        statistics.median((r["snapshot_ms"] or 0) + (r["apply_ms"] or 0) + (r["bind_ms"] or 0) for r in rows), 2
    )
    out["binds"] = [r["binds"] for r in rows]
    out["cycles"] = len(rows)
    return out


def bind_rounds(backend: Any, batch: int, rounds: int) -> dict[str, Any]:
    """Add ``batch`` pending pods that fit (gangs of 4, 1 CPU), time the cycle that binds them; ``rounds`` times."""
    from volcanoweb.clusters import services as cluster_services
    from volcanoweb.scheduling.models import SchedulingRun
    from volcanoweb.scheduling.services import run_cycle

    ids = []
    for r in range(rounds):
        _add_gangs(backend, f"fit{r}-", batch, 1000, 1024**3)
        run = run_cycle(backend=backend)
        assert run is not None
        assert run.status == "succeeded", run.error
        ids.append(run.pk)
        cluster_services.sync_from_backend(backend)
    return {"pods_per_round": batch, **_split(SchedulingRun.objects.filter(pk__in=ids))}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Populate, warm up, then time alternating cycles with recording on and off."""
    db_name = f"volcanoweb_cycle_{os.getpid()}"
    _setup(db_name)
    try:
        from django.conf import settings

        from volcanoweb.clusters import services as cluster_services
        from volcanoweb.jobs.models import Pod
        from volcanoweb.scheduling.models import SchedulingRun
        from volcanoweb.scheduling.services import run_cycle

        backend = populate(args.nodes, args.running, args.pending, args.running_cpu)
        for _ in range(args.warmup):
            run_cycle(backend=backend)
            cluster_services.sync_from_backend(backend)
        from volcanoweb.insights import recorder

        settings.INSIGHTS_RECORD_ASYNC = not args.in_line
        times: dict[str, list[float]] = {"on": [], "off": []}
        run_ids: dict[str, list[int]] = {"recording": [], "no_recording": []}
        pairs: list[float] = []  # per round: the median of its recording block less that of its other block
        block = max(1, args.block)
        for r in range((args.cycles + block - 1) // block):
            medians: dict[str, float] = {}
            for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
                settings.INSIGHTS_RECORD = mode == "on"
                block_times = []
                for i in range(block + 1):  # a lead cycle (untimed): the 1st timed one has its recording beside it
                    if args.busy:  # new gangs that wait (the running pods fill the nodes' CPU)
                        _add_gangs(backend, f"busy{r}-{i}{mode}-", args.busy, 500, 256 * 1024**2)
                    run = run_cycle(backend=backend)
                    assert run is not None
                    assert run.status == "succeeded", run.error
                    if i:
                        run_ids["recording" if mode == "on" else "no_recording"].append(run.pk)
                        block_times.append(run.duration_ms)
                    if args.busy:
                        cluster_services.sync_from_backend(backend)
                recorder.flush()  # untimed: the block's last recording, before the other mode's block
                times[mode] += block_times
                medians[mode] = statistics.median(block_times)
            pairs.append(medians["on"] - medians["off"])
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        # each round ran both blocks back to back (in alternating order): free of the machine's drift
        paired = statistics.median(pairs)
        # the recording's own time, commit included, as each run keeps it (the timed cycles only)
        record_ms = list(
            SchedulingRun.objects.filter(pk__in=run_ids["recording"]).order_by("pk").values_list("record_ms", flat=True)
        )
        binding = bind_rounds(backend, args.bind_batch, args.bind_rounds) if args.bind_batch else None
        return {
            "split_median_ms": {
                mode: _split(SchedulingRun.objects.filter(pk__in=ids)) for mode, ids in run_ids.items()
            },
            "binding_cycles": binding,
            "nodes": args.nodes,
            "running_pods": args.running,
            "pending_pods": args.pending,
            "pods_in_db": Pod.objects.count(),
            "cycles_per_mode": args.cycles,
            "busy_pods_per_cycle": args.busy,
            "recording": "in line" if args.in_line else "writer thread",
            "block": block,
            "median_cycle_ms": {"recording": round(on, 2), "no_recording": round(off, 2)},
            "median_whole_record_ms": round(statistics.median(record_ms), 2) if record_ms else None,
            "per_cycle_ms": {  # in run order: duration, apply, recording
                mode: [
                    [round(r.duration_ms, 1), round(r.apply_ms, 1), round(r.record_ms, 1)]
                    for r in SchedulingRun.objects.filter(pk__in=ids).order_by("pk")
                ]
                for mode, ids in run_ids.items()
            },
            "whole_record_ms": [round(ms, 1) for ms in record_ms],
            "overhead_pct": round((on - off) / off * 100, 2) if off else None,
            "paired_overhead_ms": round(paired, 2),
            "paired_overhead_pct": round(paired / off * 100, 2) if off else None,
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
