"""Environment-driven settings: typed readers and start-up failures that name the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from volcanoweb.core.env import env_bool, env_choice, env_float, env_int, env_list, env_secret

ROOT = Path(__file__).resolve().parents[3]


def test_it_reads_typed_values() -> None:
    env = {"B": "yes", "I": "42", "F": "250ms", "L": "a, b,,c", "C": "sim"}
    assert env_bool("B", environ=env) is True
    assert env_int("I", 0, environ=env) == 42
    assert env_float("F", 1.0, environ=env) == pytest.approx(0.25)
    assert env_list("L", environ=env) == ["a", "b", "c"]
    assert env_choice("C", ("sim", "kubernetes"), "sim", environ=env) == "sim"


def test_it_uses_defaults_when_unset() -> None:
    assert env_bool("NOPE", True, environ={}) is True
    assert env_int("NOPE", 7, environ={}) == 7
    assert env_float("NOPE", 1.5, environ={}) == 1.5


@pytest.mark.parametrize(
    ("reader", "value", "fragment"),
    [
        (lambda env: env_bool("X", environ=env), "maybe", "X: expected a boolean"),
        (lambda env: env_int("X", 1, environ=env, minimum=1), "0", "X: must be at least 1"),
        (lambda env: env_int("X", 1, environ=env), "ten", "X: expected an integer"),
        (lambda env: env_float("X", 1.0, environ=env, positive=True), "-1", "X: must be greater than zero"),
        (lambda env: env_float("X", 1.0, environ=env), "fast", "X: expected a number"),
        (lambda env: env_choice("X", ("a", "b"), "a", environ=env), "c", "X: expected one of a, b"),
    ],
)
def test_it_names_the_variable_on_bad_values(reader, value, fragment) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ImproperlyConfigured, match=fragment):
        reader({"X": value})


def test_secret_file(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    assert env_secret("KEY", environ={"KEY_FILE": str(secret)}) == "s3cret"
    with pytest.raises(ImproperlyConfigured, match="KEY_FILE"):
        env_secret("KEY", environ={"KEY_FILE": str(tmp_path / "missing")})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SCHEDULE_PERIOD", "soon"),
        ("SCHEDULE_PERIOD", "0"),
        ("CLUSTER_BACKEND", "nomad"),
        ("DEBUG", "perhaps"),
        ("SIM_CLOCK_SPEED", "-2"),
        ("DATABASE_URL", "nosuchdb://x"),
        ("SIM_NODE_POOL", "cpu:lots"),
        ("CRONJOB_DEFAULT_TIME_ZONE", "Mars/Olympus"),
    ],
)
def test_bad_setting_fails_at_start_naming_the_variable(name: str, value: str) -> None:
    env = {**os.environ, name: value}
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    assert name in proc.stderr


def test_production_requires_a_secret_key() -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "SECRET_KEY_FILE"}}
    env["DEBUG"] = "false"
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    assert "SECRET_KEY" in proc.stderr
