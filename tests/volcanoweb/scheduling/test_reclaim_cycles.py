"""Reclaim across cycles on the database-backed sim: the claim takes the free room first and evicts
only what it still needs, once (the victims' release is credited in later cycles)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import make_gang, make_sim
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Pod
from volcanoweb.scheduling import services as scheduling_services
from volcanoweb.scheduling.models import SchedulingRun
from volcanoweb.scheduling.services import run_cycle
from volcanoweb.tenancy.access import SYSTEM

# The cookbook's scheduler configuration (reclaim and preempt after backfill; binpack).
CONFIG = (builders.COOKBOOK / "12-scheduler-conf.yaml").read_text()


def test_reclaim_takes_free_room_first_and_evicts_only_the_shortfall(cast: Any) -> None:
    backend, clock = make_sim("cpu:8x32c128Gi", duration=100000.0)
    previous = backend_module.set_backend(backend)
    try:
        scheduling_services.save_config(SYSTEM, CONFIG)
        builders.make_queue("qa", weight=1)
        builders.make_queue("qb", weight=1)
        cluster_services.sync_from_backend()
        # 24 x 8 CPUs of qa spread over 8 nodes of 32: one free 8-CPU slot per node.
        make_gang("hog", 24, tenant=cast.team_a, queue="qa", min_member=1, cpu=8000)
        cluster_services.sync_from_backend()
        run_cycle()
        cluster_services.sync_from_backend()
        running = Pod.objects.filter(podgroup__name="hog", phase="Running")
        assert running.count() == 24
        assert set(Counter(running.values_list("node_name", flat=True)).values()) == {3}
        # A gang of 12 in qb (same weight): deserved 96 CPUs for qb, 160 for qa. It gets the 8 free
        # slots and needs exactly 4 slots reclaimed from the hog.
        make_gang("claim", 12, tenant=cast.team_a, queue="qb", cpu=8000)
        for _ in range(6):
            run_cycle()
            clock.advance(5)
            cluster_services.sync_from_backend()
        evicted = [e["task"] for r in SchedulingRun.objects.all() for e in r.decisions.get("evictions", [])]
        assert Pod.objects.filter(podgroup__name="claim", phase="Running").count() == 12
        assert len(evicted) == len(set(evicted)) == 4
        assert all(name.startswith("team-a/hog-") for name in evicted)
        assert Pod.objects.filter(podgroup__name="hog", phase="Running").count() == 20
    finally:
        backend_module.set_backend(previous)
