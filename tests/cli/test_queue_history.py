"""vcctl queue history: a table of one resource over time, CSV of all, JSON; errors as exit code 2 or Status."""

from __future__ import annotations

import csv
import io

import pytest

from tests.cli.conftest import Vcctl
from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.scheduling.services import run_cycle

pytestmark = pytest.mark.django_db(transaction=True)


def test_queue_history(vc: Vcctl) -> None:
    builders.make_queue("research", capability={"cpu": "6", "memory": "24Gi"}, allowed=("team-a",))
    make_gang("busy", 2, tenant=vc.cast.team_a, queue="research", cpu=2000)
    cluster_services.sync_from_backend()
    for _ in range(2):
        run_cycle()
        cluster_services.sync_from_backend()
    table = vc.ok("queue", "history", "-n", "research")
    header = table.lines()[0].split()
    assert header == ["Time", "Allocated", "Deserved", "Guarantee", "Capability", "Demand", "Samples"]
    rows = [line.split() for line in table.lines()[1:] if "change:" not in line]
    assert len(rows) == 2
    assert rows[-1][1] == "4"  # 4 CPUs allocated (cores)
    assert rows[-1][4] == "6"
    assert any("change: queue: create by system" in line for line in table.lines())
    memory = vc.ok("queue", "history", "-n", "research", "-r", "memory")
    assert memory.lines()[-2].split()[1] == "2Gi"
    exported = vc.ok("queue", "history", "-n", "research", "--csv")
    records = list(csv.DictReader(io.StringIO(exported.out)))
    assert {r["resource"] for r in records} >= {"cpu", "memory"}
    raw = vc.ok("queue", "history", "-n", "research", "--step", "1m", "-o", "json").json()
    assert raw["kind"] == "QueueHistory"
    assert raw["resolution"] == "minute"
    vc.fails(2, "queue", "history", "-n", "research", "--from", "yesterday").expect(2, "from: invalid time")
    vc.fails(1, "queue", "history", "-n", "research", user="charlie").expect(1, "not found")
    vc.fails(2, "queue", "history").expect(2, "queue name must be specified")
