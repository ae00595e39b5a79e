"""Debian's kubectl against a real server for the everyday commands of round two: aggregated discovery
without warnings, ``kubectl logs`` (-f, -c, --tail, --previous), ``kubectl explain`` to the leaves,
``kubectl create`` of a Command (the v2 protobuf document for client-side validation) and of a kind the
server does not serve, and the Command's name kept."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.e2e.kubeserver import kube_server, kubectl
from volcanoweb.demo.services import seed_demo
from volcanoweb.jobs.models import Job
from volcanoweb.tenancy.services import create_token

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "logme"},
    "spec": {
        "minAvailable": 1,
        "schedulerName": "volcano",
        "queue": "ci-cd",
        "tasks": [
            {
                "name": "build",
                "replicas": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                        ],
                    }
                },
            }
        ],
    },
}


def _prepare() -> dict[str, str]:
    from django.contrib.auth import get_user_model

    seed_demo()
    Job.objects.all().delete()
    users = get_user_model().objects
    return {name: create_token(users.get(username=name), "e2e")[1] for name in ("admin", "dave")}


def _wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_kubectl_everyday_commands(tmp_path: Path) -> None:
    tokens = _prepare()
    with kube_server(tmp_path, SIM_DEFAULT_DURATION="6") as server:
        dave = server.kubeconfig(tokens["dave"], "dave")

        # Discovery: the aggregated documents, so two requests and no warning or error.
        resources = kubectl(dave, "api-resources", "-v=6")
        assert resources.returncode == 0, resources.stderr
        fetched = re.findall(r"GET https://[^/]+(/\S*?)\?timeout", resources.stderr)
        assert fetched == ["/api", "/apis"], fetched
        assert "couldn't get" not in resources.stderr
        assert re.search(r"^jobs\s+vcjob,vj\s+batch\.volcano\.sh/v1alpha1\s+true\s+Job$", resources.stdout, re.M)

        # kubectl logs: follow a running pod until it ends, then tail, container and previous.
        (tmp_path / "job.yaml").write_text(yaml.safe_dump(JOB))
        applied = kubectl(dave, "apply", "-n", "dev", "-f", str(tmp_path / "job.yaml"))
        assert applied.returncode == 0, applied.stderr
        pod = "logme-build-0"

        def started() -> bool:
            phase = kubectl(dave, "get", "pod", "-n", "dev", pod, "-o", "jsonpath={.status.phase}").stdout
            return phase in ("Running", "Succeeded")

        _wait_for(started, 60, f"{pod} running")
        followed = kubectl(dave, "logs", "-n", "dev", pod, "-f", timeout=90)
        assert followed.returncode == 0, followed.stderr
        lines = followed.stdout.splitlines()
        assert "container main started" in followed.stdout
        assert lines[-1].endswith("exited with code 0 (Completed)"), lines
        assert len(lines) == len(set(lines)), lines
        assert kubectl(dave, "logs", "-n", "dev", pod, "--tail=1").stdout.splitlines() == lines[-1:]
        assert kubectl(dave, "logs", "-n", "dev", pod, "-c", "main", "--timestamps").stdout.startswith("20")
        previous = kubectl(dave, "logs", "-n", "dev", pod, "--previous")
        assert previous.returncode == 1
        assert f'previous terminated container "main" in pod "{pod}" not found' in previous.stderr

        # kubectl explain reads the v3 schemas down to the leaves.
        replicas = kubectl(dave, "explain", "vcjob.spec.tasks.replicas")
        assert replicas.returncode == 0, replicas.stderr
        assert "FIELD: replicas <integer>" in replicas.stdout
        assert "Replicas specifies the replicas of this TaskSpec in Job." in replicas.stdout
        image = kubectl(dave, "explain", "vcjob.spec.tasks.template.spec.containers.image")
        assert "FIELD: image <string>" in image.stdout, image.stdout + image.stderr
        assert "<integer>" in kubectl(dave, "explain", "queue.spec.weight").stdout
        assert "<string>" in kubectl(dave, "explain", "podgroup.status.phase").stdout

        # kubectl create of a Command: client-side validation downloads /openapi/v2 as protobuf; the name is kept.
        command = {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"name": "restart-logme", "namespace": "dev"},
            "action": "RestartJob",
            "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "logme"},
        }
        (tmp_path / "command.yaml").write_text(yaml.safe_dump(command))
        created = kubectl(dave, "create", "-f", str(tmp_path / "command.yaml"))
        assert created.returncode == 0, created.stderr
        assert created.stdout.strip() == "command.bus.volcano.sh/restart-logme created"

        def consumed() -> bool:
            return "restart-logme" not in kubectl(dave, "get", "commands", "-n", "dev", "-o", "name").stdout

        _wait_for(consumed, 60, "the Command acted on and gone")
        gone = kubectl(dave, "get", "command", "-n", "dev", "restart-logme")
        assert "NotFound" in gone.stderr

        # A kind the server does not serve: kubectl's own message.
        command["kind"] = "Bogus"
        (tmp_path / "bogus.yaml").write_text(yaml.safe_dump(command))
        bogus = kubectl(dave, "create", "-f", str(tmp_path / "bogus.yaml"))
        assert bogus.returncode == 1
        assert 'no matches for kind "Bogus" in version "bus.volcano.sh/v1alpha1"' in bogus.stderr, bogus.stderr
        assert "failed to download openapi" not in bogus.stderr
