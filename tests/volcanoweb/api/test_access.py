"""For every endpoint and verb: an anonymous caller gets 401, a user of another tenant 403 or 404 (lists are
scoped instead), and viewers cannot write."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.builders import job_manifest, queue_manifest, task, to_yaml
from tests.volcanoweb.conftest import Cast, build_cast, module_data
from volcanoweb.apply import apply_documents
from volcanoweb.jobs import services as job_services
from volcanoweb.tenancy import services as tenancy_services
from volcanoweb.tenancy.access import SYSTEM

NS = "/api/v1/namespaces/team-a"
PG = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "pg"},
    "spec": {"minMember": 1, "queue": "qa"},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "solo"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}
CRON = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "CronJob",
    "metadata": {"name": "nightly"},
    "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"queue": "qa", "tasks": [task()]}}},
}
TEMPLATE = {
    "apiVersion": "flow.volcano.sh/v1alpha1",
    "kind": "JobTemplate",
    "metadata": {"name": "step"},
    "spec": {"queue": "qa", "tasks": [task()]},
}
FLOW = {
    "apiVersion": "flow.volcano.sh/v1alpha1",
    "kind": "JobFlow",
    "metadata": {"name": "flow"},
    "spec": {"flows": [{"name": "step"}]},
}
QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "compute"},
    "spec": {"hard": {"requests.cpu": "8"}},
}
PC = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
HN = {
    "apiVersion": "topology.volcano.sh/v1alpha1",
    "kind": "HyperNode",
    "metadata": {"name": "rack1"},
    "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^rack1-"}}}]},
}
JOB = job_manifest("train", queue="qa")
CHILD_QUEUE = queue_manifest("qa-child", parent="qa")
OBJECTS = {
    "jobs": ("train", JOB),
    "podgroups": ("pg", PG),
    "pods": ("solo", POD),
    "cronjobs": ("nightly", CRON),
    "jobtemplates": ("step", TEMPLATE),
    "jobflows": ("flow", FLOW),
    "resourcequotas": ("compute", QUOTA),
}


@dataclass(frozen=True)
class Call:
    """One endpoint and verb; ``other`` is what a user of another tenant gets (a status or "scoped")."""

    route: str
    method: str
    url: str
    body: dict[str, Any] | None = None
    other: int | str = 403


def calls() -> list[Call]:
    out = [
        Call("apply", "post", "/api/v1/apply", job_manifest("train", namespace="team-a", queue="qa")),
        Call("simulate", "post", "/api/v1/simulate", job_manifest("train", namespace="team-a", queue="qa")),
    ]
    for plural, (name, body) in OBJECTS.items():
        out += [
            Call(f"namespaced-{plural}", "get", f"{NS}/{plural}"),
            Call(f"namespaced-{plural}", "post", f"{NS}/{plural}", body),
            Call(plural[:-1], "get", f"{NS}/{plural}/{name}"),
            Call(plural[:-1], "put", f"{NS}/{plural}/{name}", body),
            Call(plural[:-1], "delete", f"{NS}/{plural}/{name}"),
            Call(plural, "get", f"/api/v1/{plural}", other="scoped"),
        ]
    out += [
        Call("job-commands", "get", f"{NS}/jobs/train/commands"),
        Call("job-commands", "post", f"{NS}/jobs/train/commands", {"action": "abort"}),
        Call("cronjob-suspend", "post", f"{NS}/cronjobs/nightly/suspend"),
        Call("cronjob-resume", "post", f"{NS}/cronjobs/nightly/resume"),
        Call("cronjob-run", "post", f"{NS}/cronjobs/nightly/run"),
        Call("namespaced-events", "get", f"{NS}/events"),
        Call("events", "get", "/api/v1/events", other="scoped"),
        Call("audit", "get", "/api/v1/audit", other="scoped"),
        Call("queues", "get", "/api/v1/queues", other="scoped"),
        Call("queues", "post", "/api/v1/queues", CHILD_QUEUE, other=403),
        Call("queue", "get", "/api/v1/queues/qa", other=404),
        Call("queue", "put", "/api/v1/queues/qa", queue_manifest("qa", tenant="team-a", weight=3), other=404),
        Call("queue", "delete", "/api/v1/queues/qa", other=404),
        Call("queue-open", "post", "/api/v1/queues/qa/open", other=404),
        Call("queue-close", "post", "/api/v1/queues/qa/close", other=404),
        Call("priorityclasses", "get", "/api/v1/priorityclasses", other="scoped"),
        Call("priorityclasses", "post", "/api/v1/priorityclasses", {**PC, "metadata": {"name": "low"}}),
        Call("priorityclass", "get", "/api/v1/priorityclasses/high", other="scoped"),
        Call("priorityclass", "put", "/api/v1/priorityclasses/high", PC),
        Call("priorityclass", "delete", "/api/v1/priorityclasses/high"),
        Call("hypernodes", "get", "/api/v1/hypernodes", other="scoped"),
        Call("hypernodes", "post", "/api/v1/hypernodes", {**HN, "metadata": {"name": "rack2"}}),
        Call("hypernode", "get", "/api/v1/hypernodes/rack1", other="scoped"),
        Call("hypernode", "put", "/api/v1/hypernodes/rack1", HN),
        Call("hypernode", "delete", "/api/v1/hypernodes/rack1"),
        Call("scheduler-config", "get", "/api/v1/scheduler-config", other="scoped"),
        Call("scheduler-config", "put", "/api/v1/scheduler-config", None),
        Call("scheduler-config-versions", "get", "/api/v1/scheduler-config/versions", other="scoped"),
        Call("scheduler-config-activate", "post", "/api/v1/scheduler-config/versions/1/activate"),
        Call("whoami", "get", "/api/v1/whoami", other="scoped"),
        Call("namespaces", "get", "/api/v1/namespaces", other="scoped"),
        Call("tokens", "get", "/api/v1/tokens", other="scoped"),
        Call("tokens", "post", "/api/v1/tokens", {"name": "x"}, other="scoped"),
        Call("token", "delete", "/api/v1/tokens/{alice_token}", other=404),
        Call("not-found", "get", "/api/v1/no-such-thing", other=404),
        Call("kube-not-found", "get", "/apis/no.such.group/v1/things", other=404),
        Call("kube-core-not-found", "get", "/api/v2/pods", other=404),
    ]
    return out


CALLS = calls()


@pytest.fixture(scope="module")
def world(django_db_setup: Any, django_db_blocker: Any) -> Iterator[tuple[Cast, int]]:
    """Team-a owns queue qa and one object of every namespaced kind; team-b has a job too."""
    with module_data(django_db_blocker):
        cast = build_cast()
        builders.make_queue("qa", tenant="team-a")
        builders.make_queue("qb", tenant="team-b")
        docs = [PC, HN, *(body for _, body in OBJECTS.values())]
        apply_documents(SYSTEM, docs, default_namespace="team-a")
        job_services.apply_job(SYSTEM, job_manifest("b-job", namespace="team-b", queue="qb"))
        token, _ = tenancy_services.create_token(cast.alice, "alice")
        yield cast, token.pk


def request(client: APIClient, call: Call, token_id: int) -> Any:
    url = call.url.replace("{alice_token}", str(token_id))
    if call.route == "scheduler-config" and call.method == "put":
        return client.put(url, data=b"actions: enqueue, allocate\n", content_type="application/yaml")
    if call.body is None:
        return getattr(client, call.method)(url)
    if call.route in ("job-commands", "tokens"):
        return getattr(client, call.method)(url, data=call.body, format="json")
    return getattr(client, call.method)(url, data=to_yaml(call.body).encode(), content_type="application/yaml")


def _route_names(patterns: list[Any], prefix: str = "") -> set[str]:
    names: set[str] = set()
    for item in patterns:
        if isinstance(item, URLResolver):
            names |= _route_names(item.url_patterns, f"{item.namespace}:" if item.namespace else prefix)
        elif isinstance(item, URLPattern) and item.name:
            names.add(prefix + item.name)
    return names


def test_the_table_covers_every_api_route() -> None:
    api_routes = {
        name.split(":", 1)[1]
        for name in _route_names(get_resolver().url_patterns)
        if name.startswith(("api:", "api-fallback:"))
    }
    assert api_routes - {"schema", "docs"} == {call.route for call in CALLS}


@pytest.mark.parametrize("call", CALLS, ids=[f"{c.method}-{c.url}" for c in CALLS])
def test_anonymous_callers_get_401(call: Call, world: tuple[Cast, int], db: Any) -> None:
    response = request(APIClient(), call, world[1])
    assert response.status_code == 401, response.content
    body = response.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Unauthorized", 401)
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("call", CALLS, ids=[f"{c.method}-{c.url}" for c in CALLS])
def test_another_tenant_gets_403_or_404(call: Call, world: tuple[Cast, int], db: Any) -> None:
    cast, token_id = world
    client = APIClient()
    client.force_authenticate(cast.charlie)
    response = request(client, call, token_id)
    body = response.json()
    if call.other == "scoped":
        assert response.status_code in (200, 201), body
        for item in body.get("items", []):
            assert item.get("metadata", {}).get("namespace") not in ("team-a",)
            assert item.get("tenant") != "team-a"
        return
    assert response.status_code == call.other, body
    assert body["kind"] == "Status"
    assert body["reason"] == ("Forbidden" if call.other == 403 else "NotFound")


WRITES = [c for c in CALLS if c.method in ("post", "put", "delete") and c.url.startswith(NS)]


@pytest.mark.parametrize("call", WRITES, ids=[f"{c.method}-{c.url}" for c in WRITES])
def test_a_viewer_cannot_write(call: Call, world: tuple[Cast, int], db: Any) -> None:
    cast, token_id = world
    client = APIClient()
    client.force_authenticate(cast.victor)
    response = request(client, call, token_id)
    assert response.status_code == 403, response.json()


def test_a_viewer_can_read(world: tuple[Cast, int], db: Any) -> None:
    client = APIClient()
    client.force_authenticate(world[0].victor)
    assert client.get(f"{NS}/jobs/train").status_code == 200
    assert [i["metadata"]["name"] for i in client.get("/api/v1/jobs").json()["items"]] == ["train"]


def test_a_member_submits_jobs_but_does_not_manage_queues(world: tuple[Cast, int], db: Any) -> None:
    client = APIClient()
    client.force_authenticate(world[0].bob)
    created = client.post(
        f"{NS}/jobs", data=to_yaml(job_manifest("bobs", queue="qa")).encode(), content_type="application/yaml"
    )
    assert created.status_code == 201, created.json()
    assert client.post("/api/v1/queues/qa/close").status_code == 403
    assert (
        client.post("/api/v1/queues", data=to_yaml(CHILD_QUEUE).encode(), content_type="application/yaml").status_code
        == 403
    )


def test_platform_admin_sees_every_tenant(world: tuple[Cast, int], db: Any) -> None:
    client = APIClient()
    client.force_authenticate(world[0].root)
    names = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in client.get("/api/v1/jobs").json()["items"]}
    assert names == {("team-a", "train"), ("team-b", "b-job")}
