"""The cookbook on the real stack: daphne, a Celery worker and beat on PostgreSQL and Redis, sim backend.

One test function starts ONE stack (starting it costs seconds on a loaded machine) and runs the
cookbook scenarios against it, most of them at the same time, observing them through the REST API
(Bearer tokens) and a WebSocket client (session cookie). Each scenario is a clearly named block;
the manifests are the cookbook files themselves, with only a namespace and simulated durations
(``sim.volcanoweb.io/duration``) added to copies; the reclaim scenario at the end runs two plain
jobs (a hog and a claim) in two leaf queues under the cookbook team queues and scheduler configuration.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import websocket
import yaml
from django.conf import settings
from django.test import Client

from tests.e2e.procs import database_url, free_port, manage, running, wait_http
from tests.volcanoweb import builders
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.scheduling.models import SchedulingRun
from volcanoweb.tenancy import services as tenancy_services
from volcanoweb.tenancy.models import Role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
logging.getLogger("httpx").setLevel(logging.WARNING)

NS = "team-a"
DURATION = "sim.volcanoweb.io/duration"
#: Simulated seconds per wall second: the cookbook's 1-hour TTL lasts 6 s, a 60 s pod 0.1 s.
SPEED = 600
LEAF_QUEUES = {"ml-training": "ml-team", "data-processing": "data-team", "ci-cd": "dev-team", "hpc": "dev-team"}


# --------------------------------------------------------------------------- helpers


class Api:
    """A Bearer-token client of the stack's REST API."""

    def __init__(self, base: str, token: str) -> None:
        self.http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30)

    def apply(self, docs: list[dict[str, Any]] | str) -> list[dict[str, Any]]:
        body = docs if isinstance(docs, str) else yaml.safe_dump_all(docs, sort_keys=False)
        response = self.http.post("/api/v1/apply", content=body.encode(), headers={"Content-Type": "application/yaml"})
        assert response.status_code == 200, response.text
        return list(response.json()["items"])

    def get(self, path: str, **params: Any) -> Any:
        response = self.http.get(path, params=params)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    def status(self, path: str) -> int:
        return self.http.get(path).status_code

    def post(self, path: str, body: dict[str, Any]) -> Any:
        response = self.http.post(path, json=body)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    def delete(self, path: str) -> int:
        return self.http.delete(path).status_code

    def job(self, name: str) -> dict[str, Any]:
        return dict(self.get(f"/api/v1/namespaces/{NS}/jobs/{name}"))

    def pods(self, **params: Any) -> list[dict[str, Any]]:
        return list(self.get(f"/api/v1/namespaces/{NS}/pods", limit=500, **params)["items"])


class LiveClient:
    """A WebSocket client of /ws/live/ that records every message in a background thread."""

    def __init__(self, url: str, cookie: str, origin: str) -> None:
        self.ws = websocket.create_connection(url, header=[f"Cookie: {cookie}"], origin=origin, timeout=5)
        self.messages: list[dict[str, Any]] = []
        self.stopped = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stopped:
            try:
                text = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                continue
            except Exception:  # closed
                return
            if text:
                message = json.loads(text)
                self.messages.extend(message["items"] if message.get("kind") == "changes" else [message])

    def seen(self, kind: str, key: str, *, within: float = 5.0, **fields: Any) -> bool:
        """Whether such a message arrived, waiting up to ``within`` seconds: it is sent after the commit that
        the API already shows, and the consumer holds it for its coalescing window."""
        deadline = time.monotonic() + within
        while True:
            if any(
                m.get("kind") == kind and m.get("id") == key and all(m.get(k) == v for k, v in fields.items())
                for m in list(self.messages)
            ):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)

    def close(self) -> None:
        self.stopped = True
        self.ws.close()


def wait_for(
    what: str,
    check: Callable[[], Any],
    timeout: float = 60.0,
    period: float = 0.3,
    on_timeout: Callable[[], Any] | None = None,
) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(period)
    detail = on_timeout() if on_timeout is not None else last
    raise AssertionError(f"timed out waiting for {what} (last: {detail!r})")


def cookbook(filename: str, *, durations: dict[str, str] | None = None, job_duration: str = "") -> list[dict]:
    """Copies of a cookbook file's documents in namespace team-a, with simulated durations added."""
    docs = copy.deepcopy(builders.cookbook_documents(filename))
    for doc in docs:
        if doc.get("kind") not in (None, "Queue") and "metadata" in doc:
            doc["metadata"]["namespace"] = NS
        if job_duration:
            doc["metadata"].setdefault("annotations", {})[DURATION] = job_duration
        for task in doc.get("spec", {}).get("tasks", []) if doc.get("kind") == "Job" else []:
            if durations and task["name"] in durations:
                meta = task["template"].setdefault("metadata", {})
                meta.setdefault("annotations", {})[DURATION] = durations[task["name"]]
    return docs


def explain(api: Api, name: str) -> dict[str, Any]:
    """The job's status, its pods' phases and times, and its podgroups' status: what a timeout prints."""
    return {
        "job": api.job(name)["status"],
        "pods": [
            (
                p["metadata"]["name"],
                p["status"].get("phase"),
                p["metadata"].get("creationTimestamp"),
                p["status"].get("startTime"),
                p["spec"].get("nodeName"),
            )
            for p in api.pods(job=name)
        ],
        "podgroups": [
            (g["metadata"]["name"], g["spec"], g["status"])
            for g in api.get(f"/api/v1/namespaces/{NS}/podgroups")["items"]
            if g["metadata"]["name"].startswith(name)
        ],
    }


def phase(api: Api, name: str) -> str:
    return str(api.job(name)["status"]["state"]["phase"])


def timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def leaf_queues() -> list[dict[str, Any]]:
    return [
        builders.queue_manifest(name, parent=parent, weight=1, allowed=(NS,)) for name, parent in LEAF_QUEUES.items()
    ]


# --------------------------------------------------------------------------- the test


def test_cookbook_runs_on_the_stack(tmp_path: Path) -> None:
    if settings.EMBEDDED:
        pytest.skip("needs REDIS_URL (scripts/with-services.sh provides it)")
    ensure_builtin_queues()  # a transactional test before this one flushed root and default
    team_a = builders.make_tenant(NS)
    root = builders.make_user("root", superuser=True)
    alice = builders.make_user("alice")
    builders.add_member(team_a, alice, Role.TENANT_ADMIN)
    _, root_token = tenancy_services.create_token(root, "e2e")
    _, alice_token = tenancy_services.create_token(alice, "e2e")
    session = Client()
    session.force_login(root)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "VAR_DIR": str(tmp_path),
        "DEBUG": "true",
        "SCHEDULE_PERIOD": "0.5",
        "SIM_CLOCK_SPEED": str(SPEED),
        "CONTROLLER_RESYNC_PERIOD": "1",
        "LOG_LEVEL": "WARNING",
    }
    with running(manage("runstack", "--port", str(port)), env, tmp_path / "stack.log") as proc:
        assert wait_http(f"{base}/readyz", proc=proc, timeout=90).status_code == 200
        admin, user = Api(base, root_token), Api(base, alice_token)
        live = LiveClient(f"ws://127.0.0.1:{port}/ws/live/", f"sessionid={session.cookies['sessionid'].value}", base)
        try:
            run_scenarios(admin, user, live)
        except BaseException:
            print((tmp_path / "stack.log").read_text()[-20000:])
            raise
        finally:
            live.close()


def run_scenarios(admin: Api, user: Api, live: LiveClient) -> None:
    # The cookbook team queues (11), the leaf queues the cookbook jobs use, the scheduler configuration (12).
    admin.apply((builders.COOKBOOK / "11-team-queues.yaml").read_text())
    admin.apply(leaf_queues())
    assert admin.apply((builders.COOKBOOK / "12-scheduler-conf.yaml").read_text())[0]["action"] == "created"
    assert "reclaim" in admin.get("/api/v1/scheduler-config")["yaml"]

    # Everything at once: the cluster (8 CPU nodes of 16 cores, 4 GPU nodes of 32 cores and 4 GPUs) holds it all.
    user.apply(cookbook("01-pytorch-distributed.yaml", job_duration="1200s"))
    user.apply(cookbook("02-tensorflow-ps.yaml", durations={"worker": "1200s", "ps": "36000s"}))
    user.apply(cookbook("03-horovod-mpi.yaml", durations={"mpimaster": "1200s", "mpiworker": "36000s"}))
    user.apply(cookbook("08-ci-pipeline.yaml", job_duration="600s"))
    user.apply(cookbook("09-genome-analysis.yaml", job_duration="6000s"))
    user.apply(cookbook("07-ci-build-batch.yaml", job_duration="600s"))
    user.apply(cookbook("04-spark-podgroup.yaml"))
    template = cookbook("05-spark-driver-pod-template.yaml")[0]
    spark_pods = []
    for name in ("spark-pi-driver", "spark-pi-exec-1", "spark-pi-exec-2"):
        pod = builders.with_changes(template, "metadata.name", name)
        pod["metadata"]["annotations"][DURATION] = "36000s"
        pod["spec"]["containers"] = [
            {"name": "spark", "image": "spark:3.5", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}
        ]
        spark_pods.append(pod)
    user.apply(spark_pods)

    # --- genome-analysis: exit code 137 injected into a running pod restarts the job (retryCount 1).
    wait_for(
        "genome-analysis Running",
        lambda: (
            phase(user, "genome-analysis") == "Running"
            and len([p for p in user.pods(job="genome-analysis") if p["status"]["phase"] == "Running"]) == 8
        ),
        timeout=60,
    )
    ended = user.post(f"/api/v1/namespaces/{NS}/pods/genome-analysis-compute-3/exit", {"exitCode": 137})
    assert ended["name"] == "genome-analysis-compute-3"  # its exitCode shows once a sync has mirrored it
    genome = wait_for(
        "genome-analysis restarted",
        lambda: (job := user.job("genome-analysis"))["status"].get("retryCount") == 1 and job,
        timeout=30,
        on_timeout=lambda: (
            user.job("genome-analysis"),
            [(p["metadata"]["name"], p["status"]) for p in user.pods(job="genome-analysis")],
        ),
    )
    wait_for("genome-analysis Running again", lambda: phase(user, "genome-analysis") == "Running", timeout=60)
    assert user.job("genome-analysis")["status"]["retryCount"] == 1
    del genome

    # --- PyTorch: the 4 workers bound in one scheduling cycle, then Completed.
    wait_for("pytorch-distributed Completed", lambda: phase(user, "pytorch-distributed") == "Completed", timeout=60)
    pytorch = user.pods(job="pytorch-distributed")
    assert len(pytorch) == 4
    runs = {p["metadata"].get("annotations", {}).get("scheduling.volcanoweb.io/run") for p in pytorch}
    assert len(runs) == 1, runs
    assert None not in runs, runs
    (run_id,) = runs
    binds = SchedulingRun.objects.get(pk=run_id).decisions["binds"]
    assert {k for k in binds if "pytorch-distributed" in k} == {
        f"{NS}/pytorch-distributed-worker-{i}" for i in range(4)
    }
    assert live.seen("job", f"{NS}/pytorch-distributed", phase="Completed")

    # --- TensorFlow PS: Completed when its workers complete (the PS is still running then).
    wait_for("tensorflow-ps Completed", lambda: phase(user, "tensorflow-ps") == "Completed", timeout=60)
    assert user.job("tensorflow-ps")["status"].get("succeeded") == 4
    assert live.seen("job", f"{NS}/tensorflow-ps", phase="Completed")

    # --- Horovod: the master's completion completes the job (the workers run sshd -D forever).
    wait_for("horovod-job Completed", lambda: phase(user, "horovod-job") == "Completed", timeout=60)
    master = [p for p in user.pods(job="horovod-job") if p["metadata"]["name"] == "horovod-job-mpimaster-0"]
    assert master
    assert master[0]["status"]["phase"] == "Succeeded"
    assert live.seen("job", f"{NS}/horovod-job", phase="Completed")

    # --- CI pipeline: lint, then unit-test, then build-image.
    wait_for(
        "ci-pipeline Completed",
        lambda: phase(user, "ci-pipeline") == "Completed",
        timeout=60,
        on_timeout=lambda: explain(user, "ci-pipeline"),
    )
    pods = {p["metadata"]["name"]: p for p in user.pods(job="ci-pipeline")}
    started = {name: timestamp(p["status"]["startTime"]) for name, p in pods.items()}
    created = {name: timestamp(p["metadata"]["creationTimestamp"]) for name, p in pods.items()}
    lint, build = "ci-pipeline-lint-0", "ci-pipeline-build-image-0"
    units = [f"ci-pipeline-unit-test-{i}" for i in range(3)]
    assert set(pods) == {lint, build, *units}
    for unit in units:
        assert started[lint] <= created[unit] <= started[unit] <= created[build] <= started[build]

    # --- ci-build-batch: Completed, then deleted when its one-hour (simulated, 6 s wall) TTL expires.
    # It finished long ago (10 s simulated pods): the WebSocket saw it Completed, then deleted.
    wait_for(
        "ci-build-batch deleted",
        lambda: user.status(f"/api/v1/namespaces/{NS}/jobs/ci-build-batch") == 404,
        timeout=60,
        on_timeout=lambda: explain(user, "ci-build-batch"),
    )
    key = f"{NS}/ci-build-batch"
    # The consumer merges messages about one object within 200 ms, so under load the Completed message
    # can be folded into the deletion; when it was delivered on its own it came first.
    done = next(
        (
            i
            for i, m in enumerate(live.messages)
            if m.get("kind") == "job" and m.get("id") == key and m.get("phase") == "Completed"
        ),
        None,
    )
    gone = next(
        (i for i, m in enumerate(live.messages) if m.get("kind") == "job" and m.get("id") == key and m.get("deleted")),
        None,
    )
    # The deletion itself is proven by the 404 above; the live messages, when both arrived separately, are ordered.
    assert done is None or gone is None or done < gone
    assert not user.pods(job="ci-build-batch")

    # --- Spark: the PodGroup and its three plain pods scheduled as one gang.
    group = wait_for(
        "spark-pi-group Running",
        lambda: (
            (g := user.get(f"/api/v1/namespaces/{NS}/podgroups/spark-pi-group"))["status"]["phase"] == "Running" and g
        ),
        timeout=30,
    )
    spark = user.pods(podgroup="spark-pi-group")
    assert {p["metadata"]["name"] for p in spark} == {"spark-pi-driver", "spark-pi-exec-1", "spark-pi-exec-2"}
    assert all(p["spec"].get("nodeName") for p in spark)
    assert len({p["metadata"].get("annotations", {}).get("scheduling.volcanoweb.io/run") for p in spark}) == 1
    assert group["status"]["phase"] == "Running"

    # --- genome-analysis has done its part: free its 64 CPUs.
    assert user.delete(f"/api/v1/namespaces/{NS}/jobs/genome-analysis") in (200, 202)

    # --- A job beyond its queue's capability stays Pending with the reason (dev-team: 100 CPUs; 16 x 16 = 256).
    user.apply(cookbook("10-weather-simulation-mpi.yaml", job_duration="600s"))
    reason = wait_for(
        "weather-simulation unschedulable",
        lambda: next(
            (
                c
                for g in user.get(f"/api/v1/namespaces/{NS}/podgroups")["items"]
                if g["metadata"]["name"].startswith("weather-simulation")
                for c in g["status"].get("conditions") or []
                if c["type"] == "Unschedulable"
            ),
            None,
        ),
        timeout=30,
    )
    assert reason["status"] == "True"
    assert reason["message"]
    time.sleep(2)
    assert phase(user, "weather-simulation") == "Pending"
    assert not [p for p in user.pods(job="weather-simulation") if p["spec"].get("nodeName")]
    events = user.get(f"/api/v1/namespaces/{NS}/events")["items"]
    assert any(e["reason"] == "Unschedulable" and e["involvedObject"]["name"] == "weather-simulation" for e in events)
    assert user.delete(f"/api/v1/namespaces/{NS}/jobs/weather-simulation") in (200, 202)

    # --- Reclaim (11 + 12): data-processing, under its deserved share, reclaims from ml-training, over it.
    for pod in spark_pods:
        assert user.delete(f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}") in (200, 202)
    wait_for(
        "an empty cluster",
        lambda: not [p for p in user.pods() if p["status"]["phase"] in ("Pending", "Running")],
        timeout=60,
        on_timeout=lambda: [(p["metadata"]["name"], p["status"]["phase"]) for p in user.pods()],
    )
    # 8-CPU pods: 32 fit the cluster's 256 CPUs. The hog takes 24 (192 CPUs: ml-training may not exceed
    # 256 - ml-team's 50 guaranteed + 0). The claim's gang of 12 (96 CPUs: overcommit admits up to
    # 1.2 x 256 - 192 = 115) makes the deserved shares 160 (hog) and 96 (claim): the claim gets the 8
    # free slots and 4 reclaimed from the hog.
    eight = {"cpu": "8", "memory": "16Gi"}
    hog = builders.job_manifest(
        "hog", namespace=NS, queue="ml-training", minAvailable=1, tasks=[builders.task("worker", 24, **eight)]
    )
    hog["metadata"]["annotations"] = {DURATION: "3600000s"}
    claim = builders.job_manifest(
        "claim", namespace=NS, queue="data-processing", minAvailable=12, tasks=[builders.task("worker", 12, **eight)]
    )
    claim["metadata"]["annotations"] = {DURATION: "3600000s"}
    user.apply([hog])
    wait_for(
        "hog holds the cluster",
        lambda: len([p for p in user.pods(job="hog") if p["status"]["phase"] == "Running"]) == 24,
        timeout=60,
        on_timeout=lambda: explain(user, "hog"),
    )
    before = SchedulingRun.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    user.apply([claim])
    wait_for(
        "claim Running",
        lambda: (
            phase(user, "claim") == "Running"
            and len([p for p in user.pods(job="claim") if p["status"]["phase"] == "Running"]) == 12
        ),
        timeout=60,
        on_timeout=lambda: (explain(user, "claim"), explain(user, "hog")),
    )
    evicted = [
        e
        for run in SchedulingRun.objects.filter(pk__gt=before, evictions__gt=0)
        for e in run.decisions["evictions"]
        if e["action"] == "reclaim"
    ]
    assert evicted
    assert all(e["task"].startswith(f"{NS}/hog-worker-") for e in evicted), evicted
    assert len(evicted) == len({e["task"] for e in evicted}) == 4  # the shortfall, evicted once
    assert live.seen("pod", evicted[0]["task"], evicted=True)
