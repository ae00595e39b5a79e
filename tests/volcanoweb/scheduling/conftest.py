"""Fixtures for the clusters and scheduling tests: a database-backed sim installed as THE backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb.clusters.helpers import make_sim
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters.backends.sim import ManualClock
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster


@pytest.fixture
def sim(db: Any) -> Iterator[tuple[DatabaseSimCluster, ManualClock]]:
    """A 4-node sim (8 CPUs, 32 GiB each) on a manual clock, used by every service via get_backend()."""
    backend, clock = make_sim()
    previous = backend_module.set_backend(backend)
    yield backend, clock
    backend_module.set_backend(previous)
