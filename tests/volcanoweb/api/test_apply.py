"""POST /api/v1/apply: dry runs, per-object results, atomicity, updates under Volcano's rules, conflicts."""

from __future__ import annotations

from typing import Any

from tests.volcanoweb.builders import job_manifest, queue_manifest, task, to_yaml, with_changes
from tests.volcanoweb.conftest import post_yaml, put_yaml
from volcanoweb.audit.models import AuditEntry
from volcanoweb.jobs.models import Job, PodGroup, Task
from volcanoweb.queues.models import Queue


def test_a_dry_run_reports_what_would_change_and_writes_nothing(cast: Any, root_api: Any) -> None:
    body = to_yaml(queue_manifest("new-q", allowed=("team-a",)), job_manifest(namespace="team-a", queue="new-q"))
    audits = AuditEntry.objects.count()
    response = post_yaml(root_api, "/api/v1/apply?dryRun=true", body)
    assert response.status_code == 200, response.json()
    assert response.json()["dryRun"] is True
    assert [(i["kind"], i["action"]) for i in response.json()["items"]] == [("Queue", "created"), ("Job", "created")]
    assert not Queue.objects.filter(name="new-q").exists()
    assert not Job.objects.exists()
    assert AuditEntry.objects.count() == audits


def test_a_later_document_may_use_an_earlier_one_and_everything_is_audited(cast: Any, root_api: Any) -> None:
    body = to_yaml(queue_manifest("new-q", allowed=("team-a",)), job_manifest(namespace="team-a", queue="new-q"))
    response = post_yaml(root_api, "/api/v1/apply", body)
    assert [i["action"] for i in response.json()["items"]] == ["created", "created"]
    entry = AuditEntry.objects.filter(kind="Job").get()
    assert (entry.actor, entry.action, entry.object_key, entry.tenant) == (
        cast.root,
        "create",
        "team-a/train",
        cast.team_a,
    )
    assert entry.before is None
    assert entry.after["spec"]["queue"] == "new-q"


def test_updates_may_scale_tasks_and_min_available(cast: Any, alice_api: Any) -> None:
    post_yaml(alice_api, "/api/v1/apply", to_yaml(job_manifest(namespace="team-a")))
    scaled = job_manifest(namespace="team-a", tasks=[task(replicas=4)], minAvailable=3)
    response = post_yaml(alice_api, "/api/v1/apply", to_yaml(scaled))
    assert response.json()["items"][0]["action"] == "configured"
    job = Job.objects.get()
    assert (job.min_available, job.generation, job.status["minAvailable"]) == (3, 2, 3)
    assert Task.objects.get(job=job).replicas == 4
    assert PodGroup.objects.get(job=job).min_member == 3
    audit = AuditEntry.objects.filter(kind="Job", action="update").get()
    assert audit.before["spec"]["minAvailable"] == 2
    assert audit.after["spec"]["minAvailable"] == 3


def test_updates_may_not_change_other_fields_or_the_task_list(cast: Any, alice_api: Any) -> None:
    post_yaml(alice_api, "/api/v1/apply", to_yaml(job_manifest(namespace="team-a")))
    queue_change = post_yaml(alice_api, "/api/v1/apply", to_yaml(job_manifest(namespace="team-a", maxRetry=7)))
    assert queue_change.status_code == 400
    assert "job updates may not change fields other than `minAvailable`" in queue_change.json()["message"]
    more_tasks = post_yaml(
        alice_api, "/api/v1/apply", to_yaml(job_manifest(namespace="team-a", tasks=[task(), task("ps", 1)]))
    )
    assert more_tasks.json()["details"]["causes"][0]["message"] == "job updates may not add or remove tasks"


def test_a_stale_resource_version_is_a_conflict(cast: Any, alice_api: Any) -> None:
    post_yaml(alice_api, "/api/v1/apply", to_yaml(job_manifest(namespace="team-a")))
    stale = with_changes(job_manifest(namespace="team-a", minAvailable=1), "metadata.resourceVersion", "999")
    response = post_yaml(alice_api, "/api/v1/apply", to_yaml(stale))
    assert (response.status_code, response.json()["reason"]) == (409, "Conflict")
    assert "the object has been modified" in response.json()["message"]


def test_create_put_get_and_delete_by_url(cast: Any, alice_api: Any) -> None:
    url = "/api/v1/namespaces/team-a/jobs"
    created = post_yaml(alice_api, url, to_yaml(job_manifest()))
    assert created.status_code == 201
    assert created.json()["metadata"]["namespace"] == "team-a"
    again = post_yaml(alice_api, url, to_yaml(job_manifest()))
    assert (again.status_code, again.json()["reason"]) == (409, "AlreadyExists")
    assert again.json()["message"] == 'jobs.batch.volcano.sh "train" already exists'
    replaced = put_yaml(alice_api, f"{url}/train", to_yaml(job_manifest(minAvailable=1)))
    assert replaced.status_code == 200
    assert replaced.json()["spec"]["minAvailable"] == 1
    wrong_name = put_yaml(alice_api, f"{url}/other", to_yaml(job_manifest()))
    assert wrong_name.status_code == 400
    assert alice_api.delete(f"{url}/train").status_code == 200
    missing = alice_api.get(f"{url}/train")
    assert (missing.status_code, missing.json()["message"]) == (404, 'jobs.batch.volcano.sh "train" not found')
    assert not PodGroup.objects.exists()
    assert not Task.objects.exists()


def test_json_bodies_and_yaml_responses(cast: Any, alice_api: Any) -> None:
    response = alice_api.post("/api/v1/apply", data=job_manifest(namespace="team-a"), format="json")
    assert response.status_code == 200
    as_yaml = alice_api.get("/api/v1/namespaces/team-a/jobs/train", HTTP_ACCEPT="application/yaml")
    assert as_yaml["Content-Type"].startswith("application/yaml")
    assert b"kind: Job" in as_yaml.content


def test_a_job_with_finalizers_waits_for_the_runtime_on_delete(cast: Any, alice_api: Any) -> None:
    doc = with_changes(job_manifest(namespace="team-a"), "metadata.finalizers", ["volcanoweb.io/pods"])
    post_yaml(alice_api, "/api/v1/apply", to_yaml(doc))
    deleted = alice_api.delete("/api/v1/namespaces/team-a/jobs/train")
    assert deleted.status_code == 200
    assert deleted.json()["metadata"]["deletionTimestamp"]
    assert Job.objects.get().deletion_timestamp is not None


def test_job_templates_and_flows_are_stored_and_round_trip(cast: Any, alice_api: Any) -> None:
    template = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": "prepare"},
        "spec": {"tasks": [task()]},
    }
    flow = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "pipeline"},
        "spec": {
            "jobRetainPolicy": "delete",
            "flows": [{"name": "prepare"}, {"name": "train", "dependsOn": {"targets": ["prepare"]}}],
        },
    }
    response = post_yaml(alice_api, "/api/v1/apply", to_yaml(template, flow))
    assert [i["action"] for i in response.json()["items"]] == ["created", "created"]
    fetched = alice_api.get("/api/v1/namespaces/team-a/jobflows/pipeline").json()
    assert fetched["status"]["state"]["phase"] == "Pending"
    again = alice_api.post("/api/v1/apply", data=fetched, format="json")
    assert again.json()["items"][0]["action"] == "unchanged"
    assert alice_api.get("/api/v1/jobtemplates").json()["items"][0]["metadata"]["name"] == "prepare"


def test_applying_a_job_costs_a_bounded_number_of_queries(cast: Any, alice_api: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    post_yaml(alice_api, "/api/v1/apply", to_yaml(job_manifest("warm", namespace="team-a")))  # session, caches
    with CaptureQueriesContext(connection) as ctx:
        response = post_yaml(alice_api, "/api/v1/apply", to_yaml(job_manifest("counted", namespace="team-a")))
    assert response.status_code == 200, response.json()
    # 20 before: the queue admission took 4 queries and the default namespace was looked up unasked
    assert len(ctx) <= 16, [q["sql"][:90] for q in ctx.captured_queries]
