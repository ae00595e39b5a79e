"""Every dashboard page: login required, renders for members, scoped to tenants, bounded queries."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.volcanoweb import builders
from volcanoweb.tenancy.models import Role

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/queues/",
    "/jobs/",
    "/jobs/team-a/train-a/",
    "/submit/",
    "/nodes/",
    "/cronjobs/",
    "/jobflows/",
    "/scheduler/",
    "/audit/",
    "/queues/team-a-q/usage/",
    "/nodes/node-0/pods/",
]


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_is_sent_to_login(world: Any, url: str) -> None:
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("url", PAGES)
def test_member_sees_every_page(world: Any, login: Any, url: str, django_assert_max_num_queries: Any) -> None:
    client = login(world.cast.bob)
    with django_assert_max_num_queries(30):
        response = client.get(url)
    assert response.status_code == 200
    assert b"<main" in response.content or url.endswith(("/usage/", "/pods/"))


@pytest.mark.parametrize("url", PAGES)
def test_platform_admin_sees_every_page(world: Any, login: Any, url: str) -> None:
    assert login(world.cast.root).get(url).status_code == 200


def test_login_page_renders_and_logs_in(world: Any) -> None:
    client = Client()
    page = client.get("/login/")
    assert page.status_code == 200
    assert b'autocomplete="current-password"' in page.content
    response = client.post("/login/", {"username": "bob", "password": "pw-bob"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_logout_needs_post_and_ends_the_session(world: Any, login: Any) -> None:
    client = login(world.cast.bob)
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_other_tenants_jobs_are_invisible(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    listing = client.get("/jobs/").content.decode()
    assert "train-a" in listing
    assert "secret-b" not in listing
    assert "secret-b" not in client.get("/jobs/?q=secret").content.decode()
    assert "secret-b" not in client.get("/").content.decode()


def test_other_tenants_job_page_is_404(world: Any, login: Any) -> None:
    assert login(world.cast.alice).get("/jobs/team-b/secret-b/").status_code == 404
    assert login(world.cast.charlie).get("/jobs/team-b/secret-b/").status_code == 200


def test_other_tenants_queue_usage_is_404(world: Any, login: Any) -> None:
    assert login(world.cast.alice).get("/queues/team-b-q/usage/").status_code == 404


def test_empty_states(cast: Any, login: Any) -> None:
    client = login(cast.charlie)
    assert "No jobs yet" in client.get("/").content.decode()
    assert "Nothing has been submitted" in client.get("/jobs/").content.decode()
    assert "No CronJobs" in client.get("/cronjobs/").content.decode()
    assert "No JobFlows" in client.get("/jobflows/").content.decode()


def test_tenant_switcher_narrows_what_is_shown(world: Any, login: Any) -> None:
    builders.add_member(world.cast.team_b, world.cast.bob, Role.VIEWER)
    client = login(world.cast.bob)
    both = client.get("/jobs/").content.decode()
    assert "train-a" in both
    assert "secret-b" in both
    assert 'id="tenant-select"' in both
    client.post("/tenant/", {"tenant": str(world.cast.team_b.pk), "next": "/jobs/"})
    only_b = client.get("/jobs/").content.decode()
    assert "secret-b" in only_b
    assert "train-a" not in only_b
    client.post("/tenant/", {"tenant": "all", "next": "/jobs/"})
    assert "train-a" in client.get("/jobs/").content.decode()


def test_tenant_switch_refuses_foreign_tenant_and_outside_redirects(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    response = client.post("/tenant/", {"tenant": str(world.cast.team_b.pk), "next": "https://evil.example/"})
    assert response["Location"] == "/"
    assert "secret-b" not in client.get("/jobs/").content.decode()


def test_job_filters_sort_and_pagination(world: Any, login: Any) -> None:
    for i in range(55):
        builders.make_job("team-a", f"bulk-{i:02d}", queue="team-a-q")
    client = login(world.cast.alice)
    first = client.get("/jobs/?sort=name").content.decode()
    assert "Page 1 of 2" in first
    assert "bulk-00" in first
    assert "bulk-54" in client.get("/jobs/?sort=name&page=2").content.decode()
    filtered = client.get("/jobs/?q=bulk-1&phase=Pending&queue=team-a-q&namespace=team-a").content.decode()
    assert "bulk-10" in filtered
    assert "train-a" not in filtered
    fragment = client.get("/jobs/?fragment=table&sort=-name").content.decode()
    assert "<html" not in fragment
    assert "bulk-54" in fragment


def test_job_list_query_count_does_not_grow_with_jobs(
    world: Any, login: Any, django_assert_max_num_queries: Any
) -> None:
    for i in range(120):
        builders.make_job("team-a", f"many-{i}", queue="team-a-q")
    client = login(world.cast.alice)
    with django_assert_max_num_queries(12):
        assert client.get("/jobs/").status_code == 200
    with django_assert_max_num_queries(20):
        assert client.get("/").status_code == 200


def test_a_page_carries_the_revision_read_before_its_view_and_a_fragment_none(world: Any, login: Any) -> None:
    """The page's socket starts at ``data-live-rev`` (``?since=``): a revision read before the view read anything,
    so that what changes while the page loads reaches it."""
    import re

    from volcanoweb.feed import log

    client = login(world.cast.bob)
    before = log.head()[0]
    page = client.get("/jobs/team-a/train-a/").content.decode()
    found = re.search(r'data-live-rev="(\d+)"', page)
    assert found, page[:600]
    assert before <= int(found.group(1)) <= log.head()[0]
    assert log.revision() == log.head()[0]  # the one-statement read the page makes
    fragment = client.get("/jobs/", headers={"HX-Request": "true"}).content.decode()
    assert "data-live-rev" not in fragment
    assert "data-live-rev" not in Client().get("/login/").content.decode()  # nobody signed in: no socket
