"""`make run`'s terminal shows the URL, the logins and real problems (issue 29, item 10): in the embedded mode
Celery's per-task success lines, kombu's in-memory broker warning and the INFO lines (loops started, logins, demo
seeded) are not logged unless LOG_LEVEL asks; the stack mode keeps them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PROBE = (
    "import django, json, logging; django.setup(); "
    "print(json.dumps({n: logging.getLogger(n).getEffectiveLevel() for n in ('celery.app.trace', 'kombu.connection',"
    " 'volcanoweb')}))"
)


def _levels(tmp_path: Path, **env: str) -> dict[str, int]:
    full = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER", "LOG_LEVEL")}
    full.update({"DJANGO_SETTINGS_MODULE": "volcanoweb.settings", "VAR_DIR": str(tmp_path), **env})
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=full, capture_output=True, text=True, check=True)
    levels: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return levels


@pytest.mark.both_databases
def test_embedded_mode_is_quiet_and_the_stack_keeps_its_task_lines(tmp_path: Path) -> None:
    embedded = _levels(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3")
    assert embedded["celery.app.trace"] >= 30  # WARNING
    assert embedded["kombu.connection"] >= 40  # ERROR
    assert embedded["volcanoweb"] == 30  # WARNING: real problems only
    asked = _levels(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3", LOG_LEVEL="INFO")
    assert asked["volcanoweb"] == 20
    stack = _levels(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3", REDIS_URL="redis://127.0.0.1:6379/0")
    assert stack["celery.app.trace"] <= 20
    assert stack["volcanoweb"] == 20


#: Logs what Django logs for a 404 (a warning) and a 500 (an error) of a request, as ``django.request`` does.
REQUEST_LINES = (
    "import django, logging; django.setup(); log = logging.getLogger('django.request'); "
    "log.warning('Not Found: %s', '/jobs/ml/gone/'); log.error('Internal Server Error: %s', '/boom/')"
)


def _stderr(tmp_path: Path, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER", "LOG_LEVEL")}
    full.update({"DJANGO_SETTINGS_MODULE": "volcanoweb.settings", "VAR_DIR": str(tmp_path), **env})
    out = subprocess.run(
        [sys.executable, "-c", REQUEST_LINES], cwd=ROOT, env=full, capture_output=True, text=True, check=True
    )
    return out.stderr


@pytest.mark.both_databases
def test_a_request_is_logged_once_and_a_404_is_no_problem_in_the_embedded_mode(tmp_path: Path) -> None:
    """With DEBUG on, Django's own console handler printed each request line a second time (bare, unformatted:
    every 404 twice in `make run`'s terminal); in the embedded mode a 404 or 403 answer is the browser's business,
    not a problem of the product: only server errors show."""
    sqlite = f"sqlite:///{tmp_path}/db.sqlite3"
    embedded = _stderr(tmp_path, DATABASE_URL=sqlite, DEBUG="true")
    assert "Not Found" not in embedded, embedded
    assert embedded.count("Internal Server Error: /boom/") == 1, embedded
    stack = _stderr(tmp_path, DATABASE_URL=sqlite, REDIS_URL="redis://127.0.0.1:6379/0", DEBUG="true")
    assert stack.count("Not Found: /jobs/ml/gone/") == 1, stack  # the stack keeps them, once
    assert stack.count("Internal Server Error: /boom/") == 1, stack
