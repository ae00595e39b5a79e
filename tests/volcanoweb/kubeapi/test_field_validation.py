"""``?fieldValidation=Strict|Warn|Ignore`` on every Kubernetes API write (create, update, each patch type,
server-side apply, dry runs), answered like the Kubernetes API server; ``Status`` JSON for every failure."""

from __future__ import annotations

import json

import pytest

from tests.volcanoweb import builders
from volcanoweb.jobs.models import Command, Job
from volcanoweb.kubeapi import views

pytestmark = pytest.mark.django_db

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
MERGE, JSON_PATCH, APPLY = "application/merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml"


@pytest.fixture
def api(client_for, cast):
    return client_for(cast.alice, "token")


def _bogus_job(name: str = "train") -> dict:
    doc = builders.job_manifest(name)
    doc["spec"]["bogus"] = 1
    doc["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    return doc


def _write(api, verb: str, mode: str | None, *, dry_run: bool = False):
    """One write of a Job with the unknown fields ``spec.bogus`` and ``...containers[0].imagee``."""
    params = [f"fieldValidation={mode}"] if mode else []
    if dry_run:
        params.append("dryRun=All")
    if verb in ("apply", "apply-create"):
        params.append("fieldManager=kubectl")
    query = "?" + "&".join(params) if params else ""
    if verb == "create":
        return api.post(JOBS + query, data=json.dumps(_bogus_job("fresh")), content_type="application/json")
    if verb == "apply-create":
        return api.patch(f"{JOBS}/fresh{query}", data=json.dumps(_bogus_job("fresh")), content_type=APPLY)
    current = api.get(f"{JOBS}/train").json()
    if verb == "update":
        current["spec"]["bogus"] = 1
        current["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["imagee"] = "typo"
        return api.put(f"{JOBS}/train{query}", data=json.dumps(current), content_type="application/json")
    if verb == "apply":
        return api.patch(f"{JOBS}/train{query}", data=json.dumps(_bogus_job()), content_type=APPLY)
    if verb == "json-patch":
        ops = [
            {"op": "add", "path": "/spec/bogus", "value": 1},
            {"op": "add", "path": "/spec/tasks/0/template/spec/containers/0/imagee", "value": "typo"},
        ]
        return api.patch(f"{JOBS}/train{query}", data=json.dumps(ops), content_type=JSON_PATCH)
    body = {"spec": {"bogus": 1, "tasks": current["spec"]["tasks"]}}
    body["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    return api.patch(f"{JOBS}/train{query}", data=json.dumps(body), content_type=MERGE)


# No "strategic": a custom resource takes no strategic merge patch (415, tests/volcanoweb/kubeapi/test_everyday.py).
VERBS = ["create", "update", "merge", "json-patch", "apply", "apply-create"]
UNKNOWN = ["spec.bogus", "spec.tasks[0].template.spec.containers[0].imagee"]


def _stored(name: str) -> str:
    job = Job.objects.filter(namespace="team-a", name=name).first()
    return json.dumps(job.spec) if job is not None else ""


@pytest.mark.parametrize("mode", [None, "Strict", "strict"])
@pytest.mark.parametrize("verb", VERBS)
def test_strict_refuses_unknown_fields_on_every_write(api, verb: str, mode: str | None) -> None:
    builders.make_job("team-a", "train")
    before = _stored("train")
    response = _write(api, verb, mode)
    body = response.json()
    assert response.status_code == 400, body
    assert body["kind"] == "Status"
    assert body["reason"] == "BadRequest"
    assert body["message"] == (
        'Job in version "v1alpha1" cannot be handled as a Job: strict decoding error: '
        'unknown field "spec.bogus", unknown field "spec.tasks[0].template.spec.containers[0].imagee"'
    )
    assert body["details"]["causes"] == [
        {"field": path, "message": f'unknown field "{path}"', "reason": "FieldValueUnknown"} for path in UNKNOWN
    ]
    assert _stored("train") == before
    assert not Job.objects.filter(name="fresh").exists()


@pytest.mark.parametrize("verb", VERBS)
def test_warn_stores_without_the_unknown_fields_and_answers_warning_headers(api, verb: str) -> None:
    builders.make_job("team-a", "train")
    response = _write(api, verb, "Warn")
    assert response.status_code in (200, 201), response.json()
    assert response.headers["Warning"] == ", ".join(f'299 - "unknown field \\"{path}\\""' for path in UNKNOWN)
    name = "fresh" if verb in ("create", "apply-create") else "train"
    stored = _stored(name)
    assert stored
    assert "bogus" not in stored
    assert "imagee" not in stored
    assert "bogus" not in json.dumps(response.json())
    assert "bogus" not in json.dumps(api.get(f"{JOBS}/{name}").json())


@pytest.mark.parametrize("verb", VERBS)
def test_ignore_drops_unknown_fields_silently(api, verb: str) -> None:
    builders.make_job("team-a", "train")
    response = _write(api, verb, "Ignore")
    assert response.status_code in (200, 201), response.json()
    assert "Warning" not in response.headers
    stored = _stored("fresh" if verb in ("create", "apply-create") else "train")
    assert stored
    assert "bogus" not in stored
    assert "imagee" not in stored


@pytest.mark.parametrize("verb", ["create", "merge", "apply-create"])
def test_dry_run_takes_the_same_checks(api, verb: str) -> None:
    builders.make_job("team-a", "train")
    before = _stored("train")
    refused = _write(api, verb, "Strict", dry_run=True)
    assert refused.status_code == 400, refused.json()
    assert refused.json()["details"]["causes"][0]["reason"] == "FieldValueUnknown"
    warned = _write(api, verb, "Warn", dry_run=True)
    assert warned.status_code in (200, 201), warned.json()
    assert 'unknown field \\"spec.bogus\\"' in warned.headers["Warning"]
    assert "bogus" not in json.dumps(warned.json())
    assert _stored("train") == before
    assert not Job.objects.filter(name="fresh").exists()


def test_duplicate_fields_are_field_value_duplicate(api) -> None:
    builders.make_job("team-a", "train")
    text = json.dumps(builders.job_manifest("fresh")).replace('"queue": "default"', '"queue": "x", "queue": "default"')
    strict = api.post(JOBS, data=text, content_type="application/json")
    assert strict.status_code == 400
    assert strict.json()["details"]["causes"] == [
        {"field": "spec.queue", "message": 'duplicate field "spec.queue"', "reason": "FieldValueDuplicate"}
    ]
    assert 'strict decoding error: duplicate field "spec.queue"' in strict.json()["message"]
    merge = api.patch(f"{JOBS}/train", data='{"spec": {"minAvailable": 1, "minAvailable": 1}}', content_type=MERGE)
    assert merge.status_code == 400
    assert merge.json()["details"]["causes"][0]["field"] == "spec.minAvailable"
    warned = api.post(f"{JOBS}?fieldValidation=Warn", data=text, content_type="application/json")
    assert warned.status_code == 201
    assert warned.headers["Warning"] == '299 - "duplicate field \\"spec.queue\\""'
    assert Job.objects.get(name="fresh").spec["queue"] == "default"  # the last value, as Kubernetes keeps


def test_a_cluster_scoped_kind_and_a_bad_mode(client_for, cast) -> None:
    root = client_for(cast.root, "token")
    doc = builders.queue_manifest("q1")
    doc["spec"]["wieght"] = 3
    refused = root.post(QUEUES, data=json.dumps(doc), content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["details"]["causes"][0] == {
        "field": "spec.wieght",
        "message": 'unknown field "spec.wieght"',
        "reason": "FieldValueUnknown",
    }
    bad = root.post(f"{QUEUES}?fieldValidation=Loose", data=json.dumps(doc), content_type="application/json")
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "fieldValidation"
    assert "Strict, Warn, Ignore" in bad.json()["message"]
    accepted = root.post(f"{QUEUES}?fieldValidation=Warn", data=json.dumps(doc), content_type="application/json")
    assert accepted.status_code == 201
    assert "wieght" not in json.dumps(root.get(f"{QUEUES}/q1").json())


def test_a_known_object_round_trips_in_strict(api) -> None:
    """What the server renders (status, metadata) re-applies: Strict only refuses the client's own fields."""
    builders.make_job("team-a", "train")
    current = api.get(f"{JOBS}/train").json()
    current["metadata"]["labels"] = {"a": "1"}
    assert api.put(f"{JOBS}/train", data=json.dumps(current), content_type="application/json").status_code == 200
    merged = api.patch(f"{JOBS}/train", data='{"metadata": {"labels": {"b": "2"}}}', content_type=MERGE)
    assert merged.status_code == 200, merged.json()
    assert "Warning" not in merged.headers


def test_errors_and_unknown_paths_under_apis_are_status_json(api, client_for, cast, monkeypatch) -> None:
    for path in ("/apis/nowhere.example.com/v1/things/x", "/apis//v1/jobs", "/openapi/v9", "/api/v2/pods"):
        response = api.get(path)
        assert response.status_code == 404, path
        assert response["Content-Type"].startswith("application/json"), path
        assert response.json()["kind"] == "Status"
    anonymous = client_for(None).get("/apis/nowhere.example.com/v1/things")
    assert anonymous.status_code == 401
    assert anonymous.json()["kind"] == "Status"

    def boom(*args, **kwargs):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(views.ResourceView, "kwargs_of", boom)
    api.raise_request_exception = False
    crashed = api.get(JOBS)
    assert crashed.status_code == 500
    assert crashed["Content-Type"].startswith("application/json")
    assert crashed.json()["kind"] == "Status"
    assert "secret detail" not in crashed.content.decode()


def _write_operations(doc: dict) -> list[tuple[str, str, dict]]:
    return [
        (path, verb, operation)
        for path, item in doc["paths"].items()
        for verb, operation in item.items()
        if verb in ("post", "put", "patch")
    ]


def test_the_openapi_documents_name_field_validation_on_every_write(api) -> None:
    """kubectl only leaves validation to the server when the write's OpenAPI operation names the parameter."""
    root = api.get("/openapi/v3").json()["paths"]
    documents = [api.get(entry["serverRelativeURL"]).json() for entry in root.values()]
    documents.append(api.get("/openapi/v2").json())
    writes = [w for doc in documents for w in _write_operations(doc)]
    assert {verb for _, verb, _ in writes} == {"post", "put", "patch"}
    assert any(path.endswith("/jobs/{name}") for path, _, _ in writes)
    for path, verb, operation in writes:
        names = {p["name"]: p for p in operation.get("parameters", [])}
        assert "fieldValidation" in names, (path, verb)
        assert "Strict (the default)" in names["fieldValidation"]["description"]
        assert "dryRun" in names, (path, verb)


def test_every_documented_kubeapi_write_checks_the_parameter(client_for, cast) -> None:
    """Each write path of the v3 documents refuses an unknown ``fieldValidation`` with a 400 naming it."""
    root = client_for(cast.root, "token")
    index = root.get("/openapi/v3").json()["paths"]
    checked = 0
    for entry in index.values():
        for path, verb, _ in _write_operations(root.get(entry["serverRelativeURL"]).json()):
            url = path.replace("{namespace}", "team-a").replace("{name}", "x") + "?fieldValidation=Loose"
            content_type = MERGE if verb == "patch" else "application/json"
            response = getattr(root, verb)(url, data="{}", content_type=content_type)
            assert response.status_code == 400, (verb, url, response.content[:200])
            assert response.json()["details"]["causes"][0]["field"] == "fieldValidation", (verb, url)
            checked += 1
    assert checked >= 20


def test_a_command_with_an_unknown_field(api) -> None:
    builders.make_job("team-a", "train")
    url = "/apis/bus.volcano.sh/v1alpha1/namespaces/team-a/commands"
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": "train-abort-"},
        "action": "AbortJob",
        "target": {"kind": "Job", "name": "train", "nmae": "typo"},
        "reason": "test",
        "urgency": "high",
    }
    refused = api.post(url, data=json.dumps(command), content_type="application/json")
    assert refused.status_code == 400
    assert [c["field"] for c in refused.json()["details"]["causes"]] == ["target.nmae", "urgency"]
    assert not Command.objects.exists()
    warned = api.post(f"{url}?fieldValidation=Warn", data=json.dumps(command), content_type="application/json")
    assert warned.status_code == 201, warned.json()
    assert 'unknown field \\"urgency\\"' in warned.headers["Warning"]
    assert Command.objects.get().action == "AbortJob"


def test_a_patch_on_a_shared_core_pod_path_is_served_and_validated(api) -> None:
    """The REST API has no PATCH: ``kubectl label/patch pod`` reach the Kubernetes view, with field validation."""
    pods = "/api/v1/namespaces/team-a/pods"
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    assert api.post(pods, data=json.dumps(doc), content_type="application/json").status_code == 201
    labelled = api.patch(f"{pods}/p", data='{"metadata": {"labels": {"a": "1"}}}', content_type=MERGE)
    assert labelled.status_code == 200, labelled.json()
    assert labelled.json()["metadata"]["labels"] == {"a": "1"}
    refused = api.patch(f"{pods}/p", data='{"spec": {"nodeNmae": "n1"}}', content_type=MERGE)
    assert refused.status_code == 400
    assert refused.json()["details"]["causes"][0]["field"] == "spec.nodeNmae"
