"""The official Python client's ``watch.Watch`` and Debian's ``kubectl get -w`` against a real server see the
same sequence of changes of one object: every patch one MODIFIED event, in revision order, then DELETED."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch

from tests.e2e.kubeserver import kube_server, kubectl_popen
from volcanoweb.demo.services import seed_demo
from volcanoweb.tenancy.services import create_token

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

GROUP, VERSION, PLURAL = "flow.volcano.sh", "v1alpha1", "jobtemplates"
TEMPLATE = {
    "apiVersion": f"{GROUP}/{VERSION}",
    "kind": "JobTemplate",
    "metadata": {"name": "seq", "namespace": "ml"},
    "spec": {
        "minAvailable": 1,
        "queue": "ml-training",
        "tasks": [
            {
                "name": "main",
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}},
            }
        ],
    },
}
PATCHES = 5


def _events_of_kubectl(text: str) -> list[dict[str, Any]]:
    decoder, out, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return out
        event, at = decoder.raw_decode(text, at)
        out.append(event)


def _sequence(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, str]]:
    return [
        (kind, obj["metadata"]["resourceVersion"], (obj["metadata"].get("labels") or {}).get("step", ""))
        for kind, obj in events
    ]


def test_watch_watch_and_kubectl_get_w_see_the_same_sequence(tmp_path: Path) -> None:
    from django.contrib.auth import get_user_model

    seed_demo()
    token = create_token(get_user_model().objects.get(username="alice"), "e2e")[1]
    with kube_server(tmp_path) as server:
        kubeconfig = server.kubeconfig(token, "alice")
        api = client.CustomObjectsApi(config.new_client_from_config(config_file=str(kubeconfig)))
        api.create_namespaced_custom_object(GROUP, VERSION, "ml", PLURAL, TEMPLATE)

        python: list[tuple[str, dict[str, Any]]] = []
        stream = watch.Watch()

        def follow() -> None:
            for event in stream.stream(
                api.list_namespaced_custom_object, GROUP, VERSION, "ml", PLURAL, timeout_seconds=60
            ):
                python.append((event["type"], event["object"]))
                if event["type"] == "DELETED":
                    stream.stop()

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        watcher = kubectl_popen(
            kubeconfig, "get", f"{PLURAL}.{GROUP}", "-n", "ml", "-w", "--output-watch-events", "-o", "json"
        )
        try:
            deadline = time.monotonic() + 30
            while not python and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(2.0)  # kubectl has listed and started its watch
            written = []
            for step in range(PATCHES):
                written.append(
                    api.patch_namespaced_custom_object(
                        GROUP, VERSION, "ml", PLURAL, "seq", {"metadata": {"labels": {"step": str(step)}}}
                    )["metadata"]["resourceVersion"]
                )
            api.delete_namespaced_custom_object(GROUP, VERSION, "ml", PLURAL, "seq")
            follower.join(30)
            time.sleep(2.0)
        finally:
            os.killpg(watcher.pid, signal.SIGTERM)
            out, err = watcher.communicate(timeout=10)
        kubectl = [(e["type"], e["object"]) for e in _events_of_kubectl(out)]
        assert kubectl, err
        assert [kind for kind, _ in python] == ["ADDED"] + ["MODIFIED"] * PATCHES + ["DELETED"], _sequence(python)
        assert _sequence(kubectl) == _sequence(python), err
        assert [rv for kind, rv, _ in _sequence(python) if kind == "MODIFIED"] == written
        assert [step for kind, _, step in _sequence(python) if kind == "MODIFIED"] == [str(s) for s in range(PATCHES)]
