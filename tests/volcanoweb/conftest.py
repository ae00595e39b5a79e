"""The web tests' cast and API clients.

* ``root``: platform admin (superuser), no tenant;
* tenant ``team-a`` (namespace ``team-a``): ``alice`` tenant-admin, ``bob`` member, ``victor`` viewer;
* tenant ``team-b`` (namespace ``team-b``): ``charlie`` tenant-admin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings
from rest_framework.test import APIClient

from tests.conftest import _transactional
from tests.volcanoweb import builders, reactions
from volcanoweb.tenancy import services as tenancy_services
from volcanoweb.tenancy.models import Role, Tenant

FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    """PBKDF2 at production strength costs ~0.5 s per user; tests do not need it."""
    settings.PASSWORD_HASHERS = FAST_HASHERS


@pytest.fixture(autouse=True)
def _controllers_informer(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each database test gets the controllers' informer from its own start (``tests.volcanoweb.reactions``)."""
    uses_db = request.node.get_closest_marker("django_db") is not None or "db" in request.fixturenames
    if uses_db:
        request.getfixturevalue("transactional_db" if _transactional(request) else "db")
        reactions.start()
    yield
    reactions.stop()


@pytest.fixture(autouse=True)
def _fresh_snapshot_memo() -> None:
    """The scheduling loop's snapshot memo starts empty in each test.

    It keeps rows by (id, resource_version) between cycles (ADR 0018). Each test's rows are rolled back, and
    SQLite's AUTOINCREMENT counter rolls back with them, so the next test reuses the same ids at version 0:
    a memo carried over would take them for the previous test's rows. (A product's loop reads committed
    rows only, whose ids are never reused.)
    """
    from volcanoweb.scheduling import cycles

    cycles._memo.reset()


@dataclass
class Cast:
    """The users and tenants every web test can use."""

    root: User
    alice: User
    bob: User
    victor: User
    charlie: User
    team_a: Tenant
    team_b: Tenant


def build_cast() -> Cast:
    """Create the cast's rows (callers provide database access)."""
    team_a, team_b = builders.make_tenant("team-a"), builders.make_tenant("team-b")
    users = {name: builders.make_user(name) for name in ("alice", "bob", "victor", "charlie")}
    builders.add_member(team_a, users["alice"], Role.TENANT_ADMIN)
    builders.add_member(team_a, users["bob"], Role.MEMBER)
    builders.add_member(team_a, users["victor"], Role.VIEWER)
    builders.add_member(team_b, users["charlie"], Role.TENANT_ADMIN)
    return Cast(root=builders.make_user("root", superuser=True), team_a=team_a, team_b=team_b, **users)


@pytest.fixture
def cast(db: Any) -> Cast:
    """Create the cast."""
    return build_cast()


@contextmanager
def module_data(blocker: Any) -> Iterator[None]:
    """Create data once for a module: inside an outer transaction rolled back at the end.

    Each test's own ``db`` transaction nests inside it as a savepoint, so the tests must not commit.
    """
    with blocker.unblock(), override_settings(PASSWORD_HASHERS=FAST_HASHERS), transaction.atomic():
        yield
        transaction.set_rollback(True)


ClientFactory = Callable[..., APIClient]


@pytest.fixture
def client_for(cast: Cast) -> ClientFactory:
    """Return ``client_for(user, auth="session"|"token")``; ``client_for(None)`` is anonymous."""

    def make(user: User | None, auth: str = "session") -> APIClient:
        client = APIClient()
        if user is None:
            return client
        if auth == "token":
            _, raw = tenancy_services.create_token(user, "tests")
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        else:
            client.force_login(user)
        return client

    return make


@pytest.fixture
def alice_api(client_for: ClientFactory, cast: Cast) -> APIClient:
    """Alice (team-a tenant admin) over a session."""
    return client_for(cast.alice)


@pytest.fixture
def root_api(client_for: ClientFactory, cast: Cast) -> APIClient:
    """The platform admin over a Bearer token."""
    return client_for(cast.root, "token")


@pytest.fixture
def ml_queues(cast: Cast) -> None:
    """The queues the cookbook jobs use, open to team-a."""
    for name in builders.COOKBOOK_JOB_QUEUES:
        builders.make_queue(name, allowed=("team-a",))


def post_yaml(client: APIClient, url: str, body: str, **extra: Any) -> Any:
    """POST a YAML body."""
    return client.post(url, data=body.encode(), content_type="application/yaml", **extra)


def put_yaml(client: APIClient, url: str, body: str) -> Any:
    """PUT a YAML body."""
    return client.put(url, data=body.encode(), content_type="application/yaml")
