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


@pytest.mark.parametrize("debug", [True, False])
def test_a_deleted_jobs_live_partials_say_who_deleted_it_and_when(world: Any, login: Any, debug: bool) -> None:
    """The open page of a job a colleague deleted: each live partial gets a small fragment (never Django's debug
    page) and an objectGone trigger with who and when; the page itself is the 404 page saying the same."""
    import json

    client = login(world.cast.alice)
    login(world.cast.bob).post("/jobs/team-a/train-a/action/", {"action": "delete"})  # a colleague
    with override_settings(DEBUG=debug):
        responses = [
            client.get(f"/jobs/team-a/train-a/?fragment={f}", HTTP_HX_REQUEST="true")
            for f in ("status", "events", "actions")
        ]
        responses.append(client.get("/jobs/team-a/train-a/insights/", HTTP_HX_REQUEST="true"))
        page = client.get("/jobs/team-a/train-a/")
    for r in responses:
        html = r.content.decode()
        assert r.status_code == 200, html[:300]
        assert 'data-gone="job"' in html
        assert len(html) < 300  # a small fragment, not a page
        assert "Traceback" not in html
        assert "URLconf" not in html
        message = json.loads(r["HX-Trigger"])["objectGone"]["message"]
        assert message.startswith("This job (team-a/train-a) was deleted by bob at ")
        assert "UTC (" in message
    assert page.status_code == 404
    assert "This job (team-a/train-a) was deleted by bob at " in page.content.decode()


def test_a_job_the_ttl_clean_up_deleted_says_so(world: Any, login: Any) -> None:
    import json

    from volcanoweb.audit import services as audit

    job = world.job_a
    job.delete()
    audit.record(
        None,
        "delete",
        "Job",
        "team-a/train-a",
        tenant=job.tenant,
        source="controller",
        message="ttlSecondsAfterFinished 60 expired",
    )
    r = login(world.cast.alice).get("/jobs/team-a/train-a/?fragment=status", HTTP_HX_REQUEST="true")
    message = json.loads(r["HX-Trigger"])["objectGone"]["message"]
    assert "was deleted by the controller at " in message
    assert message.endswith(": ttlSecondsAfterFinished 60 expired.")


def test_another_tenant_learns_nothing_from_a_deleted_jobs_fragment(world: Any, login: Any) -> None:
    from tests.volcanoweb import builders
    from volcanoweb.jobs import services as job_services

    job_services.delete_job(builders.SYSTEM, "team-b", "secret-b")
    r = login(world.cast.alice).get("/jobs/team-b/secret-b/?fragment=status", HTTP_HX_REQUEST="true")
    assert r.status_code == 404
    assert "HX-Trigger" not in r
    assert "charlie" not in r.content.decode()
    assert "Not found" in r.content.decode()


@override_settings(DEBUG=True)
def test_htmx_requests_never_get_a_debug_page(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    unknown = client.get("/no/such/fragment/", HTTP_HX_REQUEST="true")
    assert unknown.status_code == 404
    assert "URLconf" not in unknown.content.decode()
    assert "Not found" in unknown.content.decode()
    assert "<html" not in unknown.content.decode()


def test_a_tenant_admin_on_the_cycles_page_gets_the_page_saying_why(world: Any, login: Any) -> None:
    response = login(world.cast.alice).get("/cycles/")
    html = response.content.decode()
    assert response.status_code == 403
    assert 'aria-label="Main"' in html  # inside the product's shell
    assert "only platform admins download them" in html


def _cronjob(namespace: str, queue: str) -> None:
    """Cookbook 14's CronJob, in ``namespace`` on ``queue``."""
    from tests.volcanoweb import builders
    from volcanoweb.workflows import services as workflows

    (doc,) = builders.cookbook_documents("14-cronjob-daily-report.yaml")
    doc["spec"]["jobTemplate"]["spec"]["queue"] = queue
    workflows.apply_cronjob(builders.SYSTEM, doc, namespace)


@pytest.mark.parametrize("debug", [True, False])
def test_a_deleted_cronjobs_live_partials_say_who_deleted_it_and_when(world: Any, login: Any, debug: bool) -> None:
    """As a job's: the CronJob page's three live regions got three "Not found" fragments and kept asking."""
    import json

    from volcanoweb.tenancy.access import access_for
    from volcanoweb.workflows import services as workflows

    _cronjob("team-a", "team-a-q")
    workflows.delete_workflow_object(access_for(world.cast.bob), "CronJob", "team-a", "daily-report")
    client = login(world.cast.alice)
    with override_settings(DEBUG=debug):
        responses = [
            client.get(f"/cronjobs/team-a/daily-report/?fragment={f}", HTTP_HX_REQUEST="true")
            for f in ("summary", "history", "actions")
        ]
        page = client.get("/cronjobs/team-a/daily-report/")
    for r in responses:
        html = r.content.decode()
        assert r.status_code == 200, html[:300]
        assert 'data-gone="cronjob"' in html
        message = json.loads(r["HX-Trigger"])["objectGone"]["message"]
        assert message.startswith("This CronJob (team-a/daily-report) was deleted by bob at ")
    assert page.status_code == 404
    assert "This CronJob (team-a/daily-report) was deleted by bob at " in page.content.decode()


def test_another_tenant_learns_nothing_from_a_deleted_cronjobs_or_jobflows_page(world: Any, login: Any) -> None:
    from tests.volcanoweb import builders
    from volcanoweb.workflows import services as workflows

    _cronjob("team-b", "team-b-q")
    workflows.delete_workflow_object(builders.SYSTEM, "CronJob", "team-b", "daily-report")
    client = login(world.cast.alice)
    for url in ("/cronjobs/team-b/daily-report/?fragment=summary", "/jobflows/team-b/etl/?fragment=phase"):
        r = client.get(url, HTTP_HX_REQUEST="true")
        assert r.status_code == 404
        assert "HX-Trigger" not in r
        assert "Not found" in r.content.decode()
    assert client.get("/cronjobs/team-b/daily-report/").status_code == 404


@pytest.mark.parametrize("debug", [True, False])
def test_a_stale_csrf_token_gets_the_products_answer_not_djangos_page(world: Any, login: Any, debug: bool) -> None:
    """A page open while its user signed in again elsewhere (which rotates the CSRF secret) posts a stale token:
    Django answered with its own "CSRF verification failed" page (with DEBUG, its help section), which htmx
    swapped into the page. A partial gets a small fragment saying what to do; a form post, the product's 403."""
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(world.cast.alice)
    client.get("/jobs/team-a/train-a/")  # sets the CSRF cookie
    stale = {"action": "delete", "csrfmiddlewaretoken": "x" * 64}
    with override_settings(DEBUG=debug):
        fragment = client.post("/jobs/team-a/train-a/action/", stale, HTTP_HX_REQUEST="true")
        form = client.post("/jobs/team-a/train-a/action/", stale)
    html = fragment.content.decode()
    assert fragment.status_code == 403
    assert "CSRF verification failed" not in html
    assert "DEBUG" not in html
    assert "<html" not in html  # a fragment, not a page
    assert "Reload the page" in html
    page = form.content.decode()
    assert form.status_code == 403
    assert "CSRF verification failed" not in page
    assert 'aria-label="Main"' in page  # the product's page, in its shell
    assert "Reload the page" in page
    assert world.job_a.__class__.objects.filter(pk=world.job_a.pk).exists()  # nothing was deleted


def test_a_partial_of_a_page_whose_session_ended_sends_the_page_to_the_sign_in(world: Any) -> None:
    """A partial asked for after the session ended (signed out in another tab, expired) was redirected to the
    sign-in page, which the browser followed and htmx swapped into the region: a whole page inside the page. Now
    the whole page goes to the sign-in, and comes back to itself after it."""
    from django.test import Client

    client = Client()
    page = "/jobs/team-a/train-a/"
    response = client.get(f"{page}?fragment=status", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=f"http://t{page}")
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/login/?next={page}"
    assert response.content == b""
    plain = client.get(page)  # a page itself still goes to the sign-in the usual way
    assert plain.status_code == 302
    assert plain["Location"].startswith("/login/")
