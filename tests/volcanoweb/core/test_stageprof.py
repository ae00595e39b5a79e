"""The benchmark's per-stage CPU counters (issue 17): off by default, exclusive of nested stages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from volcanoweb.core import stageprof
from volcanoweb.core.errors import BadRequest
from volcanoweb.manifests.parse import parse_documents
from volcanoweb.runtime import services as runtime_services
from volcanoweb.serve.management.commands.runstack import stack_commands


def _busy(n: int) -> int:
    return sum(i * i for i in range(n))


def test_nothing_is_wrapped_without_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(stageprof.ENV, raising=False)
    assert not stageprof.enabled()
    assert stageprof.install() is False
    assert not hasattr(runtime_services.sync_jobs, "__stageprof__")


def test_a_stage_is_the_function_itself_when_off_and_timed_when_on(monkeypatch: pytest.MonkeyPatch) -> None:
    def body() -> int:
        return _busy(1000)

    monkeypatch.setattr(stageprof, "_ENABLED", False)
    assert stageprof.stage("off")(body) is body
    monkeypatch.setattr(stageprof, "_ENABLED", True)
    monkeypatch.setattr(stageprof, "_totals", {})
    marked = stageprof.stage("on")(body)
    assert marked is not body
    assert marked.__stageprof__ == "on"  # type: ignore[attr-defined]
    assert marked() == body()
    assert stageprof.snapshot()["stages"]["on"]["calls"] == 1


_MARKED = """
import json
import django

django.setup()
from volcanoweb import apply
from volcanoweb.api import apply as api_apply
from volcanoweb.api.base import ApiView
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.simengine import SimEngine
from volcanoweb.insights import recorder
from volcanoweb.live import broadcast
from volcanoweb.runtime import services as runtime_services
from volcanoweb.scheduling import cycles, decisions, intents

points = {
    "ApiView.dispatch": ApiView.dispatch,
    "apply_documents": apply.apply_documents,
    "api_apply.apply_documents": api_apply.apply_documents,
    "sync_job": runtime_services.sync_job,
    "sync_jobs": runtime_services.sync_jobs,
    "snapshot": cycles._snapshot,
    "decide": cycles._decide,
    "apply_result": decisions.apply_result,
    "record_run": recorder.record_run,
    "execute_intents": intents.execute_intents,
    "sync_from_backend": cluster_services.sync_from_backend,
    "create_pod": SimEngine.create_pod,
    "create_pods": SimEngine.create_pods,
    "bind": SimEngine.bind,
    "bind_many": SimEngine.bind_many,
    "tick": SimEngine.tick,
    "flush": broadcast.flush,
}
print(json.dumps({name: getattr(func, "__stageprof__", None) for name, func in points.items()}))
"""


def test_with_the_environment_variable_every_stage_marks_its_entry_points(tmp_path: Path) -> None:
    env = {**os.environ, stageprof.ENV: str(tmp_path), "DJANGO_SETTINGS_MODULE": "volcanoweb.settings"}
    out = subprocess.run([sys.executable, "-c", _MARKED], env=env, capture_output=True, text=True, check=True)
    marked = json.loads(out.stdout.strip().splitlines()[-1])
    assert marked == {
        "ApiView.dispatch": "api request",
        "apply_documents": "api apply (manifests)",
        "api_apply.apply_documents": "api apply (manifests)",
        "sync_job": "controller sync",
        "sync_jobs": "controller sync",
        "snapshot": "cycle snapshot",
        "decide": "cycle decide",
        "apply_result": "cycle apply",
        "record_run": "insights record",
        "execute_intents": "cycle bind",
        "sync_from_backend": "backend mirror",
        "create_pod": "sim create pods",
        "create_pods": "sim create pods",
        "bind": "sim bind",
        "bind_many": "sim bind",
        "tick": "sim kubelet",
        "flush": "broadcast",
    }


def test_a_nested_stage_is_charged_to_the_inner_stage_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stageprof, "_totals", {})
    inner = stageprof.timed("inner", lambda: _busy(200_000))

    def outer_body() -> int:
        _busy(50_000)
        return inner() + inner()

    outer = stageprof.timed("outer", outer_body)
    import time

    t0 = time.thread_time()
    outer()
    total = time.thread_time() - t0
    stages = stageprof.snapshot()["stages"]
    assert stages["inner"]["calls"] == 2
    assert stages["outer"]["calls"] == 1
    assert stages["inner"]["cpu_seconds"] >= 0
    assert stages["outer"]["cpu_seconds"] >= 0
    # exclusive: the two stages together never exceed the CPU the call took
    assert stages["inner"]["cpu_seconds"] + stages["outer"]["cpu_seconds"] <= total + 1e-6


def test_a_stage_that_raises_is_still_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stageprof, "_totals", {})

    def fail() -> None:
        raise ValueError("x")

    wrapped = stageprof.timed("failing", fail)
    with pytest.raises(ValueError, match="x"):
        wrapped()
    assert stageprof.snapshot()["stages"]["failing"]["calls"] == 1
    assert stageprof._stack() == []


def test_read_all_reads_the_processes_files(tmp_path: Path) -> None:
    (tmp_path / "12.json").write_text(json.dumps({"pid": 12, "stages": {"a": {"cpu_seconds": 1.5, "calls": 3}}}))
    (tmp_path / ".13.tmp").write_text("partial")
    (tmp_path / "14.json").write_text("{not json")
    assert stageprof.read_all(tmp_path) == {12: {"pid": 12, "stages": {"a": {"cpu_seconds": 1.5, "calls": 3}}}}


@pytest.mark.parametrize(("workers", "names"), [(1, ["worker"]), (2, ["worker", "worker2"])])
def test_runstack_starts_controller_workers_processes(workers: int, names: list[str]) -> None:
    with override_settings(CONTROLLER_WORKERS=workers):
        commands = stack_commands("127.0.0.1", 8000, Path("/data"))
    found = [name for name in commands if name.startswith("worker")]
    assert found == names
    nodes: list[Any] = [commands[n][commands[n].index("-n") + 1] for n in names]
    assert len(set(nodes)) == workers  # distinct Celery node names
    assert all(commands[n][commands[n].index("-Q") + 1] == "celery" for n in names)


def _list_body(n: int) -> str:
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}} for i in range(n)]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def test_the_document_limit_is_a_setting() -> None:
    with pytest.raises(BadRequest, match="the limit is 100"):
        parse_documents(_list_body(101))
    with override_settings(MAX_MANIFEST_DOCUMENTS=500):
        assert len(parse_documents(_list_body(500))) == 500
        with pytest.raises(BadRequest, match="the limit is 500"):
            parse_documents(_list_body(501))


_COUNTED = """
import django, json
django.setup()
from django.db import connection
from volcanoweb.core import stageprof

stageprof.install()
connection.close()  # the next query opens a connection: the counter is on every new one
with connection.cursor() as cursor:
    for _ in range(3):
        cursor.execute("SELECT 1")
print(json.dumps(stageprof.snapshot()["statements"]))
"""


def test_with_the_environment_variable_a_process_counts_the_statements_it_sends(tmp_path: Path) -> None:
    """The benchmark's statements per job come from this counter (``bench/cpuprof.statements``)."""
    env = {**os.environ, stageprof.ENV: str(tmp_path), "DJANGO_SETTINGS_MODULE": "volcanoweb.settings"}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    out = subprocess.run([sys.executable, "-c", _COUNTED], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == 3
    assert stageprof.snapshot()["statements"] == 0  # this process was started without it: nothing counted
