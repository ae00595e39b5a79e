"""Job commands are stored for the runtime and mark the job."""

from __future__ import annotations

from typing import Any

from tests.volcanoweb import builders
from volcanoweb.jobs import services
from volcanoweb.jobs.models import Command


def test_it_stores_a_command_and_bumps_the_job(cast: Any, alice_api: Any) -> None:
    job = builders.make_job("team-a")
    before = job.resource_version
    response = alice_api.post(
        "/api/v1/namespaces/team-a/jobs/train/commands", data={"action": "abort", "reason": "oops"}, format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["kind"], body["action"], body["target"]["name"], body["status"]["consumed"]) == (
        "Command",
        "AbortJob",
        "train",
        False,
    )
    command = Command.objects.get()
    assert (command.job, command.issued_by, command.tenant) == (job, cast.alice, cast.team_a)
    job.refresh_from_db()
    assert job.resource_version > before  # the job's change is a new revision of the log
    listed = alice_api.get("/api/v1/namespaces/team-a/jobs/train/commands").json()
    assert [c["action"] for c in listed["items"]] == ["AbortJob"]
    assert services.consume_command(command.pk, "aborted") is True
    assert services.consume_command(command.pk) is False


def test_it_accepts_every_volcano_action_and_rejects_others(cast: Any, alice_api: Any) -> None:
    builders.make_job("team-a")
    url = "/api/v1/namespaces/team-a/jobs/train/commands"
    for action in ("AbortJob", "resume", "RestartJob", "terminate", "CompleteJob"):
        assert alice_api.post(url, data={"action": action}, format="json").status_code == 201
    bad = alice_api.post(url, data={"action": "SyncJob"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "action"
    assert (
        alice_api.post(
            "/api/v1/namespaces/team-a/jobs/ghost/commands", data={"action": "abort"}, format="json"
        ).status_code
        == 404
    )
