"""Commands (bus.volcano.sh/v1alpha1) as on Volcano: the client's name is kept (generated only for
generateName), a pending Command can be deleted, and one the controller has acted on is gone."""

from __future__ import annotations

import json

import pytest

from tests.volcanoweb import builders
from volcanoweb.jobs import services as jobs
from volcanoweb.jobs.models import Command

pytestmark = pytest.mark.django_db

URL = "/apis/bus.volcano.sh/v1alpha1/namespaces/team-a/commands"


def _command(**meta: str) -> dict:
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": meta,
        "action": "RestartJob",
        "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train"},
    }


def _post(api, doc: dict, query: str = ""):
    return api.post(URL + query, data=json.dumps(doc), content_type="application/json")


@pytest.fixture
def api(client_for, cast):
    builders.make_job("team-a", "train")
    return client_for(cast.alice, "token")


def test_the_clients_name_is_kept(api) -> None:
    created = _post(api, _command(name="restart-resnet"))
    assert created.status_code == 201, created.json()
    assert created.json()["metadata"]["name"] == "restart-resnet"
    got = api.get(f"{URL}/restart-resnet")
    assert got.status_code == 200
    assert got.json()["action"] == "RestartJob"
    assert [i["metadata"]["name"] for i in api.get(URL).json()["items"]] == ["restart-resnet"]
    again = _post(api, _command(name="restart-resnet"))
    assert again.status_code == 409
    assert again.json()["reason"] == "AlreadyExists"


def test_generate_name_and_a_missing_or_bad_name(api) -> None:
    generated = _post(api, _command(generateName="restart-"))
    assert generated.status_code == 201
    name = generated.json()["metadata"]["name"]
    assert name.startswith("restart-")
    assert len(name) == len("restart-") + 5
    missing = _post(api, _command())
    assert missing.status_code == 400
    assert missing.json()["reason"] == "Invalid"
    assert missing.json()["details"]["causes"][0]["field"] == "metadata.name"
    bad = _post(api, _command(name="Not_A_Name"))
    assert bad.status_code == 400
    assert not Command.objects.filter(name="Not_A_Name").exists()
    dry = _post(api, _command(name="dry-one"), "?dryRun=All")
    assert dry.status_code == 201
    assert not Command.objects.filter(name="dry-one").exists()


def test_a_pending_command_can_be_deleted_and_a_consumed_one_is_gone(api, client_for, cast) -> None:
    assert _post(api, _command(name="first")).status_code == 201
    deleted = api.delete(f"{URL}/first")
    assert deleted.status_code == 200, deleted.json()
    assert deleted.json()["status"] == "Success"
    assert not Command.objects.filter(name="first").exists()
    assert api.get(f"{URL}/first").status_code == 404
    assert api.delete(f"{URL}/first").status_code == 404

    assert _post(api, _command(name="second")).status_code == 201
    command = Command.objects.get(name="second")
    assert jobs.consume_command(command.pk, "executed RestartJob")
    assert api.get(f"{URL}/second").status_code == 404  # acted on: deleted, as Volcano's controller does
    assert api.get(URL).json()["items"] == []
    assert Command.objects.filter(name="second").exists()  # kept as the job's command history (REST API)
    history = api.get("/api/v1/namespaces/team-a/jobs/train/commands").json()["items"]
    assert [c["metadata"]["name"] for c in history] == ["second"]
    # The name is free again once the command was consumed.
    assert _post(api, _command(name="second")).status_code == 201
    # Another tenant cannot delete it.
    assert client_for(cast.charlie, "token").delete(f"{URL}/second").status_code == 403
    collection = api.delete(URL)  # deletecollection
    assert collection.status_code == 200, collection.json()["message"]
    assert api.get(URL).json()["items"] == []


def test_discovery_and_openapi_announce_delete(api) -> None:
    resources = {r["name"]: r for r in api.get("/apis/bus.volcano.sh/v1alpha1").json()["resources"]}
    assert "delete" in resources["commands"]["verbs"]
    root = api.get("/openapi/v3").json()["paths"]["apis/bus.volcano.sh/v1alpha1"]["serverRelativeURL"]
    item = api.get(root).json()["paths"]["/apis/bus.volcano.sh/v1alpha1/namespaces/{namespace}/commands/{name}"]
    assert "delete" in item
    assert "patch" not in item  # Commands are never changed
