"""The official Kubernetes Python client against a real server: CustomObjectsApi create/get/list/patch/replace/
delete of Volcano Jobs and Queues, watch.Watch seeing a job's phases, 409 on a stale replace, 403 elsewhere."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.e2e.kubeserver import kube_server
from volcanoweb.demo.services import COOKBOOK_DIR, seed_demo
from volcanoweb.jobs.models import Job
from volcanoweb.tenancy.services import create_token

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

GROUP, VERSION = "batch.volcano.sh", "v1alpha1"


def _tokens() -> dict[str, str]:
    from django.contrib.auth import get_user_model

    seed_demo()
    Job.objects.all().delete()
    users = get_user_model().objects
    return {name: create_token(users.get(username=name), "e2e")[1] for name in ("alice", "carol")}


def _api(path: Path) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(config.new_client_from_config(config_file=str(path)))


def test_the_official_python_client(tmp_path: Path) -> None:
    tokens = _tokens()
    with kube_server(tmp_path) as server:
        alice = _api(server.kubeconfig(tokens["alice"], "alice"))
        carol = _api(server.kubeconfig(tokens["carol"], "carol"))
        job = yaml.safe_load((COOKBOOK_DIR / "02-tensorflow-ps.yaml").read_text())
        job["metadata"]["name"] = "py-tf"

        # watch.Watch from the list's resourceVersion sees the job added and moving through its phases.
        start = alice.list_namespaced_custom_object(GROUP, VERSION, "ml", "jobs")
        assert start["items"] == []
        events: list[tuple[str, str, str]] = []
        stream = watch.Watch()

        def follow() -> None:
            for event in stream.stream(
                alice.list_namespaced_custom_object,
                GROUP,
                VERSION,
                "ml",
                "jobs",
                resource_version=start["metadata"]["resourceVersion"],
                timeout_seconds=90,
            ):
                obj: dict[str, Any] = event["object"]
                phase = (obj.get("status") or {}).get("state", {}).get("phase", "")
                events.append((event["type"], obj["metadata"]["name"], phase))
                if phase == "Running":
                    stream.stop()

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()

        created = alice.create_namespaced_custom_object(GROUP, VERSION, "ml", "jobs", job)
        assert created["metadata"]["namespace"] == "ml"
        assert created["spec"]["queue"] == "ml-training"
        follower.join(95)
        assert events[0] == ("ADDED", "py-tf", "Pending"), events
        assert ("MODIFIED", "py-tf", "Running") in events

        # get, list with a label selector, merge patch of the labels.
        got = alice.get_namespaced_custom_object(GROUP, VERSION, "ml", "jobs", "py-tf")
        assert got["metadata"]["uid"] == created["metadata"]["uid"]
        patched = alice.patch_namespaced_custom_object(
            GROUP, VERSION, "ml", "jobs", "py-tf", {"metadata": {"labels": {"team": "vision"}}}
        )
        assert patched["metadata"]["labels"] == {"team": "vision"}
        selected = alice.list_namespaced_custom_object(GROUP, VERSION, "ml", "jobs", label_selector="team=vision")
        assert [i["metadata"]["name"] for i in selected["items"]] == ["py-tf"]
        assert (
            alice.list_namespaced_custom_object(GROUP, VERSION, "ml", "jobs", label_selector="team=nlp")["items"] == []
        )

        # replace with a stale resourceVersion: 409 Conflict.
        stale = dict(got)
        stale["metadata"] = {**got["metadata"], "resourceVersion": "1"}
        with pytest.raises(ApiException) as conflict:
            alice.replace_namespaced_custom_object(GROUP, VERSION, "ml", "jobs", "py-tf", stale)
        assert conflict.value.status == 409
        assert yaml.safe_load(conflict.value.body)["reason"] == "Conflict"

        # Another tenant's namespace: 403 with Kubernetes' RBAC wording.
        with pytest.raises(ApiException) as refused:
            carol.get_namespaced_custom_object(GROUP, VERSION, "ml", "jobs", "py-tf")
        assert refused.value.status == 403
        assert 'User "carol" cannot get resource "jobs"' in yaml.safe_load(refused.value.body)["message"]
        everything = carol.list_cluster_custom_object(GROUP, VERSION, "jobs")
        assert "py-tf" not in [i["metadata"]["name"] for i in everything["items"]]

        # Cluster-scoped Queues through the same API; delete with a propagation policy.
        queues = alice.list_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues")
        assert "ml-training" in [q["metadata"]["name"] for q in queues["items"]]
        deleted = alice.delete_namespaced_custom_object(
            GROUP, VERSION, "ml", "jobs", "py-tf", propagation_policy="Background"
        )
        assert deleted["status"] == "Success"
        with pytest.raises(ApiException) as missing:
            alice.get_namespaced_custom_object(GROUP, VERSION, "ml", "jobs", "py-tf")
        assert missing.value.status == 404
