"""The hostile-input corpus against the API: every body gets a 400 ``Status`` naming the field and the reason,
on every write endpoint, and nothing is written (row counts before and after)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.api.hostile.corpus import GENERIC, MANIFESTS, Hostile, alias_bomb
from tests.volcanoweb.conftest import Cast
from volcanoweb.audit.models import AuditEntry
from volcanoweb.jobs.models import Job, Pod, PodGroup, PriorityClass, Task
from volcanoweb.manifests import parse
from volcanoweb.queues.models import Queue
from volcanoweb.scheduling.models import SchedulerProfile
from volcanoweb.tenancy.models import ApiToken
from volcanoweb.workflows.models import CronJob, JobFlow, JobTemplate

MODELS = (Job, Task, Pod, PodGroup, Queue, PriorityClass, CronJob, JobFlow, JobTemplate, SchedulerProfile)
MODELS += (AuditEntry, ApiToken)

#: (method, url, user) of every write that takes a body.
WRITES = [
    ("post", "/api/v1/apply", "alice"),
    ("post", "/api/v1/simulate", "alice"),
    ("post", "/api/v1/namespaces/team-a/jobs", "alice"),
    ("put", "/api/v1/namespaces/team-a/jobs/train", "alice"),
    ("post", "/api/v1/queues", "root"),
    ("post", "/api/v1/tokens", "alice"),
    ("post", "/api/v1/namespaces/team-a/jobs/train/commands", "alice"),
    ("put", "/api/v1/scheduler-config", "root"),
]
MANIFEST_WRITES = WRITES[:3]


def snapshot() -> dict[str, Any]:
    counts: dict[str, Any] = {model.__name__: model.objects.count() for model in MODELS}
    counts["train"] = Job.objects.values("spec", "labels", "annotations").get(namespace="team-a", name="train")
    return counts


def send(world: Cast, method: str, url: str, user: str, case: Hostile, query: str = "") -> Any:
    client = APIClient()
    client.force_authenticate(getattr(world, user))
    return getattr(client, method)(url + query, data=case.body(), content_type=case.content_type)


def assert_refused(response: Any, case: Hostile) -> dict[str, Any]:
    assert response["Content-Type"].startswith("application/json"), response.content[:300]
    body: dict[str, Any] = response.json()
    assert response.status_code == 400, json.dumps(body)[:2000]
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert body["code"] == 400
    assert body["reason"] in ("BadRequest", "Invalid")
    assert case.message in body["message"], body["message"]
    if case.field is not None:
        causes = body["details"]["causes"]
        assert any(c["field"] == case.field and case.message in c["message"] for c in causes), causes
    return body


def test_the_corpus_is_large_and_named_once() -> None:
    cases = GENERIC + MANIFESTS
    assert len(cases) >= 45
    assert len({case.id for case in cases}) == len(cases)


@pytest.mark.parametrize(("method", "url", "user"), WRITES, ids=[f"{m}:{u}" for m, u, _ in WRITES])
@pytest.mark.parametrize("case", GENERIC, ids=[case.id for case in GENERIC])
def test_every_write_refuses_hostile_bodies(
    case: Hostile, method: str, url: str, user: str, world: Cast, db: Any
) -> None:
    before = snapshot()
    assert_refused(send(world, method, url, user, case), case)
    assert snapshot() == before


def _manifest_pairs() -> list[Any]:
    """Every manifest case on apply and simulate; the Job ones on the jobs collection too (it takes only Jobs)."""
    pairs = []
    for case in MANIFESTS:
        body = case.body().decode()
        is_job = "kind: Job\n" in body or '"kind": "Job"' in body
        for method, url, user in MANIFEST_WRITES:
            if is_job or not url.endswith("/jobs"):
                pairs.append(pytest.param(case, method, url, user, id=f"{case.id}-{method}:{url}"))
    return pairs


@pytest.mark.parametrize(("case", "method", "url", "user"), _manifest_pairs())
def test_manifest_writes_refuse_unknown_duplicate_fields_and_bad_quantities(
    case: Hostile, method: str, url: str, user: str, world: Cast, db: Any
) -> None:
    before = snapshot()
    assert_refused(send(world, method, url, user, case), case)
    assert snapshot() == before


def test_strict_is_the_default_and_can_be_named(world: Cast, db: Any) -> None:
    case = next(c for c in MANIFESTS if c.id == "unknown-spec-field")
    for query in ("", "?fieldValidation=Strict", "?fieldValidation=strict"):
        assert_refused(send(world, "post", "/api/v1/apply", "alice", case, query), case)


def test_a_bad_field_validation_value_is_a_400_naming_the_parameter(world: Cast, db: Any) -> None:
    case = next(c for c in MANIFESTS if c.id == "unknown-spec-field")
    for method, url, user in [*WRITES, ("delete", "/api/v1/namespaces/team-a/jobs/train", "alice")]:
        before = snapshot()
        response = send(world, method, url, user, case, "?fieldValidation=Loose")
        body = response.json()
        assert response.status_code == 400, body
        assert body["details"]["causes"][0]["field"] == "fieldValidation"
        assert "Strict, Warn, Ignore" in body["message"]
        assert snapshot() == before


@pytest.mark.parametrize("mode", ["Warn", "Ignore"])
def test_warn_and_ignore_accept_without_storing_unknown_fields(mode: str, world: Cast, db: Any) -> None:
    doc = builders.job_manifest("lenient", namespace="team-a", queue="ml-training")
    doc["spec"]["bogusField"] = {"x": 1}
    doc["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    doc["extra"] = 1
    text = yaml.safe_dump(doc).replace("queue: ml-training", "queue: ci-cd\n  queue: ml-training")
    client = APIClient()
    client.force_authenticate(world.alice)
    response = client.post(f"/api/v1/apply?fieldValidation={mode}", data=text.encode(), content_type="application/yaml")
    assert response.status_code == 200, response.json()
    warning = response.headers.get("Warning", "")
    if mode == "Warn":
        for path in ("spec.bogusField", "spec.tasks[0].template.spec.containers[0].imagee", "extra"):
            assert f'299 - "unknown field \\"{path}\\""' in warning, warning
        assert 'duplicate field \\"spec.queue\\"' in warning
    else:
        assert warning == ""
    echoed = json.dumps(response.json())
    assert "bogusField" not in echoed
    assert "imagee" not in echoed
    assert '"extra"' not in echoed
    job = Job.objects.get(namespace="team-a", name="lenient")
    stored = json.dumps(job.spec)
    assert "bogusField" not in stored
    assert "imagee" not in stored
    assert job.spec["queue"] == "ml-training"  # a repeated key keeps its last value outside Strict
    got = client.get("/api/v1/namespaces/team-a/jobs/lenient").json()
    assert "bogusField" not in json.dumps(got)


def test_warn_on_a_small_body_drops_unknown_keys(world: Cast, db: Any) -> None:
    client = APIClient()
    client.force_authenticate(world.alice)
    response = client.post(
        "/api/v1/tokens?fieldValidation=Warn", data=b'{"name": "ci", "colour": "all"}', content_type="application/json"
    )
    assert response.status_code == 201
    assert response.headers["Warning"] == '299 - "unknown field \\"colour\\""'
    strict = client.post("/api/v1/tokens", data=b'{"name": "ci", "colour": "all"}', content_type="application/json")
    assert strict.status_code == 400
    assert strict.json()["details"]["causes"][0]["field"] == "colour"


class Counting:
    """Counts what the YAML parser does: events read and values built (the work a body costs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events = 0
        self.built = 0
        real_parse, real_construct = yaml.parse, parse._Loader.construct_object

        def counting_parse(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for event in real_parse(*args, **kwargs):
                self.events += 1
                yield event

        def counting_construct(loader: Any, *args: Any, **kwargs: Any) -> Any:
            self.built += 1
            return real_construct(loader, *args, **kwargs)

        monkeypatch.setattr(parse.yaml, "parse", counting_parse)
        monkeypatch.setattr(parse._Loader, "construct_object", counting_construct)


@pytest.mark.parametrize("levels", [2, 3, 4, 5, 6, 7, 8, 10])
def test_alias_bombs_cost_work_in_proportion_to_their_bytes(
    levels: int, world: Cast, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Growing bombs (9 aliases per level, under an unknown field; Ignore, so only the size limit can refuse):
    the small ones pass without their field, the large ones are refused before anything is built; the parser's
    work (events read, values built) and the memory allocated stay bounded by the body's size, not 9**levels."""
    counter = Counting(monkeypatch)
    body = alias_bomb(levels)
    client = APIClient()
    client.force_authenticate(world.alice)
    before = snapshot()
    tracemalloc.start()
    try:
        response = client.post(
            "/api/v1/apply?dryRun=true&fieldValidation=Ignore", data=body, content_type="application/yaml"
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    expanded = 9**levels
    if expanded < parse.MAX_NODES:
        assert response.status_code == 200, response.json()
        assert "lol" not in response.content.decode()  # the unknown field is dropped, never echoed
    else:
        assert response.status_code == 400
        assert "once aliases are expanded" in response.json()["message"]
        assert counter.built == 0  # refused from the events alone
    assert counter.events <= 2 * len(body)
    assert counter.built <= len(body)
    assert peak < 8 * 1024 * 1024, peak
    assert snapshot() == before
