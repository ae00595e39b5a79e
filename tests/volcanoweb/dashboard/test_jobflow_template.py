"""The Submit page's JobFlow template (three JobTemplates and the flow) applies, and the flow's page has a live
phase fragment (issue 29, item 7)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.workflows.models import JobFlow, JobTemplate

pytestmark = pytest.mark.django_db


def test_the_jobflow_template_is_offered_and_applies(cast: Any, login: Any) -> None:
    builders.make_queue("data-processing", tenant="team-a")
    client = login(cast.alice)
    assert "15-jobflow-etl.yaml" in client.get("/submit/").content.decode()
    text = client.get("/submit/templates/15-jobflow-etl.yaml").content.decode()
    assert "kind: JobFlow" in text
    response = client.post("/submit/apply/", {"manifest": text, "namespace": "team-a"})
    assert response.status_code == 200, response.content.decode()[:400]
    assert set(JobTemplate.objects.filter(namespace="team-a").values_list("name", flat=True)) == {
        "etl-extract",
        "etl-transform",
        "etl-load",
    }
    flow = JobFlow.objects.get(namespace="team-a", name="etl")
    page = client.get("/jobflows/team-a/etl/").content.decode()
    assert 'id="flow-phase"' in page
    assert 'data-live="job jobflow"' in page
    fragment = client.get("/jobflows/team-a/etl/?fragment=phase").content.decode()
    assert f"data-flow-phase>{flow.phase}<" in fragment
    assert "<html" not in fragment
