"""PostgreSQL's JIT compiler is off for the product's connections unless DATABASE_JIT asks for it (ADR 0032)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.postgresql_only
@pytest.mark.django_db
def test_the_connection_runs_without_jit() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("off",)


def _options(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, str]:
    """The database OPTIONS the settings module gives for this environment (the module run afresh)."""
    monkeypatch.delenv("DATABASE_JIT", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = runpy.run_path(str(ROOT / "volcanoweb" / "settings.py"), run_name="volcanoweb.settings_probe")
    return dict(settings["DATABASES"]["default"].get("OPTIONS", {}))


def test_database_jit_turns_it_back_on_and_other_options_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgres://u@127.0.0.1:5432/db"
    assert _options(monkeypatch, DATABASE_URL=url)["options"] == "-c jit=off"
    assert "options" not in _options(monkeypatch, DATABASE_URL=url, DATABASE_JIT="true")
    kept = _options(monkeypatch, DATABASE_URL=url + "?options=-c%20statement_timeout%3D5000")
    assert kept["options"] == "-c statement_timeout=5000 -c jit=off"
