"""PodGroup status as Volcano's scheduler fills it: running, succeeded and failed (absent at zero), so the
RUNNINGS column of ``kubectl get pg`` shows the running pods."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.volcanoweb.dashboard.test_events import _running
from volcanoweb.jobs.models import Pod, PodGroup

pytestmark = pytest.mark.django_db
URL = "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-a/podgroups"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_the_counts_follow_the_pods(sim_backend, client_for, cast) -> None:
    job = _running("counted")
    group = PodGroup.objects.get(job=job)
    pods = list(Pod.objects.filter(job=job).order_by("name"))
    assert len(pods) == 2
    assert all(p.podgroup_id == group.pk for p in pods)
    api = client_for(cast.alice, "token")
    status = api.get(f"{URL}/{group.name}").json()["status"]
    assert status["running"] == 2
    assert "succeeded" not in status
    assert "failed" not in status
    Pod.objects.filter(pk=pods[0].pk).update(phase="Succeeded")
    Pod.objects.filter(pk=pods[1].pk).update(phase="Failed")
    status = api.get(f"{URL}/{group.name}").json()["status"]
    assert (status.get("running"), status["succeeded"], status["failed"]) == (None, 1, 1)
    Pod.objects.filter(pk=pods[1].pk).update(phase="Running")
    table = api.get(URL, HTTP_ACCEPT=TABLE).json()
    names = [c["name"] for c in table["columnDefinitions"]]
    row = next(r["cells"] for r in table["rows"] if r["cells"][0] == group.name)
    assert row[names.index("Runnings")] == 1


def test_a_list_counts_in_one_query(sim_backend, client_for, cast) -> None:
    for name in ("one", "two", "three"):
        _running(name)
    api = client_for(cast.alice, "token")
    api.get(URL)  # warm the caches (authentication, tenants)
    with CaptureQueriesContext(connection) as few:
        listed = api.get(URL).json()
    assert [i["status"]["running"] for i in listed["items"]] == [2, 2, 2]
    assert sum("jobs_pod" in q["sql"] for q in few.captured_queries) <= 1
