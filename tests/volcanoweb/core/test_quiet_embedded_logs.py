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
