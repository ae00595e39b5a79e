"""Authentication (session, Bearer tokens, create_token), whoami, and Status bodies for every error."""

from __future__ import annotations

from io import StringIO
from typing import Any

from django.core.management import call_command
from rest_framework.test import APIClient

from volcanoweb.tenancy.models import ApiToken


def test_whoami_over_session_and_token(cast: Any, client_for: Any) -> None:
    for auth in ("session", "token"):
        body = client_for(cast.alice, auth).get("/api/v1/whoami").json()
        assert body["username"] == "alice"
        assert body["authentication"] == auth
        assert body["tenants"] == [{"name": "team-a", "role": "tenant-admin", "namespaces": ["team-a"]}]
        assert body["defaultNamespace"] == "team-a"
        assert body["platformAdmin"] is False
    assert client_for(cast.root).get("/api/v1/whoami").json()["platformAdmin"] is True


def test_create_token_command_prints_a_working_token(cast: Any) -> None:
    out = StringIO()
    call_command("create_token", "bob", stdout=out)
    raw = out.getvalue().strip()
    assert raw.startswith("vw_")
    assert not ApiToken.objects.filter(token_hash=raw).exists()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/whoami").json()["username"] == "bob"


def test_tokens_are_created_listed_and_revoked_through_the_api(cast: Any, alice_api: Any) -> None:
    created = alice_api.post("/api/v1/tokens", data={"name": "ci"}, format="json").json()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created['token']}")
    assert client.get("/api/v1/whoami").status_code == 200
    listed = alice_api.get("/api/v1/tokens").json()["items"]
    assert [t["name"] for t in listed] == ["ci"]
    assert "token" not in listed[0]
    assert alice_api.delete(f"/api/v1/tokens/{created['id']}").json()["revoked"] is True
    refused = client.get("/api/v1/whoami")
    assert (refused.status_code, refused.json()["reason"]) == (401, "Unauthorized")


def test_a_bad_token_is_401(db: Any) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer nope")
    response = client.get("/api/v1/jobs")
    assert response.status_code == 401
    assert response.json()["message"] == "Invalid or expired bearer token."


def test_method_media_type_and_unknown_paths_get_status_bodies(cast: Any, alice_api: Any) -> None:
    not_allowed = alice_api.patch("/api/v1/queues/default", data={}, format="json")
    assert (not_allowed.status_code, not_allowed.json()["reason"]) == (405, "MethodNotAllowed")
    unsupported = alice_api.post("/api/v1/apply", data=b"x", content_type="application/xml")
    assert (unsupported.status_code, unsupported.json()["reason"]) == (415, "UnsupportedMediaType")
    unknown = alice_api.get("/api/v1/nothing/here")
    assert (unknown.status_code, unknown.json()["kind"], unknown.json()["reason"]) == (404, "Status", "NotFound")


def test_a_write_that_loses_a_race_is_a_409_status() -> None:
    from django.db import IntegrityError

    from volcanoweb.api.errors import exception_handler

    response = exception_handler(IntegrityError("duplicate key value violates unique constraint"), {})
    assert response is not None
    assert response.status_code == 409
    assert (response.data["kind"], response.data["reason"], response.data["code"]) == ("Status", "Conflict", 409)
