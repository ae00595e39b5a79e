"""A live test server with the web tests' cast, a 4-node simulated cluster, and ``vcctl`` run as a subprocess.

Each test gets :class:`Vcctl`: ``vc("job", "list", user="alice")`` runs
``python -m volcanoweb.cli.main job list`` with ``VOLCANOWEB_SERVER`` pointing at the live server,
``VOLCANOWEB_TOKEN`` set to that user's API token (none for ``user=None``) and ``XDG_CONFIG_HOME`` in
``tmp_path`` so that no real configuration is read or written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.volcanoweb.clusters.helpers import make_sim
from tests.volcanoweb.conftest import Cast, _fast_passwords, cast  # noqa: F401  (fixtures used by these tests)
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.tenancy.services import create_token

REPO = Path(__file__).resolve().parents[2]
CAST = ("root", "alice", "bob", "victor", "charlie")


@dataclass
class Result:
    """A finished ``vcctl`` run."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def json(self) -> Any:
        """Return stdout parsed as JSON."""
        return json.loads(self.out)

    def yaml(self) -> Any:
        """Return stdout parsed as YAML."""
        return yaml.safe_load(self.out)

    def expect(self, code: int, *fragments: str) -> None:
        """Assert the exit status, that stderr holds every fragment, and that there is no traceback."""
        assert self.code == code, str(self)
        for fragment in fragments:
            assert fragment in self.err, str(self)
        assert "Traceback" not in self.err, str(self)

    def lines(self) -> list[str]:
        """Return stdout's lines."""
        return self.out.splitlines()

    def __str__(self) -> str:
        return f"vcctl {' '.join(self.args)} -> {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}"


@dataclass
class Vcctl:
    """Runs the CLI against the live server as one of the cast."""

    url: str
    home: Path
    tokens: dict[str, str]
    cast: Cast
    backend: Any
    env: dict[str, str] = field(default_factory=dict)

    def __call__(
        self, *args: str, user: str | None = "alice", stdin: str | None = None, env: dict[str, str] | None = None
    ) -> Result:
        """Run ``vcctl ARGS`` and return its exit status and output (never raises on failure)."""
        run_env = {**self.env, **(env or {})}
        if user is not None and "VOLCANOWEB_TOKEN" not in (env or {}):
            run_env["VOLCANOWEB_TOKEN"] = self.tokens[user]
        done = subprocess.run(
            [sys.executable, "-m", "volcanoweb.cli.main", *args],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            env=run_env,
            cwd=self.home,
            timeout=60,
            check=False,
        )
        return Result(tuple(args), done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, **kwargs: Any) -> Result:
        """Run and assert exit status 0 and no traceback."""
        result = self(*args, **kwargs)
        assert result.code == 0, str(result)
        assert "Traceback" not in result.err, str(result)
        return result

    def fails(self, code: int, *args: str, **kwargs: Any) -> Result:
        """Run and assert the exit status ``code``, a message on stderr, and no traceback."""
        result = self(*args, **kwargs)
        assert result.code == code, str(result)
        assert result.err.strip(), str(result)
        assert "Traceback" not in result.err, str(result)
        return result

    def batch(self, *runs: tuple[tuple[str, ...], dict[str, Any]]) -> list[Result]:
        """Run independent invocations concurrently (each ``(args, kwargs)``); return results in order."""
        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(lambda run: self(*run[0], **run[1]), runs))

    def write(self, name: str, text: str) -> str:
        """Write a file in the working directory; return its path."""
        target = self.home / name
        target.write_text(text)
        return str(target)


@pytest.fixture
def vc(live_server: Any, settings: Any, tmp_path: Path, cast: Cast) -> Iterator[Vcctl]:  # noqa: F811
    """The CLI runner, with a synced 4-node simulated cluster (cpu-0..cpu-3, 8 CPUs and 32 GiB each).

    The tests are transactional (the live server is another thread): an earlier transactional test's flush
    removed the migration's built-in queues, so they are made again here rather than restored from a
    serialized copy (which collides with the content types the flush re-created).
    """
    ensure_builtin_queues()
    backend, _clock = make_sim()
    previous = backend_module.set_backend(backend)
    cluster_services.sync_from_backend()
    tokens = {name: create_token(getattr(cast, name), "cli-tests")[1] for name in CAST}
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOLCANOWEB_") and "proxy" not in k.lower()}
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "VOLCANOWEB_SERVER": live_server.url,
            "PYTHONPATH": str(REPO),
            "NO_COLOR": "1",
        }
    )
    yield Vcctl(live_server.url, home, tokens, cast, backend, env)
    backend_module.set_backend(previous)


def manifest(*docs: dict[str, Any]) -> str:
    """Return documents as multi-document YAML."""
    return yaml.safe_dump_all(list(docs), sort_keys=False)


def run(*args: str, **kwargs: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Return one entry for :meth:`Vcctl.batch`."""
    return args, kwargs


@pytest.fixture(autouse=True)
def _fresh_snapshot_memo() -> None:
    """The scheduling loop's snapshot memo starts empty in each test (see tests/volcanoweb/conftest.py)."""
    from volcanoweb.scheduling import cycles

    cycles._memo.reset()
