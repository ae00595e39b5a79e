"""A CronJob's page offers Suspend or Resume as its state allows, not both (issue 29, item 10)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.models import CronJob

pytestmark = pytest.mark.django_db


def _cron() -> None:
    task = builders.task("w", 1)
    workflows.apply_cronjob(
        builders.SYSTEM,
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "team-a"},
            "spec": {
                "schedule": "0 3 * * *",
                "jobTemplate": {"spec": {"queue": "team-a-q", "minAvailable": 1, "tasks": [task]}},
            },
        },
        "team-a",
    )


def _offered(client: Any) -> set[str]:
    html = client.get("/cronjobs/team-a/nightly/?fragment=actions").content.decode()
    return set(re.findall(r'name="action" value="(\w+)"', html))


def test_suspend_or_resume_follows_the_state(world: Any, login: Any) -> None:
    _cron()
    client = login(world.cast.alice)
    assert _offered(client) == {"suspend", "run"}
    client.post("/cronjobs/team-a/nightly/action/", {"action": "suspend"}, HTTP_HX_REQUEST="true")
    assert CronJob.objects.get(name="nightly").suspend
    assert _offered(client) == {"resume", "run"}
    page = client.get("/cronjobs/team-a/nightly/").content.decode()
    assert 'id="cron-actions"' in page
