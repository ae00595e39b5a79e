"""The OpenAPI schema validates, and a seeded schemathesis fuzz run (in-process, as alice) finds no 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
import yaml
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema
from hypothesis import HealthCheck, Phase, given, settings

from tests.volcanoweb import builders
from volcanoweb.tenancy import services as tenancy_services


def test_the_schema_validates_against_the_openapi_3_specification() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    paths = set(schema["paths"])
    assert {"/api/v1/apply", "/api/v1/queues/{name}", "/api/v1/namespaces/{namespace}/jobs/{name}"} <= paths
    assert "bearerAuth" in schema["components"]["securitySchemes"]


def test_the_schema_and_the_docs_are_served_without_a_cdn(client: Any) -> None:
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower()
    assert "//unpkg" not in html


@pytest.fixture
def wsgi_app(db: Any) -> Iterator[Any]:
    """The Django WSGI app, called in-process inside the test's transaction.

    Like Django's test client, keep ``close_old_connections`` off the request signals: it would close
    the connection that holds the test transaction.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def alice_token(cast: Any, ml_queues: Any) -> str:
    builders.make_job("team-a", "train", queue="ml-training")
    return tenancy_services.create_token(cast.alice, "fuzz")[1]


FUZZ_SETTINGS = settings(
    max_examples=4,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def _is_status(response: Any) -> bool:
    try:
        body = response.json()
    except ValueError:
        try:
            body = yaml.safe_load(response.text)  # when the fuzzer asked for application/yaml
        except yaml.YAMLError:
            return False
    return isinstance(body, dict) and body.get("kind") == "Status" and body.get("code") == response.status_code


def test_fuzzing_the_api_finds_no_server_error(wsgi_app: Any, alice_token: str) -> None:
    api = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app)
    headers = {"Authorization": f"Bearer {alice_token}"}
    failures: list[str] = []
    field_validation_sent: list[str] = []
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 40
    for operation in operations:
        strategy = operation.as_strategy()

        @FUZZ_SETTINGS
        @given(case=strategy)
        def check(case: Any) -> None:
            response = case.call(headers=headers)
            if "fieldValidation" in (case.query or {}):
                field_validation_sent.append(f"{case.method} {case.formatted_path}")
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}")
            elif response.status_code >= 400 and not _is_status(response):
                failures.append(
                    f"{case.method} {case.formatted_path}: {response.status_code} not a Status: {response.text[:300]}"
                )

        check()
    assert not failures, "\n".join(failures)
    assert len(field_validation_sent) >= 10  # the fuzzer exercised ?fieldValidation on the writes
