"""docker-compose.yml parses and runs the same processes as `make stack`."""

from __future__ import annotations

from pathlib import Path

import yaml

from volcanoweb.serve.management.commands.runstack import stack_commands

ROOT = Path(__file__).resolve().parents[3]


def _normalise(cmd: list[str]) -> list[str]:
    """Drop the interpreter path, host binding and file locations that differ by design."""
    out = [Path(cmd[0]).name, *cmd[1:]]
    for flag in ("-b", "--host", "--schedule"):
        if flag in out:
            index = out.index(flag)
            out[index + 1] = "<" + flag + ">"
    return out


def test_compose_parses_and_matches_the_native_stack() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "web", "live", "worker", "scheduler", "beat"} <= set(services)
    for name in ("postgres", "redis", "web"):
        assert "healthcheck" in services[name], name
    native = stack_commands("127.0.0.1", 8000, Path("/data"))
    for role in ("web", "live", "worker", "scheduler", "beat"):
        assert _normalise(services[role]["command"]) == _normalise(native[role]), role
        env = services[role]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["REDIS_URL"].startswith("redis://")
        assert env["LIVE_PORT"] == "${LIVE_PORT:-8001}"  # pages open their socket on the live service's port
    assert "pgdata" in compose["volumes"]
