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
                        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
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


def test_kubectl_pods_nodes_auth_and_kubeconfigs(tmp_path: Path) -> None:
    """Pods with READY/RESTARTS and conditions (kubectl wait), deleting a job's pod, PodGroup RUNNINGS, events
    --for, a queue that cannot be deleted, nodes, auth can-i/whoami, cluster-info, /livez, merged kubeconfigs."""
    from django.contrib.auth import get_user_model

    tokens = _prepare()
    carol = create_token(get_user_model().objects.get(username="carol"), "e2e")[1]
    with kube_server(tmp_path, SIM_DEFAULT_DURATION="600") as server:
        dave = server.kubeconfig(tokens["dave"], "dave")
        job = {**JOB, "metadata": {"name": "longrun"}}
        job["spec"] = {**JOB["spec"], "tasks": [{**JOB["spec"]["tasks"][0], "replicas": 2}], "minAvailable": 2}
        (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
        assert kubectl(dave, "apply", "-n", "dev", "-f", str(tmp_path / "job.yaml")).returncode == 0
        pod = "longrun-build-0"

        # kubectl wait on the Ready condition; READY and RESTARTS columns.
        _wait_for(lambda: kubectl(dave, "get", "pod", "-n", "dev", pod).returncode == 0, 60, f"{pod} exists")
        waited = kubectl(dave, "wait", "-n", "dev", "--for=condition=Ready", f"pod/{pod}", "--timeout=60s", timeout=90)
        assert waited.returncode == 0, waited.stderr
        assert f"pod/{pod} condition met" in waited.stdout
        listing = kubectl(dave, "get", "pods", "-n", "dev").stdout.splitlines()
        assert listing[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        row = next(line.split() for line in listing if line.startswith(pod))
        assert row[1:4] == ["1/1", "Running", "0"]
        shown = yaml.safe_load(kubectl(dave, "get", "pod", "-n", "dev", pod, "-o", "yaml").stdout)
        assert "backendUid" not in shown["status"]
        assert shown["status"]["containerStatuses"][0]["state"]["running"]

        # PodGroup RUNNINGS.
        groups = kubectl(dave, "get", "pg", "-n", "dev").stdout.splitlines()
        header = groups[0].split()
        cells = next(line.split() for line in groups[1:] if line.startswith("longrun"))
        assert cells[header.index("RUNNINGS")] == "2", groups

        # Deleting a job's pod: gone, then created again by the job controller (PodEvicted's default).
        uid = shown["metadata"]["uid"]
        deleted = kubectl(dave, "delete", "pod", "-n", "dev", pod, "--wait=false")
        assert deleted.returncode == 0, deleted.stderr

        def recreated() -> bool:
            again = kubectl(dave, "get", "pod", "-n", "dev", pod, "-o", "jsonpath={.metadata.uid}")
            return again.returncode == 0 and again.stdout not in ("", uid)

        _wait_for(recreated, 90, f"{pod} created again")
        events = kubectl(dave, "events", "-n", "dev", "--for", "vcjob/longrun")
        assert events.returncode == 0, events.stderr
        assert "Job/longrun" in events.stdout

        # A queue with children: kubectl prints why.
        admin = server.kubeconfig(tokens["admin"], "admin")
        refused = kubectl(admin, "delete", "queue", "ml-team")
        assert refused.returncode == 1
        assert "can not be deleted because it has" in refused.stderr, refused.stderr

        # Nodes, auth, cluster-info, health.
        nodes = kubectl(dave, "get", "nodes")
        assert nodes.stdout.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        assert " Ready " in nodes.stdout
        labels = kubectl(dave, "get", "node", "cpu-0", "-o", "jsonpath={.metadata.labels}").stdout
        assert '"kubernetes.io/os":"linux"' in labels
        assert kubectl(dave, "auth", "can-i", "create", "vcjob", "-n", "dev").stdout.strip() == "yes"
        no = kubectl(dave, "auth", "can-i", "create", "vcjob", "-n", "ml")
        assert no.stdout.startswith("no")
        assert no.returncode == 1
        listed = kubectl(dave, "auth", "can-i", "--list", "-n", "dev")
        assert re.search(r"^jobs\.batch\.volcano\.sh\s.*\[create delete", listed.stdout, re.M), listed.stdout
        whoami = kubectl(dave, "auth", "whoami")
        assert re.search(r"^Username\s+dave$", whoami.stdout, re.M), whoami.stdout + whoami.stderr
        info = kubectl(dave, "cluster-info")
        assert f"Kubernetes control plane is running at https://127.0.0.1:{server.https_port}" in info.stdout
        assert kubectl(dave, "get", "--raw", "/livez").stdout == "ok"
        assert "readyz check passed" in kubectl(dave, "get", "--raw", "/readyz?verbose").stdout

        # Two users' kubeconfigs merge: two contexts, one cluster.
        carol_config = server.kubeconfig(carol, "carol")
        merged = kubectl(dave, "config", "get-contexts", "-o", "name")
        env_config = Path(f"{dave}:{carol_config}")
        both = kubectl(env_config, "config", "get-contexts", "-o", "name")
        assert merged.returncode == 0
        assert set(both.stdout.split()) == {
            f"dave@127.0.0.1:{server.https_port}",
            f"carol@127.0.0.1:{server.https_port}",
        }, both.stdout + both.stderr
