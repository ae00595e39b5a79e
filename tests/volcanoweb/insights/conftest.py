"""Fixtures for the insights tests: a database-backed sim installed as THE backend, the cast, queues."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.volcanoweb.clusters.helpers import make_sim
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.backends.sim import ManualClock
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster
from volcanoweb.queues.builtin import ensure_builtin_queues


@pytest.fixture
def sim(db: Any) -> Iterator[tuple[DatabaseSimCluster, ManualClock]]:
    """A 4-node sim (8 CPUs, 32 GiB each) on a manual clock, used by every service via get_backend()."""
    backend, clock = make_sim(duration=100000.0)
    previous = backend_module.set_backend(backend)
    yield backend, clock
    backend_module.set_backend(previous)


@pytest.fixture
def cluster(sim: Any, cast: Any) -> Any:
    """The sim's nodes mirrored into the database, with the cast (and the built-in queues: a transactional
    test case flushes the migrations' rows)."""
    ensure_builtin_queues()
    cluster_services.sync_from_backend()
    return sim


@pytest.fixture
def failing_input_insert(monkeypatch: Any) -> Callable[[bool], None]:
    """``switch(True)`` makes the cycle input's insert (the recording's last statement) fail; ``switch(False)``
    puts the real one back."""
    from volcanoweb.insights import recording
    from volcanoweb.insights.models import CycleInput

    real = recording.insert_statement

    def failing(objs: Any, *args: Any) -> Any:
        if isinstance(objs[0], CycleInput):
            return "INSERT INTO insights_no_such_table (id) VALUES (%s)", [1]
        return real(objs, *args)

    def switch(fail: bool) -> None:
        monkeypatch.setattr(recording, "insert_statement", failing if fail else real)

    return switch
