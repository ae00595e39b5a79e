"""Every cookbook manifest applies through the API unchanged and round-trips (GET, re-apply: unchanged)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.volcanoweb import builders
from tests.volcanoweb.conftest import post_yaml
from volcanoweb.jobs.models import Job, Pod, PodGroup, Task
from volcanoweb.scheduling.models import SchedulerProfile

#: Cluster-scoped documents (queues, the scheduler config) are a platform admin's; the rest are alice's.
ADMIN_FILES = {"11-team-queues.yaml", "12-scheduler-conf.yaml", "13-hierarchical-queues.yaml"}
#: 05 is only a fragment of a pod template (no name, no containers); see test_it_refuses_the_pod_template_fragment.
FRAGMENTS = {"05-spark-driver-pod-template.yaml"}
APPLYABLE = [p.name for p in builders.cookbook_files() if p.name not in FRAGMENTS]


def object_url(obj: dict[str, Any]) -> str:
    kind, meta = obj["kind"], obj["metadata"]
    plural = {"Job": "jobs", "PodGroup": "podgroups", "CronJob": "cronjobs", "Pod": "pods"}
    if kind == "Queue":
        return f"/api/v1/queues/{meta['name']}"
    return f"/api/v1/namespaces/{meta['namespace']}/{plural[kind]}/{meta['name']}"


def test_the_cookbook_is_where_the_tests_expect_it() -> None:
    assert builders.COOKBOOK.is_dir(), builders.COOKBOOK
    assert len(APPLYABLE) >= 13


@pytest.mark.parametrize("filename", APPLYABLE)
def test_it_applies_and_round_trips_each_cookbook_manifest(filename, cast, client_for, ml_queues) -> None:
    client = client_for(cast.root if filename in ADMIN_FILES else cast.alice, "token")
    original = (builders.COOKBOOK / filename).read_text()

    first = post_yaml(client, "/api/v1/apply", original)
    assert first.status_code == 200, first.json()
    assert {item["action"] for item in first.json()["items"]} == {"created"}

    again = post_yaml(client, "/api/v1/apply", original)
    assert [item["action"] for item in again.json()["items"]] == ["unchanged"] * len(first.json()["items"])

    if filename == "12-scheduler-conf.yaml":
        got = client.get("/api/v1/scheduler-config").json()
        assert yaml.safe_load(got["yaml"]) == yaml.safe_load(original)
        assert post_yaml(client, "/api/v1/apply", got["yaml"]).json()["items"][0]["action"] == "unchanged"
        return
    for item in first.json()["items"]:
        fetched = client.get(object_url(item["object"]))
        assert fetched.status_code == 200
        body = fetched.json()
        assert set(body) >= {"apiVersion", "kind", "metadata", "spec", "status"}
        reapplied = client.post("/api/v1/apply", data=body, format="json")
        assert reapplied.status_code == 200, reapplied.json()
        assert reapplied.json()["items"][0]["action"] == "unchanged"


def test_applied_jobs_keep_volcano_defaults_and_get_tasks_and_podgroup(cast, client_for, ml_queues) -> None:
    client = client_for(cast.alice)
    post_yaml(client, "/api/v1/apply", (builders.COOKBOOK / "08-ci-pipeline.yaml").read_text())
    job = Job.objects.get(namespace="team-a", name="ci-pipeline")
    assert job.spec["maxRetry"] == 3
    assert [t["minAvailable"] for t in job.spec["tasks"]] == [1, 3, 1]
    assert job.min_available == 1
    assert job.queue_name == "ci-cd"
    assert job.tenant == cast.team_a
    assert job.phase == "Pending"
    assert job.status["state"]["phase"] == "Pending"
    assert list(Task.objects.filter(job=job).values_list("name", flat=True)) == ["lint", "unit-test", "build-image"]
    podgroup = PodGroup.objects.get(job=job)
    assert podgroup.name == f"ci-pipeline-{job.uid}"
    assert podgroup.min_member == 1
    assert podgroup.queue_name == "ci-cd"


def test_the_scheduler_configuration_becomes_the_active_version(cast, client_for) -> None:
    client = client_for(cast.root)
    post_yaml(client, "/api/v1/apply", (builders.COOKBOOK / "12-scheduler-conf.yaml").read_text())
    assert SchedulerProfile.objects.get(active=True).version == 1


def test_it_refuses_the_pod_template_fragment(cast, client_for) -> None:
    response = post_yaml(
        client_for(cast.alice), "/api/v1/apply", (builders.COOKBOOK / "05-spark-driver-pod-template.yaml").read_text()
    )
    assert response.status_code == 400
    assert response.json()["details"]["causes"][0]["field"] == "metadata.name"


def test_spark_pods_built_from_the_template_join_the_podgroup(cast, client_for, ml_queues) -> None:
    client = client_for(cast.alice)
    post_yaml(client, "/api/v1/apply", (builders.COOKBOOK / "04-spark-podgroup.yaml").read_text())
    template = builders.cookbook_documents("05-spark-driver-pod-template.yaml")[0]
    pods = []
    for name in ("spark-pi-driver", "spark-pi-exec-1", "spark-pi-exec-2"):
        pod = builders.with_changes(template, "metadata.name", name)
        pod["spec"]["containers"] = [
            {"name": "spark", "image": "spark:3.5", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}
        ]
        pods.append(pod)
    response = post_yaml(client, "/api/v1/apply", builders.to_yaml(*pods))
    assert response.status_code == 200, response.json()
    group = PodGroup.objects.get(namespace="team-a", name="spark-pi-group")
    assert set(Pod.objects.filter(podgroup=group).values_list("name", flat=True)) == {
        "spark-pi-driver",
        "spark-pi-exec-1",
        "spark-pi-exec-2",
    }
    assert Pod.objects.get(name="spark-pi-driver").requests == {"cpu": 1000, "memory": 2 * 1024**3}
