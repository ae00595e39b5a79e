"""The dashboard's Tokens page: each token's scope, expiry and minting token; revoking one revokes its children;
the downloaded kubeconfig says when its token expires."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.test import Client

from tests.volcanoweb.conftest import Cast
from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.models import ApiToken

pytestmark = pytest.mark.both_databases


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_page_lists_scope_expiry_and_parent(cast: Cast) -> None:
    parent, _ = tenancy.create_token(cast.alice, "laptop", scope="admin")
    child, _ = tenancy.create_token(cast.alice, "ci", scope="read", parent=parent)
    tenancy.create_token(cast.bob, "bobs")
    html = login(cast.alice).get("/tokens/").content.decode()
    assert f"<code>{parent.prefix}…</code>" in html
    assert "Read only" in html
    assert f'data-expires="{child.expires_at.isoformat()}"' in html or child.expires_at.strftime("%Y-%m-%d") in html
    assert "bobs" not in html  # only the user's own tokens
    assert 'id="tokens-link"' in html


def test_revoking_on_the_page_revokes_the_children(cast: Cast) -> None:
    parent, _ = tenancy.create_token(cast.alice, "laptop", scope="admin")
    child, _ = tenancy.create_token(cast.alice, "ci", scope="submit", parent=parent)
    client = login(cast.alice)
    assert client.post(f"/tokens/{parent.pk}/revoke/").status_code == 302
    assert not ApiToken.objects.filter(pk__in=[parent.pk, child.pk], revoked_at__isnull=True).exists()
    other, _ = tenancy.create_token(cast.bob, "bobs")
    client.post(f"/tokens/{other.pk}/revoke/")
    assert ApiToken.objects.get(pk=other.pk).revoked_at is None  # not alice's


def test_the_kubeconfig_download_says_when_its_token_expires(cast: Cast) -> None:
    text = login(cast.alice).post("/kubeconfig/").content.decode()
    token = ApiToken.objects.get(user=cast.alice, name="dashboard kubeconfig")
    assert text.startswith(f"# token {token.prefix}… scope admin, expires {token.expires_at.isoformat()}")
    assert yaml.safe_load(text)["kind"] == "Config"
