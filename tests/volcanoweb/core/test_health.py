"""/healthz, /readyz and /metrics."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings


def test_healthz() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_reports_database_and_redis() -> None:
    response = Client().get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["redis"]["ok"] is True


@pytest.mark.django_db
def test_readyz_is_503_when_redis_is_down() -> None:
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["redis"]["ok"] is False


@pytest.mark.django_db
def test_metrics_exposes_volcano_names() -> None:
    response = Client().get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert "volcano_e2e_scheduling_latency_milliseconds" in text
    assert "volcano_action_scheduling_latency_microseconds" in text
