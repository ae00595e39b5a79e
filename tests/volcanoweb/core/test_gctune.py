"""The server processes' garbage-collector settings (ADR 0034): start-up's objects frozen, full collections rare,
the young generations as Python sets them; 0 leaves everything as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from volcanoweb.core.gctune import tune_for_serving


@pytest.fixture
def restored_gc() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.unfreeze()
    gc.set_threshold(*before)


def test_serving_freezes_what_exists_and_makes_full_collections_rare(restored_gc: tuple[int, int, int]) -> None:
    kept = [[i] for i in range(1000)]  # objects that exist before the tuning
    assert tune_for_serving(1000) is True
    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold() == (restored_gc[0], restored_gc[1], 1000)


def test_zero_leaves_pythons_settings(restored_gc: tuple[int, int, int]) -> None:
    frozen = gc.get_freeze_count()
    assert tune_for_serving(0) is False
    assert gc.get_threshold() == restored_gc
    assert gc.get_freeze_count() == frozen


def test_an_asgi_process_serves_with_the_setting() -> None:
    """A process that loads the ASGI application (uvicorn, daphne, the embedded server) is tuned with the setting
    (one process: what the setting's values do is the unit tests' above)."""
    import os
    import subprocess
    import sys

    probe = "import gc, volcanoweb.asgi; print(gc.get_threshold()[2], gc.get_freeze_count() > 10000)"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "volcanoweb.settings", "GC_GEN2_THRESHOLD": "250"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "250 True", done.stdout
