"""Invalid CronJobs and JobFlows sent to ``POST /api/v1/apply`` get 400s naming the field."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from volcanoweb.workflows.models import CronJob, JobFlow

from .conftest import cookbook_14

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(namespace: object) -> APIClient:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    api = APIClient()
    api.force_authenticate(user=user)
    return api


def apply(client: APIClient, doc: dict[str, Any]) -> Any:
    return client.post("/api/v1/apply?namespace=reports", yaml.safe_dump(doc), content_type="application/yaml")


def causes(response: Any) -> list[tuple[str, str]]:
    body = response.json()
    return [(c["field"], c["message"]) for c in body.get("details", {}).get("causes", [])]


def cronjob_with(**spec: Any) -> dict[str, Any]:
    doc = cookbook_14()
    doc["spec"].update(spec)
    return doc


def test_cookbook_14_is_accepted(client: APIClient) -> None:
    response = apply(client, cookbook_14())
    assert response.status_code == 200, response.content
    assert CronJob.objects.filter(name="daily-report").exists()


@pytest.mark.parametrize(
    ("spec", "field", "fragment"),
    [
        ({"schedule": "0 2 * *"}, "spec.schedule", "schedule is not a valid cron expression"),
        ({"schedule": "61 2 * * *"}, "spec.schedule", "schedule is not a valid cron expression"),
        ({"schedule": "TZ=Europe/Riga 0 2 * * *"}, "spec.schedule", "TZ should only be set in the timeZone field"),
        ({"schedule": ""}, "spec.schedule", "schedule is required"),
        ({"timeZone": "Mars/Olympus_Mons"}, "spec.timeZone", "invalid timeZone"),
        ({"timeZone": "Local"}, "spec.timeZone", "timeZone can't be Local"),
        ({"timeZone": ""}, "spec.timeZone", "timeZone must be nil or non-empty string"),
        ({"concurrencyPolicy": "Sometimes"}, "spec.concurrencyPolicy", ""),
        ({"startingDeadlineSeconds": -5}, "spec.startingDeadlineSeconds", ""),
    ],
)
def test_invalid_cronjob_is_a_400_naming_the_field(
    client: APIClient, spec: dict[str, Any], field: str, fragment: str
) -> None:
    response = apply(client, cronjob_with(**spec))
    assert response.status_code == 400, response.content
    found = causes(response)
    assert any(f == field and fragment in m for f, m in found), found
    assert not CronJob.objects.exists()


def jobflow(flows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "bad"},
        "spec": {"flows": flows},
    }


@pytest.mark.parametrize(
    ("flows", "fragment"),
    [
        ([{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["ghost"]}}], "vertex is not defined: ghost"),
        ([{"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}}], "not DAG"),
        ([{"name": "a", "dependsOn": {"targets": ["a"]}}], "not DAG"),
    ],
)
def test_invalid_jobflow_is_a_400_naming_the_field(
    client: APIClient, flows: list[dict[str, Any]], fragment: str
) -> None:
    response = apply(client, jobflow(flows))
    assert response.status_code == 400, response.content
    found = causes(response)
    assert any(f.startswith("spec.flows") and fragment in m for f, m in found), found
    assert not JobFlow.objects.exists()


def test_duplicate_flow_names_are_a_400(client: APIClient) -> None:
    response = apply(client, jobflow([{"name": "a"}, {"name": "a"}]))
    assert response.status_code == 400, response.content
    assert any(f.startswith("spec.flows") and "uplicate" in m for f, m in causes(response))
