"""A real embedded server (daphne with its HTTPS listener, loops in-process, sim cluster) on the test database,
for the clients nobody here wrote: Debian's kubectl and the official Python client."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from tests.e2e.procs import ROOT, database_url, free_port, manage, running, wait_http

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


@dataclass
class KubeServer:
    """The running server: its HTTP URL (REST, vcctl) and HTTPS port (kubectl)."""

    url: str
    https_port: int
    home: Path

    def kubeconfig(self, token: str, name: str) -> Path:
        """Write a kubeconfig for ``token`` with ``vcctl kubeconfig`` and return its path."""
        target = self.home / f"{name}.kubeconfig"
        env = {
            **os.environ,
            "VOLCANOWEB_SERVER": self.url,
            "VOLCANOWEB_TOKEN": token,
            "XDG_CONFIG_HOME": str(self.home),
        }
        done = subprocess.run(
            [sys.executable, "-m", "volcanoweb.cli.main", "kubeconfig", "--file", str(target)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return target


def kubectl(config: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run kubectl with that kubeconfig; never raises on a failure exit status."""
    env = {**os.environ, "KUBECONFIG": str(config), "HOME": str(config.parent)}
    return subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)


def kubectl_popen(config: Path, *args: str) -> subprocess.Popen[str]:
    """Start a long-running kubectl (``get -w``); the caller stops it."""
    env = {**os.environ, "KUBECONFIG": str(config), "HOME": str(config.parent)}
    return subprocess.Popen(
        [KUBECTL, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


@contextlib.contextmanager
def kube_server(tmp_path: Path, **extra_env: Any) -> Iterator[KubeServer]:
    """Start ``runembedded --no-seed`` with an HTTPS listener on free ports against the test database."""
    port, https_port = free_port(), free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path / "var"),
        "HTTPS_PORT": str(https_port),
        "RUN_LOOPS_IN_PROCESS": "true",
        "CLUSTER_BACKEND": "sim",
        "SIM_CLOCK_SPEED": "1",
        "SIM_DEFAULT_DURATION": "4",
        "SCHEDULE_PERIOD": "0.5",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "DEBUG": "true",
        **{k: str(v) for k, v in extra_env.items()},
    }
    env.pop("KUBE_API_URL", None)
    log_path = ROOT / "artifacts" / f"kube-server-{tmp_path.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with running(manage("runembedded", "--no-seed", "--port", str(port)), env, log_path) as proc:
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/healthz", proc=proc)
        home = tmp_path / "home"
        home.mkdir()
        yield KubeServer(url=url, https_port=https_port, home=home)
