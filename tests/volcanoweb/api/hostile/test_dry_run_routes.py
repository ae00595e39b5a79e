"""Dry runs never write: every write route of the URL configuration (REST API and Kubernetes API), with
``dryRun`` in the query and, for deletes, in the body's ``DeleteOptions`` as kubectl sends it, answers what the
write would answer and leaves the database (the simulated cluster's rows with it), the controllers' on-commit
work and the live channel as they were. Each case is also sent for real, which must change the database, so
a case that writes nothing proves nothing. A new route without a case fails
``test_every_write_route_has_a_case``; a new writable Kubernetes resource without a document fails
``test_every_writable_kubernetes_resource_has_a_document``."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.apps import apps
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.api.test_access import CRON, FLOW, HN, JOB, OBJECTS, PC, POD, QUOTA, TEMPLATE
from tests.volcanoweb.builders import job_manifest, queue_manifest, to_yaml
from tests.volcanoweb.clusters.helpers import make_gang, make_sim
from tests.volcanoweb.conftest import Cast, build_cast, module_data
from volcanoweb.apply import apply_documents
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters import services as cluster_services
from volcanoweb.kubeapi.registry import RESOURCES, KubeResource
from volcanoweb.live import broadcast
from volcanoweb.scheduling import services as scheduling
from volcanoweb.tenancy import services as tenancy_services
from volcanoweb.tenancy.access import SYSTEM

pytestmark = pytest.mark.both_databases

NS = "/api/v1/namespaces/team-a"
MERGE, JSON_PATCH, APPLY = "application/merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml"
DRY_OPTIONS = json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]})
CONFIG = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
#: The kubernetes resources' documents, by plural (the namespaced ones are those of tests/volcanoweb/api/test_access).
KUBE_DOCS: dict[str, dict[str, Any]] = {
    "jobs": JOB,
    "cronjobs": CRON,
    "podgroups": OBJECTS["podgroups"][1],
    "jobflows": FLOW,
    "jobtemplates": TEMPLATE,
    "pods": POD,
    "resourcequotas": QUOTA,
    "priorityclasses": PC,
    "hypernodes": HN,
    "queues": queue_manifest("qa-kube", tenant="team-a"),
}


@dataclass(frozen=True)
class Case:
    """One write: ``writes`` says whether the real request changes the database (else it is refused)."""

    method: str
    url: str
    body: Any = None
    content_type: str = "application/yaml"
    status: tuple[int, ...] = (200, 201)
    writes: bool = True
    options_body: bool = False  # dryRun in the DELETE body (DeleteOptions) instead of the query
    note: str = field(default="", compare=False)

    @property
    def id(self) -> str:
        where = "body" if self.options_body else "query"
        return f"{self.method}-{self.url}-{self.content_type.split('/')[-1]}-{where}"


def _renamed(doc: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["metadata"] = {**out.get("metadata", {}), "name": name}
    return out


def _labelled(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["metadata"] = {**out.get("metadata", {}), "labels": {"dry": "run"}}
    return out


def _kube_base(resource: KubeResource) -> str:
    prefix = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
    return (
        f"{prefix}/namespaces/team-a/{resource.plural}" if resource.info.namespaced else f"{prefix}/{resource.plural}"
    )


def _existing_name(plural: str) -> str:
    return {"priorityclasses": "high", "queues": "qa-patch", "hypernodes": "rack1"}.get(plural) or OBJECTS[plural][0]


def _collection_delete(resource: KubeResource) -> tuple[tuple[int, ...], bool]:
    """(statuses, writes) of a deletecollection: the REST API serves core pods' collection, which has no DELETE."""
    return ((405,), False) if resource.plural == "pods" else ((200,), True)


REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
ACCESS = {
    "apiVersion": "authorization.k8s.io/v1",
    "kind": "SelfSubjectAccessReview",
    "spec": {"resourceAttributes": {"verb": "create", "resource": "jobs", "namespace": "team-a"}},
}
RULES = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "team-a"}}


def kube_cases() -> list[Case]:
    out: list[Case] = []
    for resource in RESOURCES:
        base = _kube_base(resource)
        if resource.plural == "commands":
            command = {
                "apiVersion": "bus.volcano.sh/v1alpha1",
                "kind": "Command",
                "metadata": {"name": "abort-train"},
                "action": "AbortJob",
                "target": {"kind": "Job", "name": "train"},
            }
            out.append(Case("post", base, command, "application/json", (201,)))
            continue
        if resource.apply is None:
            out.append(Case("post", base, {"metadata": {"name": "x"}}, "application/json", (404, 405), writes=False))
            continue
        doc, name = KUBE_DOCS[resource.plural], _existing_name(resource.plural)
        url = f"{base}/{name}"
        new = _renamed(doc, f"{name}-new")
        out += [
            Case("post", base, new, "application/json", (201,)),
            Case("put", url, "CURRENT+LABEL", "application/json", (200,)),
            Case("patch", url, {"metadata": {"labels": {"dry": "run"}}}, MERGE, (200,)),
            Case(
                "patch", url, [{"op": "add", "path": "/metadata/labels", "value": {"dry": "run"}}], JSON_PATCH, (200,)
            ),
            Case("patch", f"{base}/{name}-applied", _renamed(doc, f"{name}-applied"), APPLY, (201,)),
            Case("delete", url, None, "application/json", (200,)),
            Case("delete", url, None, "application/json", (200,), options_body=True),
            Case("delete", f"{base}?labelSelector=sweep%3Dme", None, "application/json", *_collection_delete(resource)),
            Case("put", f"{url}/status", "CURRENT+LABEL", "application/json", (405,), writes=False),
        ]
    core = "/api/v1/namespaces"
    out += [
        Case("post", core, {"metadata": {"name": "x"}}, "application/json", (405,), writes=False),
        Case("delete", f"{core}/team-a", None, "application/json", (405,), writes=False),
        Case("post", f"{NS}/events", {"metadata": {"name": "e"}}, "application/json", (405,), writes=False),
        Case("delete", f"{NS}/events/e", None, "application/json", (404, 405), writes=False),
        Case("post", f"{NS}/pods/solo/binding", {"target": {"name": "cpu-0"}}, "application/json", (405,), False),
        Case("post", "/api/v1/pods", {"metadata": {"name": "x"}}, "application/json", (405,), writes=False),
        Case("post", "/api/v1/events", {"metadata": {"name": "x"}}, "application/json", (405,), writes=False),
        Case("post", "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs/train/status", {}, MERGE, (405,), False),
        Case("post", "/apis/scheduling.volcano.sh/v1beta1/queues/qa/status", {}, MERGE, (405,), writes=False),
        Case("post", "/api/v1/kubeconfig?name=dry", None, "application/json", (201,)),
        # Issue 27's read-only and review routes: a write verb answers 405 (or a review, stored nowhere, 201).
        Case("post", f"{NS}/pods/solo/log", {}, "application/json", (404, 405), writes=False),
        Case("delete", f"{NS}/services/kubernetes", None, "application/json", (404, 405), writes=False),
        Case("post", "/api/v1/services", {"metadata": {"name": "x"}}, "application/json", (405,), writes=False),
        Case("patch", "/api/v1/nodes/cpu-1", {}, MERGE, (405,), writes=False),
        Case("post", "/apis/authentication.k8s.io/v1/selfsubjectreviews", REVIEW, "application/json", (201,), False),
        Case(
            "post", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ACCESS, "application/json", (201,), False
        ),
        Case("post", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", RULES, "application/json", (201,), False),
    ]
    return out


def rest_cases() -> list[Case]:
    out = [
        Case("post", "/api/v1/apply?namespace=team-a", job_manifest("applied", queue="qa")),
        Case("post", "/api/v1/simulate?namespace=team-a", job_manifest("sim", queue="qa"), writes=False),
        Case("post", "/api/v1/nodes/cpu-1/fail"),
        Case("post", "/api/v1/nodes/cpu-2/recover"),
        Case("post", "/api/v1/nodes/cpu-1/cordon"),
        Case("post", "/api/v1/nodes/cpu-3/uncordon"),
        Case("post", f"{NS}/pods/g-0/exit", {"exitCode": 1}, "application/json"),
        Case("post", f"{NS}/pods/g-0/evict"),
        Case("post", "/api/v1/queues", queue_manifest("qa-rest")),
        Case("put", "/api/v1/queues/qa", queue_manifest("qa", tenant="team-a", weight=3)),
        Case("delete", "/api/v1/queues/qa-spare"),
        Case("delete", "/api/v1/queues/qa-spare", options_body=True),
        Case("post", "/api/v1/queues/qa-closed/open"),
        Case("post", "/api/v1/queues/qa/close"),
        Case("post", "/api/v1/priorityclasses", {**PC, "metadata": {"name": "low"}}),
        Case("put", "/api/v1/priorityclasses/high", {**PC, "description": "changed"}),
        Case("delete", "/api/v1/priorityclasses/high"),
        Case("post", "/api/v1/hypernodes", {**HN, "metadata": {"name": "rack2"}}),
        Case("put", "/api/v1/hypernodes/rack1", {**HN, "spec": {**HN["spec"], "tier": 2}}),
        Case("delete", "/api/v1/hypernodes/rack1"),
        Case("put", "/api/v1/scheduler-config", CONFIG, "text/plain"),
        Case("post", "/api/v1/scheduler-config/versions/1/activate"),
        Case("post", "/api/v1/tokens", {"name": "minted"}, "application/json", (201,)),
        Case("delete", "/api/v1/tokens/{root_token}"),
        Case("post", f"{NS}/jobs/train/commands", {"action": "abort"}, "application/json", (201,)),
        Case("post", f"{NS}/cronjobs/nightly/suspend"),
        Case("post", f"{NS}/cronjobs/paused/resume"),
        Case("post", f"{NS}/cronjobs/nightly/run"),
    ]
    for plural, (name, doc) in OBJECTS.items():
        out += [
            Case("post", f"{NS}/{plural}", _renamed(doc, f"{name}-rest"), status=(201,)),
            Case(
                "put",
                f"{NS}/{plural}/{name}",
                _labelled({**doc, "metadata": {**doc["metadata"], "namespace": "team-a"}}),
            ),
            Case("delete", f"{NS}/{plural}/{name}"),
            Case("delete", f"{NS}/{plural}/{name}", options_body=True),
        ]
    for path in ("/api/v1/no-such-thing", "/apis/no.such/v1/things", "/api/v2/pods"):
        out += [Case(method, path, None, status=(404,), writes=False) for method in ("post", "put", "patch", "delete")]
    return out


CASES = kube_cases() + rest_cases()


@pytest.fixture(scope="module")
def world(django_db_setup: Any, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """One object of every kind, a simulated cluster with a running bare pod, two configuration versions."""
    with module_data(django_db_blocker):
        backend, _clock = make_sim()
        previous = backend_module.set_backend(backend)
        cast = build_cast()
        for name in ("qa", "qa-spare", "qa-patch"):
            builders.make_queue(name, tenant="team-a")
        builders.make_queue("qa-closed", tenant="team-a")
        from volcanoweb.queues import services as queue_services

        queue_services.close_queue(SYSTEM, "qa-closed")
        paused = _renamed(CRON, "paused")
        paused["spec"] = {**paused["spec"], "suspend": True}
        docs = [PC, HN, *(body for _, body in OBJECTS.values()), paused]
        apply_documents(SYSTEM, docs, default_namespace="team-a")
        swept = []
        for resource in RESOURCES:
            if resource.apply is not None:
                doc = _renamed(KUBE_DOCS[resource.plural], f"swept-{resource.singular}")
                doc["metadata"]["labels"] = {"sweep": "me"}
                swept.append(doc)
        apply_documents(SYSTEM, swept, default_namespace="team-a")
        cluster_services.sync_from_backend(backend)
        make_gang("g", 1, tenant=cast.team_a)
        cluster_services.sync_from_backend(backend)
        backend.bind("team-a", "g-0", "cpu-0")
        backend.tick()
        backend.fail_node("cpu-2")
        backend.cordon("cpu-3")
        cluster_services.sync_from_backend(backend)
        scheduling.save_config(SYSTEM, CONFIG.replace("gang", "conformance"))
        scheduling.save_config(SYSTEM, CONFIG.replace("priority", "drf"))
        token, _ = tenancy_services.create_token(cast.root, "root")
        yield {"cast": cast, "root_token": token.pk}
        backend_module.set_backend(previous)


def _tables() -> list[tuple[str, str, str]]:
    """(model label, quoted table, quoted primary-key column) of every model's table."""
    quote = connection.ops.quote_name
    return [(m._meta.label, quote(m._meta.db_table), quote(m._meta.pk.column)) for m in apps.get_models()]


def fingerprint() -> dict[str, Any]:
    """Every row of every table (the world is small), read raw rather than through the ORM: one statement on
    PostgreSQL (a digest of each table's rows in key order), one per table on SQLite (the rows)."""
    tables = _tables()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                " UNION ALL ".join(
                    f"SELECT %s, md5(coalesce(string_agg(t::text, ',' ORDER BY t.{pk}), '')) FROM {table} t"
                    for _, table, pk in tables
                ),
                [label for label, _, _ in tables],
            )
            return dict(cursor.fetchall())
        rows = {}
        for label, table, pk in tables:
            cursor.execute(f"SELECT * FROM {table} ORDER BY {pk}")
            rows[label] = cursor.fetchall()
        return rows


def send(client: APIClient, case: Case, world: dict[str, Any], *, dry: bool) -> Any:
    url = case.url.replace("{root_token}", str(world["root_token"]))
    body = case.body
    if body == "CURRENT+LABEL":
        current = client.get(url.removesuffix("/status")).json()
        body = _labelled(current)
    if dry and not case.options_body:
        url += ("&" if "?" in url else "?") + "dryRun=All"
    if case.method == "delete":
        data = DRY_OPTIONS if dry and case.options_body else (json.dumps(body) if body is not None else None)
        return client.delete(url, data=data, content_type="application/json")
    if body is None:
        return getattr(client, case.method)(url)
    if isinstance(body, str):
        data = body.encode()
    elif case.content_type in ("application/yaml", APPLY):
        data = to_yaml(body).encode()
    else:
        data = json.dumps(body).encode()
    if case.content_type == APPLY:
        url += ("&" if "?" in url else "?") + "fieldManager=tests"
    return getattr(client, case.method)(url, data=data, content_type=case.content_type)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_dry_run_changes_nothing(
    case: Case, world: dict[str, Any], db: Any, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    cast: Cast = world["cast"]
    client = APIClient()
    client.force_authenticate(cast.root)
    sent: list[Any] = []
    monkeypatch.setattr(broadcast, "send_many", lambda messages, committed=None: sent.extend(messages))
    before, pending = fingerprint(), broadcast.pending_snapshot()  # the world's own messages wait (never committed)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        dry = send(client, case, world, dry=True)
    assert dry.status_code in case.status, dry.content
    after = fingerprint()
    changed = sorted(label for label in before if before[label] != after[label])
    assert changed == [], f"a dry run changed {changed}"
    assert callbacks == []
    assert broadcast.pending_snapshot() == pending
    assert sent == []
    real = send(client, case, world, dry=False)
    assert real.status_code in case.status, real.content
    if case.writes:
        assert fingerprint() != after, "the real request wrote nothing: the case proves nothing"
    else:
        assert fingerprint() == after


def _write_routes(patterns: list[Any], prefix: str = "") -> set[str]:
    routes: set[str] = set()
    for item in patterns:
        if isinstance(item, URLResolver):
            routes |= _write_routes(item.url_patterns, prefix + str(item.pattern))
        elif isinstance(item, URLPattern):
            route = prefix + str(item.pattern)
            if not route.lstrip("^").startswith("api"):
                continue  # the dashboard, the admin, login: not the APIs
            view = getattr(item.callback, "view_class", None)
            if view is None or any(hasattr(view, verb) for verb in ("post", "put", "patch", "delete")):
                routes.add(route)
    return routes


def test_every_write_route_has_a_case() -> None:
    covered = {resolve(urlsplit(case.url).path.replace("{root_token}", "1")).route for case in CASES}
    missing = _write_routes(get_resolver().url_patterns) - covered
    assert not missing, f"write routes without a dry-run case: {sorted(missing)}"


def test_every_writable_kubernetes_resource_has_a_document() -> None:
    writable = {r.plural for r in RESOURCES if r.apply is not None}
    assert writable <= set(KUBE_DOCS), sorted(writable - set(KUBE_DOCS))
