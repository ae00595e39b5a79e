"""The product's own 404/403/500 pages, with DEBUG on or off; the API keeps its Status bodies."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory, override_settings

from volcanoweb.dashboard import errors

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("debug", [True, False])
def test_a_deleted_jobs_page_is_the_products_404(world: Any, login: Any, debug: bool) -> None:
    client = login(world.cast.alice)
    world.job_a.delete()
    with override_settings(DEBUG=debug):
        response = client.get("/jobs/team-a/train-a/")
        unknown = client.get("/no/such/page/")
    for r in (response, unknown):
        html = r.content.decode()
        assert r.status_code == 404
        assert 'data-error-page="404"' in html
        assert "Page not found" in html
        assert "URLconf" not in html  # not Django's debug page with every URL pattern
        assert 'aria-label="Main"' in html  # inside the product's shell, with its navigation


def test_another_tenants_job_is_the_same_404(world: Any, login: Any) -> None:
    response = login(world.cast.alice).get("/jobs/team-b/secret-b/")
    assert response.status_code == 404
    assert 'data-error-page="404"' in response.content.decode()
    assert "secret-b" not in response.content.decode().replace("/jobs/team-b/secret-b/", "")


@override_settings(DEBUG=True)
def test_the_api_keeps_its_status_bodies(world: Any, login: Any) -> None:
    response = login(world.cast.alice).get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")


def test_403_and_500_pages(world: Any) -> None:
    request = RequestFactory().get("/queues/")
    request.user = world.cast.bob
    forbidden = errors.permission_denied(request)
    assert forbidden.status_code == 403
    assert "You cannot do this" in forbidden.content.decode()
    broken = errors.server_error(request)
    assert broken.status_code == 500
    assert 'data-error-page="500"' in broken.content.decode()
