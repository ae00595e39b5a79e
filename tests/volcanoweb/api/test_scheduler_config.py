"""The scheduler configuration: validated versions, the active one, activation."""

from __future__ import annotations

from typing import Any

from volcanoweb.scheduling.models import SchedulerProfile

CONF = b"actions: enqueue, allocate, backfill\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"


def test_get_returns_the_built_in_default_before_any_version(cast: Any, alice_api: Any) -> None:
    body = alice_api.get("/api/v1/scheduler-config").json()
    assert body["builtin"] is True
    assert "actions" in body["yaml"]


def test_put_stores_validated_versions_and_activate_switches(cast: Any, root_api: Any) -> None:
    first = root_api.put("/api/v1/scheduler-config?comment=first", data=CONF, content_type="application/yaml")
    assert first.status_code == 200
    assert first.json()["version"] == 1
    assert first.json()["result"] == "created"
    second = root_api.put(
        "/api/v1/scheduler-config", data=CONF.replace(b"backfill", b"preempt"), content_type="application/yaml"
    )
    assert second.json()["version"] == 2
    same = root_api.put(
        "/api/v1/scheduler-config", data=CONF.replace(b"backfill", b"preempt"), content_type="application/yaml"
    )
    assert same.json()["result"] == "unchanged"
    assert [v["version"] for v in root_api.get("/api/v1/scheduler-config/versions").json()["items"]] == [2, 1]
    assert root_api.post("/api/v1/scheduler-config/versions/1/activate").json()["active"] is True
    assert SchedulerProfile.objects.get(active=True).version == 1


def test_an_invalid_configuration_names_the_path(cast: Any, root_api: Any) -> None:
    response = root_api.put(
        "/api/v1/scheduler-config", data=b"actions: enqueue, fly\n", content_type="application/yaml"
    )
    assert response.status_code == 400
    cause = response.json()["details"]["causes"][0]
    assert cause["field"].startswith("actions")
    assert "fly" in cause["message"]
    assert not SchedulerProfile.objects.exists()


def test_only_platform_admins_change_it(cast: Any, alice_api: Any) -> None:
    response = alice_api.put("/api/v1/scheduler-config", data=CONF, content_type="application/yaml")
    assert (response.status_code, response.json()["reason"]) == (403, "Forbidden")
