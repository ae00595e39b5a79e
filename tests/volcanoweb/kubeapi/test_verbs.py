"""Kubernetes verbs on the Volcano kinds through the Django test client: what kubectl and client libraries send."""

from __future__ import annotations

import json

import pytest

from tests.volcanoweb import builders
from volcanoweb.jobs.models import Command, Job

pytestmark = pytest.mark.django_db

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"
TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def _post(client, url: str, doc: dict, **params: str):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return client.post(f"{url}?{query}" if query else url, data=json.dumps(doc), content_type="application/json")


def _patch(client, url: str, body, content_type: str, **params: str):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return client.patch(f"{url}?{query}" if query else url, data=json.dumps(body), content_type=content_type)


@pytest.fixture
def api(client_for, cast):
    return client_for(cast.alice, "token")


def test_create_get_list_and_the_status_subresource(api) -> None:
    created = _post(api, JOBS, builders.job_manifest("train"))
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["metadata"]["namespace"] == "team-a"
    assert body["status"]["state"]["phase"] == "Pending"
    got = api.get(f"{JOBS}/train").json()
    assert got["metadata"]["uid"] == body["metadata"]["uid"]
    status = api.get(f"{JOBS}/train/status").json()
    assert status["status"]["state"]["phase"] == "Pending"
    listed = api.get(JOBS).json()
    assert listed["kind"] == "JobList"
    assert listed["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["train"]
    # A list's resourceVersion is the log's revision it is consistent with: at least the object's own.
    assert int(listed["metadata"]["resourceVersion"]) >= int(got["metadata"]["resourceVersion"]) > 0
    again = _post(api, JOBS, builders.job_manifest("train"))
    assert again.status_code == 409
    assert again.json()["reason"] == "AlreadyExists"


def test_limit_continue_label_and_field_selectors(api) -> None:
    for name, team in (("a", "x"), ("b", "y"), ("c", "x")):
        doc = builders.job_manifest(name)
        doc["metadata"]["labels"] = {"team": team}
        assert _post(api, JOBS, doc).status_code == 201
    first = api.get(f"{JOBS}?limit=2").json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b"]
    rest = api.get(f"{JOBS}?limit=2&continue={first['metadata']['continue']}").json()
    assert [i["metadata"]["name"] for i in rest["items"]] == ["c"]
    assert [i["metadata"]["name"] for i in api.get(f"{JOBS}?labelSelector=team%3Dx").json()["items"]] == ["a", "c"]
    named = api.get(f"{JOBS}?fieldSelector=metadata.name%3Db").json()["items"]
    assert [i["metadata"]["name"] for i in named] == ["b"]
    bad = api.get(f"{JOBS}?fieldSelector=spec.queue%3Ddefault")
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "fieldSelector"


def test_update_needs_the_current_resource_version_409_otherwise(api) -> None:
    current = _post(api, JOBS, builders.job_manifest("train")).json()
    current["spec"]["minAvailable"] = 1  # Volcano lets updates change minAvailable, replicas, priorityClassName
    updated = api.put(f"{JOBS}/train", data=json.dumps(current), content_type="application/json")
    assert updated.status_code == 200, updated.json()
    assert updated.json()["spec"]["minAvailable"] == 1
    current["spec"]["minAvailable"] = 2  # still carries the old resourceVersion
    stale = api.put(f"{JOBS}/train", data=json.dumps(current), content_type="application/json")
    assert stale.status_code == 409
    assert stale.json()["reason"] == "Conflict"
    assert "the object has been modified" in stale.json()["message"]
    assert Job.objects.get(name="train").spec["minAvailable"] == 1
    del current["metadata"]["resourceVersion"]
    missing = api.put(f"{JOBS}/train", data=json.dumps(current), content_type="application/json")
    assert missing.status_code == 400
    assert missing.json()["details"]["causes"][0]["field"] == "metadata.resourceVersion"


def test_merge_json_and_apply_patches(api) -> None:
    _post(api, JOBS, builders.job_manifest("train"))
    merged = _patch(api, f"{JOBS}/train", {"metadata": {"labels": {"a": "1"}}}, "application/merge-patch+json")
    assert merged.status_code == 200, merged.json()
    assert merged.json()["metadata"]["labels"] == {"a": "1"}
    ops = [
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/spec/minAvailable", "value": 1},
    ]
    patched = _patch(api, f"{JOBS}/train", ops, "application/json-patch+json")
    assert patched.status_code == 200, patched.json()
    assert patched.json()["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert patched.json()["spec"]["minAvailable"] == 1
    failing = _patch(
        api, f"{JOBS}/train", [{"op": "test", "path": "/spec/minAvailable", "value": 9}], "application/json-patch+json"
    )
    assert failing.status_code == 400
    stale = _patch(
        api,
        f"{JOBS}/train",
        {"metadata": {"resourceVersion": "1"}, "spec": {"minAvailable": 2}},
        "application/merge-patch+json",
    )
    assert stale.status_code == 409
    invalid = _patch(api, f"{JOBS}/train", {"spec": {"minAvailable": -1}}, "application/merge-patch+json")
    assert invalid.status_code == 400
    assert invalid.json()["reason"] == "Invalid"
    assert any(c["field"] == "spec.minAvailable" for c in invalid.json()["details"]["causes"])
    applied = api.patch(
        f"{JOBS}/fresh?fieldManager=test",
        data=json.dumps(builders.job_manifest("fresh")),
        content_type="application/apply-patch+yaml",
    )
    assert applied.status_code == 201, applied.json()
    no_manager = api.patch(
        f"{JOBS}/fresh", data=json.dumps(builders.job_manifest("fresh")), content_type="application/apply-patch+yaml"
    )
    assert no_manager.status_code == 400
    assert no_manager.json()["details"]["causes"][0]["field"] == "fieldManager"
    unsupported = api.patch(f"{JOBS}/train", data="{}", content_type="text/plain")
    assert unsupported.status_code == 415


def test_dry_run_and_field_validation(api) -> None:
    dry = _post(api, JOBS, builders.job_manifest("train"), dryRun="All", fieldValidation="Strict")
    assert dry.status_code == 201
    assert not Job.objects.filter(name="train").exists()
    bad = _post(api, JOBS, builders.job_manifest("train"), fieldValidation="Loose")
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "fieldValidation"
    bad_dry = _post(api, JOBS, builders.job_manifest("train"), dryRun="Some")
    assert bad_dry.status_code == 400
    wrong_kind = _post(api, JOBS, builders.queue_manifest("q1"))
    assert wrong_kind.status_code == 400


def test_delete_with_propagation_policy_and_deletecollection(api) -> None:
    for name in ("a", "b", "c"):
        doc = builders.job_manifest(name)
        doc["metadata"]["labels"] = {"drop": "yes" if name != "c" else "no"}
        _post(api, JOBS, doc)
    orphan = api.delete(f"{JOBS}/a", data=json.dumps({"propagationPolicy": "Orphan"}), content_type="application/json")
    assert orphan.status_code == 400
    assert orphan.json()["details"]["causes"][0]["field"] == "propagationPolicy"
    gone = api.delete(
        f"{JOBS}/a", data=json.dumps({"propagationPolicy": "Background"}), content_type="application/json"
    )
    assert gone.status_code == 200
    assert gone.json()["status"] == "Success"
    assert gone.json()["details"]["name"] == "a"
    assert api.get(f"{JOBS}/a").status_code == 404
    removed = api.delete(f"{JOBS}?labelSelector=drop%3Dyes")
    assert [i["metadata"]["name"] for i in removed.json()["items"]] == ["b"]
    assert list(Job.objects.values_list("name", flat=True)) == ["c"]


def test_table_output_has_volcanos_columns(api) -> None:
    _post(api, JOBS, builders.job_manifest("train"))
    table = api.get(JOBS, HTTP_ACCEPT=TABLE).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Status",
        "minAvailable",
        "Runnings",
        "Age",
        "Queue",
    ]
    assert table["columnDefinitions"][-1]["priority"] == 1
    row = table["rows"][0]
    assert row["cells"][:3] == ["train", "Pending", 2]
    assert row["object"]["metadata"]["name"] == "train"
    one = api.get(f"{JOBS}/train", HTTP_ACCEPT=TABLE).json()
    assert one["kind"] == "Table"
    queues = api.get("/apis/scheduling.volcano.sh/v1beta1/queues", HTTP_ACCEPT=TABLE).json()
    assert [c["name"] for c in queues["columnDefinitions"]][:2] == ["Name", "Parent"]


def test_another_tenants_namespace_is_refused_like_rbac(client_for, cast) -> None:
    builders.make_job("team-a", "train")
    charlie = client_for(cast.charlie, "token")
    for url in (JOBS, f"{JOBS}/train", f"{JOBS}/train/status"):
        response = charlie.get(url)
        assert response.status_code == 403, url
        assert 'User "charlie" cannot' in response.json()["message"]
    assert _post(charlie, JOBS, builders.job_manifest("x")).status_code == 403
    assert charlie.delete(f"{JOBS}/train").status_code == 403
    assert charlie.get(f"{JOBS}?watch=1&timeoutSeconds=0").status_code == 403
    everything = charlie.get("/apis/batch.volcano.sh/v1alpha1/jobs").json()
    assert everything["items"] == []
    viewer = client_for(cast.victor, "token")
    assert viewer.get(JOBS).status_code == 200
    assert _post(viewer, JOBS, builders.job_manifest("x")).status_code == 403
    missing_ns = client_for(cast.root, "token").get("/apis/batch.volcano.sh/v1alpha1/namespaces/nowhere/jobs")
    assert missing_ns.status_code == 404


def test_read_only_kinds_and_unknown_resources(api) -> None:
    events = api.post("/api/v1/namespaces/team-a/events", data="{}", content_type="application/json", HTTP_ACCEPT=TABLE)
    assert events.status_code in (403, 405)
    namespaces = api.get("/api/v1/namespaces", HTTP_ACCEPT=TABLE).json()
    assert [r["cells"][0] for r in namespaces["rows"]] == ["team-a"]
    assert api.get("/api/v1/namespaces/team-a").json()["status"]["phase"] == "Active"
    assert api.get("/api/v1/namespaces/team-b").status_code == 404
    unknown = api.get("/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/widgets")
    assert unknown.status_code == 404
    assert unknown.json()["kind"] == "Status"


def test_commands_suspend_and_resume_a_job(api) -> None:
    builders.make_job("team-a", "train")
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": "train-abort-"},
        "action": "AbortJob",
        "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train"},
        "reason": "vcctl suspend",
    }
    created = _post(api, "/apis/bus.volcano.sh/v1alpha1/namespaces/team-a/commands", command)
    assert created.status_code == 201, created.json()
    assert created.json()["action"] == "AbortJob"
    stored = Command.objects.get()
    assert (stored.action, stored.target_name, stored.consumed_at) == ("AbortJob", "train", None)
    listed = api.get("/apis/bus.volcano.sh/v1alpha1/namespaces/team-a/commands").json()
    name = listed["items"][0]["metadata"]["name"]
    assert api.get(f"/apis/bus.volcano.sh/v1alpha1/namespaces/team-a/commands/{name}").status_code == 200
    bad = _post(api, "/apis/bus.volcano.sh/v1alpha1/namespaces/team-a/commands", {**command, "action": "Explode"})
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "action"


def test_the_rest_api_answers_unchanged_on_shared_core_paths(api) -> None:
    builders.make_job("team-a", "train")
    rest = api.get("/api/v1/namespaces").json()
    assert rest["items"][0]["tenant"] == "team-a"  # the REST API's own shape
    pods = api.get("/api/v1/namespaces/team-a/pods?ordering=-name").json()
    assert pods["kind"] == "PodList"
    kube = api.get("/api/v1/namespaces/team-a/pods?fieldSelector=status.phase%3DRunning").json()
    assert kube["kind"] == "PodList"
    # Both carry the change log's revision they were read at (nothing was written in between).
    assert kube["metadata"]["resourceVersion"] == pods["metadata"]["resourceVersion"] != ""
    assert kube["items"] == []


def test_a_patch_is_recomputed_when_a_controller_writes_in_between(api, monkeypatch) -> None:
    from volcanoweb.kubeapi import views

    _post(api, JOBS, builders.job_manifest("train"))
    original = views.ResourceView.find
    calls = []

    def find_then_race(self, access, resource, namespace, name):
        found = original(self, access, resource, namespace, name)
        if not calls:  # the job controller bumps the version after the patch read the object
            Job.objects.filter(name=name).update(resource_version=found.resource_version + 1)
        calls.append(name)
        return found

    monkeypatch.setattr(views.ResourceView, "find", find_then_race)
    patched = _patch(api, f"{JOBS}/train", {"metadata": {"labels": {"a": "1"}}}, "application/merge-patch+json")
    assert patched.status_code == 200, patched.json()
    assert len(calls) == 2
    assert Job.objects.get(name="train").labels == {"a": "1"}
