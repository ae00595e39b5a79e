"""Replayable cycles: every cycle's input is kept (last N), downloadable, and replays to the same decisions."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone

from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.insights import services as insights
from volcanoweb.insights.models import CycleInput
from volcanoweb.scheduling.models import RunStatus
from volcanoweb.scheduling.services import run_cycle

ROOT = Path(__file__).resolve().parents[3]


def _simulate(path: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", "simulate", str(path), *extra], capture_output=True, cwd=ROOT, check=False
    )


def _busy_cycles(cast: Any, clock: Any) -> list[Any]:
    make_gang("fits", 3, tenant=cast.team_a, cpu=6000)
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)  # no 9-CPU node: stays pending
    make_gang("late", 2, tenant=cast.team_a, cpu=1500)
    cluster_services.sync_from_backend()
    runs = []
    for _ in range(3):
        runs.append(run_cycle())
        clock.advance(5)
        cluster_services.sync_from_backend()
    assert all(r is not None and r.status == RunStatus.SUCCEEDED for r in runs), [r.error for r in runs if r]
    return runs


def test_downloaded_cycle_replays_byte_identically(cluster: Any, cast: Any, root_api: Any, tmp_path: Path) -> None:
    _backend, clock = cluster
    runs = _busy_cycles(cast, clock)
    first = runs[0]
    response = root_api.get(f"/api/v1/cycles/{first.pk}/snapshot")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="cycle-{first.pk}.json"'
    doc = json.loads(response.content)
    assert doc["kind"] == "CycleInput"
    assert doc["cycle"] == first.pk
    # what was recorded is what the live cycle applied
    assert doc["recorded"]["binds"] == first.decisions["binds"]
    assert set(doc["recorded"]["unschedulable"]) == set(first.unschedulable) == {"team-b/too-big"}
    path = tmp_path / "cycle.json"
    path.write_bytes(response.content)
    replay = _simulate(path)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == (json.dumps({"cycles": [doc["recorded"]]}, indent=2, sort_keys=True) + "\n").encode()
    # later cycles (snapshot objects reused from the memo) replay as faithfully
    for run in runs[1:]:
        path.write_bytes(root_api.get(f"/api/v1/cycles/{run.pk}/snapshot").content)
        doc = json.loads(path.read_text())
        assert (
            _simulate(path).stdout
            == (json.dumps({"cycles": [doc["recorded"]]}, indent=2, sort_keys=True) + "\n").encode()
        )


def test_replay_with_another_configuration(cluster: Any, cast: Any, root_api: Any, tmp_path: Path) -> None:
    _backend, clock = cluster
    first = _busy_cycles(cast, clock)[0]
    path = tmp_path / "cycle.json"
    path.write_bytes(root_api.get(f"/api/v1/cycles/{first.pk}/snapshot").content)
    conf = tmp_path / "conf.yaml"
    conf.write_text('actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n')
    other = _simulate(path, "--conf", str(conf))
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["cycles"][0]["binds"] == {}
    assert json.loads(path.read_text())["recorded"]["binds"]


def test_cycle_list_and_file_are_for_platform_admins(cluster: Any, cast: Any, client_for: Any) -> None:
    _backend, clock = cluster
    runs = _busy_cycles(cast, clock)
    root = client_for(cast.root, "token")
    listing = root.get("/api/v1/cycles").json()
    assert [item["cycle"] for item in listing["items"]] == [r.pk for r in reversed(runs)]
    assert listing["items"][-1]["unschedulable"] == 1
    for user in (cast.alice, cast.charlie):
        for url in ("/api/v1/cycles", f"/api/v1/cycles/{runs[0].pk}/snapshot"):
            response = client_for(user).get(url)
            assert response.status_code == 403
            assert response.json()["kind"] == "Status"
            assert "platform admins" in response.json()["message"]
    assert client_for(None).get(f"/api/v1/cycles/{runs[0].pk}/snapshot").status_code == 401
    missing = root.get("/api/v1/cycles/999999/snapshot")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"


def test_only_the_last_n_cycle_inputs_are_kept(cluster: Any, cast: Any, settings: Any) -> None:
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 2
    _backend, clock = cluster
    runs = _busy_cycles(cast, clock)
    insights.prune(timezone.now() + timedelta(seconds=settings.INSIGHTS_DECIDED_CYCLE_RETENTION + 1))
    assert list(CycleInput.objects.order_by("run_id").values_list("run_id", flat=True)) == [r.pk for r in runs[1:]]
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 0
    run = run_cycle()
    assert run is not None
    assert not CycleInput.objects.filter(run_id=run.pk).exists()
