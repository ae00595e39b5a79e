"""An unexpected failure under /api/ is a Kubernetes ``Status`` 500 in JSON, never an HTML traceback,
whatever ``DEBUG`` says; and every write in the OpenAPI schema takes ``fieldValidation``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.http import HttpResponse
from django.test import Client, RequestFactory
from drf_spectacular.views import SpectacularAPIView
from rest_framework.test import APIClient

from tests.volcanoweb.conftest import Cast
from volcanoweb.api import whoami
from volcanoweb.api.errors import ApiErrorMiddleware


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("secret internals /srv/app/settings.py line 42")


@pytest.mark.parametrize("debug", [True, False])
def test_a_crash_in_an_api_view_is_a_json_status(debug: bool, cast: Cast, settings: Any, monkeypatch: Any) -> None:
    settings.DEBUG = debug
    monkeypatch.setattr(whoami.WhoAmIView, "get", _boom)
    client = APIClient()
    client.force_authenticate(cast.alice)
    response = client.get("/api/v1/whoami")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["kind"] == "Status"
    assert body["reason"] == "InternalError"
    assert body["code"] == 500
    assert "secret internals" not in response.content.decode()
    assert "Traceback" not in response.content.decode()


@pytest.mark.parametrize("debug", [True, False])
def test_a_crash_in_a_non_json_api_view_is_a_json_status(debug: bool, settings: Any, monkeypatch: Any, db: Any) -> None:
    settings.DEBUG = debug
    monkeypatch.setattr(SpectacularAPIView, "get", _boom)
    response = Client(raise_request_exception=False).get("/api/schema/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["reason"] == "InternalError"
    assert "secret internals" not in response.content.decode()


def test_the_middleware_answers_any_other_api_crash_with_a_status(settings: Any) -> None:
    settings.DEBUG = True
    middleware = ApiErrorMiddleware(lambda request: HttpResponse("ok"))
    request = RequestFactory().get("/api/v1/anything")
    response = middleware.process_exception(request, RuntimeError("secret internals"))
    assert response is not None
    assert response.status_code == 500
    assert json.loads(response.content)["kind"] == "Status"
    assert b"secret internals" not in response.content
    page = RequestFactory().get("/jobs/")
    assert middleware.process_exception(page, RuntimeError("x")) is None  # pages keep Django's handling


def test_every_write_in_the_schema_takes_field_validation(cast: Cast) -> None:
    client = APIClient()
    client.force_authenticate(cast.alice)
    schema = client.get("/api/schema/?format=json").json()
    writes = 0
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            names = {p["name"] for p in operation.get("parameters", [])}
            if method in ("post", "put", "patch", "delete"):
                writes += 1
                assert "fieldValidation" in names, f"{method} {path}"
            elif method == "get":
                assert "fieldValidation" not in names, f"{method} {path}"
    assert writes >= 20
