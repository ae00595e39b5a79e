"""Debian's kubectl against a real server: the cookbook with ``kubectl apply -f`` (unchanged files), get,
``get -w`` seeing live phase changes, describe, delete, ``--dry-run=server``, 409 on a stale update, and
another tenant's namespace refused. The kubeconfigs come from ``vcctl kubeconfig``."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.kubeserver import kube_server, kubectl, kubectl_popen
from volcanoweb.demo.services import COOKBOOK_DIR, seed_demo
from volcanoweb.jobs.models import Job
from volcanoweb.tenancy.services import create_token
from volcanoweb.workflows.models import CronJob

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

#: Where each cookbook file goes (its queues are open to that namespace's tenant); None = cluster-scoped.
NAMESPACES = {
    "01-pytorch-distributed.yaml": "ml",
    "02-tensorflow-ps.yaml": "ml",
    "03-horovod-mpi.yaml": "ml",
    "04-spark-podgroup.yaml": "data",
    "06-flink-job.yaml": "data",
    "07-ci-build-batch.yaml": "dev",
    "08-ci-pipeline.yaml": "dev",
    "09-genome-analysis.yaml": "dev",
    "10-weather-simulation-mpi.yaml": "dev",
    "11-team-queues.yaml": None,
    "13-hierarchical-queues.yaml": None,
    "14-cronjob-daily-report.yaml": "data",
}
#: 05 is a fragment of a pod template (no name, no containers); 12 is a scheduler configuration, not a
#: Kubernetes object (no apiVersion/kind: kubectl itself refuses it before sending anything).
NOT_OBJECTS = {"05-spark-driver-pod-template.yaml", "12-scheduler-conf.yaml"}


def _prepare() -> dict[str, str]:
    from django.contrib.auth import get_user_model

    seed_demo()
    Job.objects.all().delete()  # the test applies the cookbook itself
    CronJob.objects.all().delete()
    users = get_user_model().objects
    return {name: create_token(users.get(username=name), "e2e")[1] for name in ("admin", "alice")}


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_cookbook_list_covers_every_file() -> None:
    files = {p.name for p in COOKBOOK_DIR.glob("*.yaml")}
    assert files == set(NAMESPACES) | NOT_OBJECTS


def test_kubectl_drives_volcano_kinds(tmp_path: Path) -> None:
    tokens = _prepare()
    with kube_server(tmp_path) as server:
        admin = server.kubeconfig(tokens["admin"], "admin")
        alice = server.kubeconfig(tokens["alice"], "alice")
        config = yaml.safe_load(admin.read_text())
        assert config["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{server.https_port}"
        assert "certificate-authority-data" in config["clusters"][0]["cluster"]

        version = kubectl(admin, "version")
        assert version.returncode == 0, version.stderr
        assert "Server Version: v1.32" in version.stdout
        resources = kubectl(admin, "api-resources")
        assert re.search(r"^jobs\s+vcjob,vj\s+batch\.volcano\.sh/v1alpha1\s+true\s+Job$", resources.stdout, re.M)
        assert re.search(r"^podgroups\s+pg,podgroup-v1beta1\s+", resources.stdout, re.M)
        assert re.search(
            r"^queues\s+q,queue-v1beta1\s+scheduling\.volcano\.sh/v1beta1\s+false\s+Queue$", resources.stdout, re.M
        )

        # Every cookbook manifest, unchanged, with kubectl apply -f (and again: unchanged).
        for filename, namespace in NAMESPACES.items():
            where = ["-n", namespace] if namespace else []
            path = str(COOKBOOK_DIR / filename)
            first = kubectl(admin, "apply", "-f", path, *where)
            assert first.returncode == 0, f"{filename}: {first.stderr}"
            lines = first.stdout.strip().splitlines()
            assert lines, first.stdout
            assert all(re.search(r" (created|configured|unchanged)$", line) for line in lines), first.stdout
            if filename.startswith("0"):
                assert lines[0].endswith(" created"), first.stdout
            versions = kubectl(admin, "get", "-f", path, *where, "-o", "jsonpath={..metadata.generation}")
            again = kubectl(admin, "apply", "-f", path, *where)
            assert again.returncode == 0, again.stderr
            # kubectl sends a merge patch of the lists the server defaulted (as with Volcano's webhook), so it may
            # print "configured"; the server sees no change: no generation moves.
            after = kubectl(admin, "get", "-f", path, *where, "-o", "jsonpath={..metadata.generation}")
            assert versions.returncode == 0, versions.stderr
            assert versions.stdout == after.stdout
        fragment = kubectl(admin, "apply", "-f", str(COOKBOOK_DIR / "05-spark-driver-pod-template.yaml"))
        assert fragment.returncode != 0
        assert "name may not be empty" in fragment.stderr

        # get prints Volcano's columns.
        listing = kubectl(admin, "get", "vcjob", "-n", "dev")
        assert listing.stdout.split("\n")[0].split() == ["NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE"]
        assert "ci-pipeline" in listing.stdout
        assert "weather-simulation" in listing.stdout
        wide = kubectl(admin, "get", "vj", "-A", "-o", "wide")
        assert "QUEUE" in wide.stdout.split("\n")[0]
        assert "ml-training" in wide.stdout

        # get -w shows the live phase changes of a job that runs.
        watcher = kubectl_popen(admin, "get", "vcjob", "-A", "-w")
        try:
            time.sleep(2)
            kubectl(admin, "delete", "vcjob", "-n", "ml", "tensorflow-ps", "--wait=true")
            renamed = (
                (COOKBOOK_DIR / "02-tensorflow-ps.yaml").read_text().replace("name: tensorflow-ps", "name: tf-live")
            )
            (tmp_path / "tf-live.yaml").write_text(renamed)
            assert kubectl(admin, "apply", "-n", "ml", "-f", str(tmp_path / "tf-live.yaml")).returncode == 0
            seen: list[str] = []

            def collect() -> None:
                assert watcher.stdout is not None
                for line in watcher.stdout:
                    parts = line.split()
                    if len(parts) >= 3 and parts[1] == "tf-live":
                        seen.append(parts[2])

            threading.Thread(target=collect, daemon=True).start()

            def read() -> bool:
                return "Running" in seen

            _wait_for(read, 120, "tf-live Running in kubectl get -w")
        finally:
            os.killpg(watcher.pid, signal.SIGTERM)
            watcher.wait(10)
        assert seen[0] == "Pending", seen
        assert "Running" in seen

        # describe: the object and its events.
        described = kubectl(admin, "describe", "vcjob", "-n", "ml", "tf-live")
        assert described.returncode == 0, described.stderr
        assert "Name:         tf-live" in described.stdout
        assert "Events:" in described.stdout

        # --dry-run=server validates and reports without writing.
        deleted = kubectl(admin, "delete", "-n", "dev", "-f", str(COOKBOOK_DIR / "07-ci-build-batch.yaml"))
        assert deleted.returncode == 0
        assert 'job.batch.volcano.sh "ci-build-batch" deleted' in deleted.stdout
        dry = kubectl(
            admin, "apply", "-n", "dev", "--dry-run=server", "-f", str(COOKBOOK_DIR / "07-ci-build-batch.yaml")
        )
        assert dry.returncode == 0, dry.stderr
        assert "created (server dry run)" in dry.stdout
        gone = kubectl(admin, "get", "vcjob", "-n", "dev", "ci-build-batch")
        assert gone.returncode == 1
        assert "NotFound" in gone.stderr

        # A stale update is a 409 Conflict.
        current = yaml.safe_load(kubectl(admin, "get", "vcjob", "-n", "dev", "ci-pipeline", "-o", "yaml").stdout)
        stale = dict(current)
        stale["metadata"] = {
            **current["metadata"],
            "resourceVersion": str(int(current["metadata"]["resourceVersion"]) - 1),
        }
        stale["spec"] = {**current["spec"], "maxRetry": 7}
        (tmp_path / "stale.yaml").write_text(yaml.safe_dump(stale))
        conflict = kubectl(admin, "replace", "-f", str(tmp_path / "stale.yaml"))
        assert conflict.returncode == 1
        assert "Conflict" in conflict.stderr
        assert "has been modified" in conflict.stderr

        # Another tenant's namespace is refused; the own one works.
        refused = kubectl(alice, "get", "vcjob", "-n", "data")
        assert refused.returncode == 1
        assert "Forbidden" in refused.stderr
        assert 'User "alice"' in refused.stderr
        assert kubectl(alice, "delete", "vcjob", "-n", "data", "flink-job").returncode == 1
        own = kubectl(alice, "get", "vcjob")
        assert own.returncode == 0
        assert "tf-live" in own.stdout
        assert "flink-job" not in own.stdout
        everywhere = kubectl(alice, "get", "vcjob", "-A")
        assert "flink-job" not in everywhere.stdout
        assert "ci-pipeline" not in everywhere.stdout


def test_kubectl_apply_field_validation(tmp_path: Path) -> None:
    """kubectl sends fieldValidation=Strict (its default ``--validate=true``): an unknown field fails with the
    API server's strict decoding error; ``--validate=warn`` applies the object and prints the server's warning."""
    tokens = _prepare()
    with kube_server(tmp_path) as server:
        admin = server.kubeconfig(tokens["admin"], "admin")
        manifest = yaml.safe_load((COOKBOOK_DIR / "07-ci-build-batch.yaml").read_text())
        manifest["spec"]["bogusField"] = 3
        path = tmp_path / "bogus.yaml"
        path.write_text(yaml.safe_dump(manifest))
        name = manifest["metadata"]["name"]

        refused = kubectl(admin, "apply", "-n", "dev", "-f", str(path))
        assert refused.returncode == 1, refused.stdout
        assert "Error from server (BadRequest)" in refused.stderr, refused.stderr
        assert "strict decoding error" in refused.stderr
        assert 'unknown field "spec.bogusField"' in refused.stderr
        assert not Job.objects.filter(namespace="dev", name=name).exists()

        warned = kubectl(admin, "apply", "-n", "dev", "--validate=warn", "-f", str(path))
        assert warned.returncode == 0, warned.stderr
        assert f"job.batch.volcano.sh/{name} created" in warned.stdout
        assert 'Warning: unknown field "spec.bogusField"' in warned.stderr, warned.stderr
        assert "bogusField" not in str(Job.objects.get(namespace="dev", name=name).spec)

        # On the existing object kubectl sends a patch: the same refusal, nothing stored.
        manifest["spec"]["anotherBogus"] = {"a": 1}
        path.write_text(yaml.safe_dump(manifest))
        patched = kubectl(admin, "apply", "-n", "dev", "-f", str(path))
        assert patched.returncode == 1, patched.stdout
        assert 'unknown field "spec.anotherBogus"' in patched.stderr, patched.stderr
        assert "anotherBogus" not in str(Job.objects.get(namespace="dev", name=name).spec)
