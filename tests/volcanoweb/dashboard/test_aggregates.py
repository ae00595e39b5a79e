"""Σ pod requests in SQL: same numbers as adding up in Python, constant query counts, tenant scoping kept."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.test.utils import CaptureQueriesContext

from volcanoweb.dashboard import cluster, queries
from volcanoweb.dashboard.aggregates import PodSums, request_sums, sums_in_python
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.queues.models import Queue
from volcanoweb.tenancy.models import Tenant

pytestmark = pytest.mark.django_db
GIB = 1024**3


def add_pods(
    namespace: str, queue: str, count: int, *, node: str = "node-0", phase: str = "Running", **requests: Any
) -> None:
    """Create ``count`` pods of one PodGroup in ``queue`` (``node=""``: not bound)."""
    tenant = Tenant.objects.filter(namespaces__name=namespace).first()
    group = PodGroup.objects.create(
        name=f"{queue}-{namespace}-{PodGroup.objects.count()}", namespace=namespace, tenant=tenant, queue_name=queue
    )
    start = Pod.objects.count()
    Pod.objects.bulk_create(
        Pod(
            name=f"p-{start + i}",
            namespace=namespace,
            tenant=tenant,
            podgroup=group,
            group_name=group.name,
            phase=phase,
            node_name=node,
            requests=requests or {"cpu": 1000, "memory": 2 * GIB, "pods": 1},
        )
        for i in range(count)
    )


def odd_pods() -> None:
    """Pods whose requests mix integers, floats, strings, booleans, nested values and extended resources."""
    add_pods("team-a", "team-a-q", 2, cpu=500, memory=GIB)
    add_pods("team-a", "team-a-q", 1, node="", cpu=250.5, **{"nvidia.com/gpu": 2})
    add_pods("team-b", "team-b-q", 3, node="node-1", cpu="2", memory=True, other={"x": 1})
    add_pods("team-b", "team-b-q", 1, node="node-1", phase="Succeeded", cpu=9000)
    Pod.objects.create(name="bare", namespace="team-b", phase="Running", node_name="node-2", requests={})
    Pod.objects.create(name="list", namespace="team-b", phase="Running", node_name="node-2", requests=[1, 2])


def _bound() -> ExpressionWrapper:
    return ExpressionWrapper(~Q(node_name=""), output_field=BooleanField())


@pytest.mark.parametrize(
    "group",
    [(), ("node_name",), ("namespace", "tenant_id", "bound"), ("podgroup__queue_name", "bound")],
)
def test_sql_sums_equal_the_python_sums(world: Any, group: tuple[str, ...]) -> None:
    odd_pods()
    pods = Pod.objects.filter(phase__in=("Pending", "Running")).annotate(bound=_bound())
    if "podgroup__queue_name" in group:
        pods = pods.filter(podgroup__isnull=False)
    expected = sums_in_python(pods.order_by().values_list(*group, "requests"))
    got = request_sums(pods, *group)
    assert got == expected
    assert got  # not trivially empty
    if group == ("node_name",):
        assert got[("node-0",)] == PodSums(2, {"cpu": 1000.0, "memory": 2.0 * GIB})
        assert got[("node-1",)] == PodSums(3, {})  # strings, booleans and objects are not amounts
        assert got[("node-2",)] == PodSums(2, {})


def expands_json(sql: str) -> bool:
    """Whether a statement expands JSON objects in SQL: jsonb_each (PostgreSQL) or json_each (SQLite)."""
    return re.search(r"\bjsonb?_each\(", sql) is not None


def test_both_backends_sum_in_sql(world: Any) -> None:
    odd_pods()
    with CaptureQueriesContext(connection) as ctx:
        got = request_sums(Pod.objects.all(), "node_name")
    assert len(ctx.captured_queries) == 1
    assert expands_json(ctx.captured_queries[0]["sql"]) == (connection.vendor in ("postgresql", "sqlite"))
    assert got[("node-0",)].requests["cpu"] == 1000.0


def test_the_python_fallback_is_used_on_other_databases(world: Any, monkeypatch: Any) -> None:
    odd_pods()
    sql = request_sums(Pod.objects.all(), "node_name")
    monkeypatch.setattr(connection, "vendor", "mysql")
    with CaptureQueriesContext(connection) as ctx:
        assert request_sums(Pod.objects.all(), "node_name") == sql
    assert not expands_json(ctx.captured_queries[0]["sql"])


def test_empty_querysets(world: Any) -> None:
    assert request_sums(Pod.objects.none(), "node_name") == {}
    assert request_sums(Pod.objects.filter(name="nothing")) == {}
    assert cluster.allocated_total() == {}


def test_nodes_overview_and_queues_show_the_sums(world: Any, login: Any) -> None:
    add_pods("team-a", "team-a-q", 3, node="node-0")
    add_pods("team-a", "team-a-q", 2, node="", phase="Pending")
    add_pods("team-b", "team-b-q", 4, node="node-1", cpu=2000, memory=GIB)
    add_pods("team-b", "team-b-q", 5, node="node-1", phase="Failed")  # finished: holds nothing
    nodes = {n.name: n for n in cluster.list_nodes()}
    assert (nodes["node-0"].pods, nodes["node-0"].allocated["cpu"]) == (3, 3000.0)
    assert (nodes["node-1"].pods, nodes["node-1"].allocated["cpu"]) == (4, 8000.0)
    assert nodes["node-2"].pods == 0
    assert cluster.allocated_total()["cpu"] == 11000.0
    assert cluster.capacity_and_allocated() == cluster.totals(list(nodes.values()))
    allocated, requested = queries.demand_by_queue()
    assert allocated["team-a-q"]["cpu"] == 3000.0
    assert requested["team-a-q"]["cpu"] == 5000.0
    assert allocated["team-b-q"] == requested["team-b-q"] == {"cpu": 8000.0, "memory": 4.0 * GIB}
    html = login(world.cast.root).get("/nodes/").content.decode()
    assert re.search(r"node-1</h2>.*?4 pods", html, re.S)
    overview = login(world.cast.root).get("/").content.decode()
    assert "11 / 48" in overview  # CPU cores allocated of the 3 nodes' capacity


def _count(client: Any, url: str) -> int:
    """Return the page's query count; no query loads pod requests to add them up in Python."""
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    for query in ctx.captured_queries:
        sql = query["sql"]
        if '"jobs_pod"."requests"' in sql:
            assert expands_json(sql) or "LIMIT" in sql, sql  # summed in SQL, or a bounded list
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    ("url", "most"),
    [
        # each whole page + 1: the change log's revision its socket starts from (dashboard.middleware)
        ("/", 14),
        ("/queues/", 9),
        ("/nodes/", 7),  # + the HyperNodes of the topology tree (one query)
        ("/jobs/team-a/train-a/", 17),  # the waiting command (actions by phase) and the resource holders
        ("/queues/team-a-q/usage/", 7),
    ],
)
def test_query_counts_do_not_grow_with_pods_or_nodes(world: Any, login: Any, url: str, most: int) -> None:
    client = login(world.cast.alice)
    add_pods("team-a", "team-a-q", 2)
    add_pods("team-b", "team-b-q", 1, node="node-1", cpu=48_000)  # the cluster is full before and after
    before = _count(client, url)
    for node in range(6):
        add_pods("team-a", "team-a-q", 20, node=f"node-{node}")
        add_pods("team-b", "team-b-q", 20, node=f"extra-{node}", cpu=3000)
        add_pods("team-b", "team-b-q", 10, node="", phase="Pending")
    assert _count(client, url) == before <= most


def test_queue_usage_folds_other_tenants(world: Any, login: Any) -> None:
    Queue.objects.filter(name="team-a-q").update(tenant=None)  # shared for this test
    add_pods("team-a", "team-a-q", 2, node="node-0")
    add_pods("team-b", "team-a-q", 3, node="node-1", cpu=2000)
    add_pods("team-b", "team-a-q", 1, node="", phase="Pending")
    queue = Queue.objects.get(name="team-a-q")
    lines = {line["namespace"]: line for line in queries.queue_usage(_scope(world.cast.alice), queue)["lines"]}
    assert set(lines) == {"team-a", "other tenants"}
    assert (lines["team-a"]["running"], lines["team-a"]["allocated"]["cpu"]) == (2, 2000.0)
    other = lines["other tenants"]
    assert (other["running"], other["pending"], other["allocated"]["cpu"]) == (3, 1, 6000.0)
    html = login(world.cast.alice).get("/queues/team-a-q/usage/").content.decode()
    assert "team-b" not in html
    assert "other tenants" in html
    everyone = queries.queue_usage(_scope(world.cast.root), queue)["lines"]
    assert [line["namespace"] for line in everyone] == ["team-b", "team-a"]  # most CPU first


def _scope(user: Any) -> Any:
    from volcanoweb.dashboard.scope import Scope
    from volcanoweb.tenancy.access import access_for

    return Scope(access=access_for(user))


def test_the_what_if_preview_sums_the_pods_once(world: Any, login: Any) -> None:
    add_pods("team-a", "team-a-q", 4, node="node-0")
    client = login(world.cast.root)  # team-a-q's share is a platform admin's to change (ADR 0025)
    with CaptureQueriesContext(connection) as ctx:
        response = client.post("/queues/team-a-q/preview/", {"weight": "6", "capability_cpu": "32"})
    assert response.status_code == 200
    assert 'class="changed"' in response.content.decode()
    assert sum(expands_json(q["sql"]) for q in ctx.captured_queries) == 1
    assert sum('FROM "clusters_node"' in q["sql"] for q in ctx.captured_queries) == 1


def test_why_pending_shows_the_warnings_about_the_job_and_its_podgroup(world: Any, login: Any) -> None:
    from volcanoweb.jobs.models import Event, EventType

    job = world.job_a
    group = PodGroup.objects.get(job=job)
    about = [
        ("Job", job.name, "quota warning for the job"),
        ("PodGroup", group.name, "gang warning for the group"),
        ("CronJob", job.name, "a cronjob of the same name"),  # not about this job
    ]
    for kind, name, message in about:
        Event.objects.create(
            namespace=job.namespace,
            tenant=job.tenant,
            involved_kind=kind,
            involved_namespace=job.namespace,
            involved_name=name,
            type=EventType.WARNING,
            reason="Test",
            message=message,
        )
    html = login(world.cast.alice).get(f"/jobs/{job.namespace}/{job.name}/").content.decode()
    panel = html[html.index('id="why-h"') :]
    panel = panel[: panel.index("</section>")]
    assert "quota warning for the job" in panel
    assert "gang warning for the group" in panel
    assert "a cronjob of the same name" not in panel
