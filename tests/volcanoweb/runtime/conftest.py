"""Fixtures for the runtime controller tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.volcanoweb.runtime.harness import World
from volcanoweb.clusters import backend as backend_module


@pytest.fixture
def world(cast: Any, ml_queues: Any) -> Iterator[World]:
    """A simulated cluster of 8 big nodes wired into the controllers, with the cast and cookbook queues."""
    made = World()
    yield made
    backend_module.set_backend(made.previous_backend)
