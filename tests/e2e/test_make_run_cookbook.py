"""The embedded default end to end: the real ``make run`` process (SQLite, in-memory channel layer, the
scheduling, controller and cron loops in-process, the simulated cluster) driven only over HTTP.

One ``make run`` serves the whole test. The demo users get API tokens through the API; the cookbook
files are applied verbatim over ``/api/v1/apply`` (the demo's seeded copies of 01 and 08 are deleted
first, so the files themselves run again); a diamond JobFlow of four JobTemplates is applied as
manifests. Everything is observed through the API (and, for the CronJob's upcoming run, its page).
"""

from __future__ import annotations

import copy
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.procs import free_port, running, wait_http
from tests.e2e.test_cookbook_stack import timestamp, wait_for
from tests.e2e.test_make_run import EMBEDDED_ONLY, _login

pytestmark = pytest.mark.e2e

COOKBOOK = Path(__file__).resolve().parents[2] / "volcanoweb" / "demo" / "cookbook"
PASSWORD = "volcano-demo"
FLOW_LABEL = "volcano.sh/createdByJobFlow"


class Api:
    """A demo user's Bearer-token client, the token created through the API after a session login."""

    def __init__(self, base: str, username: str) -> None:
        with httpx.Client(follow_redirects=True, timeout=30) as session:
            _login(session, base, username, PASSWORD)
            created = session.post(
                f"{base}/api/v1/tokens",
                json={"name": "e2e"},
                headers={"X-CSRFToken": session.cookies["csrftoken"], "Referer": f"{base}/"},
            )
            assert created.status_code == 201, created.text
            self.session_cookies = dict(session.cookies)
        self.http = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {created.json()['token']}"}, timeout=30
        )

    def apply(self, body: str, namespace: str) -> list[dict[str, Any]]:
        response = self.http.post(
            "/api/v1/apply",
            params={"namespace": namespace},
            content=body.encode(),
            headers={"Content-Type": "application/yaml"},
        )
        assert response.status_code == 200, response.text
        return list(response.json()["items"])

    def get(self, path: str, **params: Any) -> Any:
        response = self.http.get(path, params=params)
        assert response.status_code == 200, (path, params, response.status_code, response.text)
        return response.json()

    def names(self, path: str, **params: Any) -> list[str]:
        return sorted(item["metadata"]["name"] for item in self.get(path, limit=500, **params)["items"])

    def phase(self, namespace: str, job: str) -> str | None:
        response = self.http.get(f"/api/v1/namespaces/{namespace}/jobs/{job}")
        return str(response.json()["status"]["state"]["phase"]) if response.status_code == 200 else None

    def delete_and_wait(self, namespace: str, job: str) -> None:
        assert self.http.delete(f"/api/v1/namespaces/{namespace}/jobs/{job}").status_code in (200, 202)
        wait_for(
            f"{namespace}/{job} deleted",
            lambda: self.http.get(f"/api/v1/namespaces/{namespace}/jobs/{job}").status_code == 404,
            timeout=60,
        )
        wait_for(f"{job}'s pods gone", lambda: not self.get(f"/api/v1/namespaces/{namespace}/pods", job=job)["items"])


def diamond(namespace: str) -> str:
    """Four JobTemplates (fa, fb, fc, fd) and a JobFlow: fb and fc after fa, fd after both."""
    docs: list[dict[str, Any]] = []
    for name in ("fa", "fb", "fc", "fd"):
        docs.append(
            {
                "apiVersion": "flow.volcano.sh/v1alpha1",
                "kind": "JobTemplate",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "schedulerName": "volcano",
                    "queue": "data-processing",
                    "minAvailable": 1,
                    "tasks": [
                        {
                            "name": "step",
                            "replicas": 1,
                            "template": {
                                "metadata": {"annotations": {"sim.volcanoweb.io/duration": "30s"}},
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "step",
                                            "image": "busybox",
                                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                                        }
                                    ],
                                    "restartPolicy": "Never",
                                },
                            },
                        }
                    ],
                },
            }
        )
    flows = [
        {"name": "fa"},
        {"name": "fb", "dependsOn": {"targets": ["fa"]}},
        {"name": "fc", "dependsOn": {"targets": ["fa"]}},
        {"name": "fd", "dependsOn": {"targets": ["fb", "fc"]}},
    ]
    docs.append(
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "metadata": {"name": "diamond", "namespace": namespace},
            "spec": {"jobRetainPolicy": "retain", "flows": flows},
        }
    )
    return yaml.safe_dump_all(docs, sort_keys=False)


def test_the_cookbook_runs_on_make_run(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in EMBEDDED_ONLY}
    env.update(
        {
            "PORT": str(port),
            "HTTPS_PORT": str(free_port()),  # not PORT + 443, which another process may hold
            "VAR_DIR": str(tmp_path),
            "SIM_CLOCK_SPEED": "600",  # the default 60 s (simulated) pod runs 0.1 s
            "SCHEDULE_PERIOD": "0.5",
            "CONTROLLER_RESYNC_PERIOD": "1",
            "CRONJOB_TICK_PERIOD": "1",
            "LOG_LEVEL": "WARNING",
        }
    )
    base = f"http://127.0.0.1:{port}"
    with running(["make", "--no-print-directory", "run"], env, tmp_path / "run.log") as proc:
        try:
            wait_http(f"{base}/healthz", timeout=180, proc=proc)
            ready = httpx.get(f"{base}/readyz", timeout=10).json()
            assert (ready["checks"]["database"]["vendor"], ready["checks"]["redis"]["mode"]) == ("sqlite", "embedded")
            run_cookbook(base)
        except BaseException:
            print((tmp_path / "run.log").read_text()[-20000:])
            raise


def run_cookbook(base: str) -> None:
    ml, data, dev = Api(base, "alice"), Api(base, "carol"), Api(base, "dave")

    # --- The cookbook files themselves, over HTTP (the demo seeded 01 and 08: delete them first).
    ml.delete_and_wait("ml", "pytorch-distributed")
    dev.delete_and_wait("dev", "ci-pipeline")
    assert [i["action"] for i in ml.apply((COOKBOOK / "01-pytorch-distributed.yaml").read_text(), "ml")] == ["created"]
    assert [i["action"] for i in dev.apply((COOKBOOK / "08-ci-pipeline.yaml").read_text(), "dev")] == ["created"]
    data.apply(diamond("data"), "data")
    data.apply((COOKBOOK / "14-cronjob-daily-report.yaml").read_text(), "data")
    every = yaml.safe_load((COOKBOOK / "14-cronjob-daily-report.yaml").read_text())
    every = copy.deepcopy(every)
    every["metadata"]["name"] = "report-every-2s"
    every["spec"]["schedule"] = "@every 2s"
    applied_at = datetime.now(UTC)
    data.apply(yaml.safe_dump(every), "data")

    # --- PyTorch: the gang of 4 workers bound by one scheduling cycle, then Completed.
    wait_for("pytorch-distributed Completed", lambda: ml.phase("ml", "pytorch-distributed") == "Completed")
    pods = ml.get("/api/v1/namespaces/ml/pods", job="pytorch-distributed")["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == [f"pytorch-distributed-worker-{i}" for i in range(4)]
    cycles = {p["metadata"].get("annotations", {}).get("scheduling.volcanoweb.io/run") for p in pods}
    assert len(cycles) == 1, cycles
    assert None not in cycles, cycles
    assert {p["status"]["phase"] for p in pods} == {"Succeeded"}

    # --- CI pipeline: lint, then the 3 unit tests, then build-image (task dependsOn).
    wait_for("ci-pipeline Completed", lambda: dev.phase("dev", "ci-pipeline") == "Completed")
    pods = {p["metadata"]["name"]: p for p in dev.get("/api/v1/namespaces/dev/pods", job="ci-pipeline")["items"]}
    lint, build = "ci-pipeline-lint-0", "ci-pipeline-build-image-0"
    units = [f"ci-pipeline-unit-test-{i}" for i in range(3)]
    assert set(pods) == {lint, build, *units}
    started = {name: timestamp(p["status"]["startTime"]) for name, p in pods.items()}
    created = {name: timestamp(p["metadata"]["creationTimestamp"]) for name, p in pods.items()}
    for unit in units:
        assert started[lint] <= created[unit] <= started[unit] <= created[build] <= started[build]

    # --- The diamond JobFlow: Succeed, its jobs created in dependency order (fd after fb and fc).
    flow = wait_for(
        "JobFlow diamond Succeed",
        lambda: (
            (f := data.get("/api/v1/namespaces/data/jobflows/diamond"))["status"].get("state", {}).get("phase")
            == "Succeed"
            and f
        ),
        timeout=90,
        on_timeout=lambda: data.get("/api/v1/namespaces/data/jobflows/diamond")["status"],
    )
    jobs = {j["metadata"]["name"]: j for j in data.get("/api/v1/namespaces/data/jobs", limit=500)["items"]}
    flow_jobs = ["diamond-fa", "diamond-fb", "diamond-fc", "diamond-fd"]
    assert set(flow_jobs) <= set(jobs)
    assert sorted(flow["status"]["completedJobs"]) == flow_jobs
    made = {name: timestamp(jobs[name]["metadata"]["creationTimestamp"]) for name in flow_jobs}
    finished = {name: timestamp(jobs[name]["status"]["state"]["lastTransitionTime"]) for name in flow_jobs}
    assert made["diamond-fa"] < made["diamond-fb"]
    assert made["diamond-fa"] < made["diamond-fc"]
    assert max(made["diamond-fb"], made["diamond-fc"]) < made["diamond-fd"]
    assert finished["diamond-fa"] <= min(made["diamond-fb"], made["diamond-fc"])
    assert max(finished["diamond-fb"], finished["diamond-fc"]) <= made["diamond-fd"]
    for name in ("fa", "fb", "fc", "fd"):  # each JobTemplate lists the job made from it
        template = data.get(f"/api/v1/namespaces/data/jobtemplates/{name}")
        assert template["status"].get("jobDependsOnList") == [f"diamond-{name}"], template["status"]

    # --- labelSelector (=, !=, in, notin, exists) on jobs and pods.
    jobs_path = "/api/v1/namespaces/data/jobs"
    assert data.names(jobs_path, labelSelector=f"{FLOW_LABEL}=data.diamond") == flow_jobs
    assert not set(flow_jobs) & set(data.names(jobs_path, labelSelector=f"{FLOW_LABEL}!=data.diamond"))
    assert data.names(jobs_path, labelSelector=f"{FLOW_LABEL} in (data.diamond,other)") == flow_jobs
    assert data.names(jobs_path, labelSelector=f"{FLOW_LABEL} notin (data.diamond)") == data.names(
        jobs_path, labelSelector=f"!{FLOW_LABEL}"
    )
    pods_path = "/api/v1/namespaces/dev/pods"
    assert dev.names(pods_path, labelSelector="volcano.sh/task-spec=unit-test") == units
    assert dev.names(pods_path, labelSelector="volcano.sh/job-name=ci-pipeline,volcano.sh/task-spec!=unit-test") == [
        build,
        lint,
    ]
    assert dev.names(pods_path, labelSelector="volcano.sh/task-spec in (lint,build-image)") == [build, lint]
    assert ml.names("/api/v1/jobs", labelSelector="volcano.sh/nothing=x") == []
    bad = ml.http.get("/api/v1/namespaces/ml/jobs", params={"labelSelector": "a b c"})
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "labelSelector"

    # --- The CronJob: cookbook 14 shows its next run (02:00 UTC); an @every 2s copy runs on its schedule.
    now = datetime.now(UTC)
    upcoming = now.replace(hour=2, minute=0, second=0, microsecond=0)
    if upcoming <= now:
        upcoming += timedelta(days=1)
    with httpx.Client(base_url=base, cookies=data.session_cookies, timeout=30) as page:
        html = page.get("/cronjobs/data/daily-report/").text
    shown = re.search(r'Next runs</dt><dd><time datetime="([^"]+)"', html)
    assert shown, html[:3000]
    assert datetime.fromisoformat(shown.group(1)) == upcoming
    cron = data.get("/api/v1/namespaces/data/cronjobs/daily-report")
    assert cron["spec"]["schedule"] == "0 2 * * *"
    runs = wait_for(
        "report-every-2s ran",
        lambda: (
            (c := data.get("/api/v1/namespaces/data/cronjobs/report-every-2s"))["status"].get("lastScheduleTime") and c
        ),
        timeout=30,
    )
    assert timestamp(runs["status"]["lastScheduleTime"]) >= applied_at.replace(microsecond=0)
    owned = [
        j
        for j in data.get("/api/v1/namespaces/data/jobs", limit=500)["items"]
        if j["metadata"]["name"].startswith("report-every-2s-")
    ]
    assert owned, "the CronJob's run created no job"
    assert all(o["metadata"]["ownerReferences"][0]["kind"] == "CronJob" for o in owned)
