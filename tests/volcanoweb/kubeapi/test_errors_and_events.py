"""Errors kubectl can print (an Invalid error's reason is also a cause) and the field selectors
``kubectl events --for`` sends (``involvedObject.apiVersion``)."""

from __future__ import annotations

import pytest

from tests.volcanoweb import builders
from volcanoweb.jobs.models import Event

pytestmark = pytest.mark.django_db


def test_deleting_a_queue_with_children_names_the_reason_in_a_cause(root_api) -> None:
    builders.make_queue("parent-q")
    builders.make_queue("child-q", parent="parent-q")
    refused = root_api.delete("/apis/scheduling.volcano.sh/v1beta1/queues/parent-q")
    assert refused.status_code == 400
    body = refused.json()
    assert body["reason"] == "Invalid"
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "metadata.name"
    assert cause["message"] == "queue parent-q can not be deleted because it has 1 child queues: child-q"
    default = root_api.delete("/apis/scheduling.volcano.sh/v1beta1/queues/default").json()
    assert default["details"]["causes"][0]["message"] == "`default` queue can not be deleted"


def test_kubectl_events_for_a_job(client_for, cast) -> None:
    job = builders.make_job("team-a", "train")
    Event.objects.create(
        namespace="team-a",
        tenant=job.tenant,
        involved_kind="Job",
        involved_namespace="team-a",
        involved_name="train",
        involved_uid=job.uid,
        type="Normal",
        reason="Scheduled",
        message="hello",
        source="volcano",
    )
    Event.objects.create(
        namespace="team-a",
        tenant=job.tenant,
        involved_kind="PodGroup",
        involved_namespace="team-a",
        involved_name="train",
        type="Normal",
        reason="Other",
        message="not the job",
        source="volcano",
    )
    api = client_for(cast.alice, "token")
    selector = (
        "involvedObject.kind%3DJob%2CinvolvedObject.apiVersion%3Dbatch.volcano.sh%2Fv1alpha1"
        "%2CinvolvedObject.name%3Dtrain"
    )
    listed = api.get(f"/api/v1/namespaces/team-a/events?fieldSelector={selector}&limit=500")
    assert listed.status_code == 200, listed.json()
    items = listed.json()["items"]
    assert [e["reason"] for e in items] == ["Scheduled"]
    assert items[0]["involvedObject"]["apiVersion"] == "batch.volcano.sh/v1alpha1"
    wrong = selector.replace("v1alpha1", "v1")
    assert api.get(f"/api/v1/namespaces/team-a/events?fieldSelector={wrong}").json()["items"] == []
    pg = api.get("/api/v1/namespaces/team-a/events?fieldSelector=involvedObject.kind%3DPodGroup").json()["items"]
    assert pg[0]["involvedObject"]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
