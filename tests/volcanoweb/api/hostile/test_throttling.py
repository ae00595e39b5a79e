"""Throttling of failed authentication: 40 wrong passwords, then the right one, does not sign in (django-axes,
per username and per client address, 429 with Retry-After); 40 random bearer tokens get 429 with Retry-After
after API_AUTH_FAILURE_LIMIT, and then even a good token from that address does; each is logged."""

from __future__ import annotations

import logging
import secrets
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.volcanoweb.conftest import Cast
from volcanoweb.tenancy import services as tenancy

pytestmark = pytest.mark.both_databases
PASSWORD = "right-password"


@pytest.fixture
def alice(cast: Cast) -> Any:
    cast.alice.set_password(PASSWORD)
    cast.alice.save()
    return cast.alice


def sign_in(client: Client, password: str, username: str = "alice", address: str = "10.0.0.1") -> Any:
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_forty_wrong_passwords_then_the_right_one_does_not_sign_in(
    alice: Any, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.LOGIN_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT = 10
    client = Client()
    codes = [sign_in(client, f"wrong-{i}").status_code for i in range(40)]
    assert codes[:9] == [200] * 9  # the form again, with its error
    assert set(codes[10:]) == {429}
    right = sign_in(client, PASSWORD)
    assert right.status_code == 429
    assert int(right["Retry-After"]) == settings.LOGIN_LOCKOUT_SECONDS
    assert "_auth_user_id" not in client.session
    assert Client().get("/api/v1/whoami").status_code == 401
    assert any("sign-in refused" in r.getMessage() for r in caplog.records)


def test_a_locked_username_is_locked_from_every_address(alice: Any, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    for i in range(3):
        sign_in(Client(), "wrong", address=f"10.0.1.{i}")
    assert sign_in(Client(), PASSWORD, address="10.0.9.9").status_code == 429


def test_one_address_guessing_many_usernames_is_locked(alice: Any, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    for i in range(3):
        sign_in(Client(), "wrong", username=f"user{i}", address="10.0.2.1")
    assert sign_in(Client(), PASSWORD, address="10.0.2.1").status_code == 429
    assert sign_in(Client(), PASSWORD, address="10.0.2.2").status_code == 302  # alice elsewhere signs in


def bearer(raw: str, address: str = "10.1.0.1") -> Any:
    client = APIClient()
    return client.get("/api/v1/whoami", HTTP_AUTHORIZATION=f"Bearer {raw}", REMOTE_ADDR=address)


def test_forty_random_bearer_tokens_are_throttled(cast: Cast, settings: Any, caplog: Any) -> None:
    settings.API_AUTH_FAILURE_LIMIT = 20
    caplog.set_level(logging.INFO, logger="volcanoweb.tenancy.throttling")
    codes = [bearer(f"vw_{secrets.token_urlsafe(16)}").status_code for _ in range(40)]
    assert codes[:20] == [401] * 20
    assert set(codes[20:]) == {429}
    _, good = tenancy.create_token(cast.alice, "good")
    throttled = bearer(good)
    assert throttled.status_code == 429
    assert 0 < int(throttled["Retry-After"]) <= settings.API_AUTH_FAILURE_WINDOW
    assert throttled.json()["reason"] == "TooManyRequests"
    assert bearer(good, address="10.1.0.2").status_code == 200  # another address is not throttled
    assert sum("bearer token refused" in r.getMessage() for r in caplog.records) == 20
    assert any("throttled" in r.getMessage() for r in caplog.records)


def test_a_users_revoked_tokens_throttle_that_user(cast: Cast, settings: Any) -> None:
    settings.API_AUTH_FAILURE_LIMIT = 3
    old, old_raw = tenancy.create_token(cast.alice, "old")
    tenancy.revoke_token(cast.alice, old.pk)
    for i in range(3):
        assert bearer(old_raw, address=f"10.2.0.{i}").status_code == 401
    _, good = tenancy.create_token(cast.alice, "good")
    assert bearer(good, address="10.2.1.1").status_code == 429
    _, bobs = tenancy.create_token(cast.bob, "bob")
    assert bearer(bobs, address="10.2.1.1").status_code == 200


def test_dry_runs_do_not_forget_failures(cast: Cast, settings: Any) -> None:
    settings.API_AUTH_FAILURE_LIMIT = 2
    client = APIClient()
    for _ in range(2):
        response = client.post("/api/v1/queues?dryRun=All", HTTP_AUTHORIZATION="Bearer vw_nope", REMOTE_ADDR="10.3.0.1")
        assert response.status_code == 401
    assert bearer("vw_nope", address="10.3.0.1").status_code == 429
