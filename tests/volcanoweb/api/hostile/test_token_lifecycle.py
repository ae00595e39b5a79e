"""Token lifecycle: every token expires (default from settings, shown on creation), has a scope within its
user's roles, only a session or an admin-scoped token mints tokens, revoking a token revokes those it minted
(down the line), and a password change ends the user's other sessions."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.builders import job_manifest, queue_manifest, to_yaml
from tests.volcanoweb.conftest import Cast, post_yaml
from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.models import ApiToken

pytestmark = pytest.mark.both_databases
TOKENS = "/api/v1/tokens"


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def session(user: Any) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def mint(client: APIClient, **body: Any) -> Any:
    return client.post(TOKENS, data=json.dumps(body), content_type="application/json")


def when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_a_new_token_expires_after_the_default_ttl_and_says_so(cast: Cast, settings: Any) -> None:
    settings.API_TOKEN_TTL_DAYS = 7
    created = mint(session(cast.alice), name="ci")
    assert created.status_code == 201, created.content
    body = created.json()
    lifetime = when(body["expiresAt"]) - when(body["createdAt"])
    assert timedelta(days=7) - timedelta(minutes=1) < lifetime <= timedelta(days=7)
    assert body["scope"] == "admin"  # alice is a tenant admin: the widest her roles allow
    listed = session(cast.alice).get(TOKENS).json()["items"][0]
    assert (listed["expiresAt"], listed["scope"]) == (body["expiresAt"], "admin")


def test_asking_for_longer_than_the_maximum_gets_the_maximum(cast: Cast, settings: Any) -> None:
    settings.API_TOKEN_MAX_TTL_DAYS = 30
    body = mint(session(cast.alice), name="long", expiresInDays=10_000).json()
    assert when(body["expiresAt"]) - when(body["createdAt"]) <= timedelta(days=30)


def test_an_expired_token_is_refused(cast: Cast) -> None:
    token, raw = tenancy.create_token(cast.alice, "old")
    assert bearer(raw).get("/api/v1/whoami").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert bearer(raw).get("/api/v1/whoami").status_code == 401


def test_only_a_session_or_an_admin_token_mints_tokens(cast: Cast) -> None:
    _, submit_raw = tenancy.create_token(cast.alice, "submit", scope="submit")
    refused = mint(bearer(submit_raw), name="more")
    assert refused.status_code == 403
    assert "cannot mint tokens" in refused.json()["message"]
    assert bearer(submit_raw).post("/api/v1/kubeconfig?newToken=true").status_code == 403
    # Without asking for a new token, the kubeconfig carries the caller's own (issue 27): nothing is minted.
    reused = bearer(submit_raw).post("/api/v1/kubeconfig")
    assert reused.status_code == 201
    assert reused.json()["users"][0]["user"]["token"] == submit_raw
    assert ApiToken.objects.filter(user=cast.alice).count() == 1


def test_minted_tokens_go_with_the_token_that_minted_them(cast: Cast) -> None:
    parent, parent_raw = tenancy.create_token(cast.alice, "parent", scope="admin")
    child = mint(bearer(parent_raw), name="child").json()
    assert child["parent"] == parent.pk
    assert when(child["expiresAt"]) <= parent.expires_at
    grandchild = mint(bearer(child["token"]), name="grandchild", scope="read").json()
    kubeconfig = bearer(parent_raw).post("/api/v1/kubeconfig?name=kc")
    assert kubeconfig.status_code == 201
    kube_raw = kubeconfig.json()["users"][0]["user"]["token"]
    for raw in (child["token"], grandchild["token"], kube_raw):
        assert bearer(raw).get("/api/v1/whoami").status_code == 200
    assert session(cast.alice).delete(f"{TOKENS}/{parent.pk}").status_code == 200
    for raw in (parent_raw, child["token"], grandchild["token"], kube_raw):
        assert bearer(raw).get("/api/v1/whoami").status_code == 401
    assert not ApiToken.objects.filter(user=cast.alice, revoked_at__isnull=True).exists()


def test_a_child_cannot_widen_its_parents_scope(cast: Cast) -> None:
    _, raw = tenancy.create_token(cast.alice, "parent", scope="admin")
    child = mint(bearer(raw), name="reader", scope="read").json()
    assert mint(bearer(child["token"]), name="x").status_code == 403  # a read token mints nothing


def test_a_scope_is_never_more_than_the_roles_allow(cast: Cast) -> None:
    refused = mint(session(cast.bob), name="too-much", scope="admin")  # bob is a member
    assert refused.status_code == 403
    assert "more than the user's roles allow (submit)" in refused.json()["message"]
    assert mint(session(cast.victor), name="viewer").json()["scope"] == "read"


def test_a_read_token_only_reads(cast: Cast) -> None:
    builders.make_queue("team-a-q", tenant="team-a", weight=4)
    _, raw = tenancy.create_token(cast.alice, "reader", scope="read")
    client = bearer(raw)
    assert client.get("/api/v1/namespaces/team-a/jobs").status_code == 200
    job = to_yaml(job_manifest("r", namespace="team-a", queue="team-a-q"))
    refused = post_yaml(client, "/api/v1/namespaces/team-a/jobs", job)
    assert refused.status_code == 403
    assert "read-only" in refused.json()["message"]
    kube = client.post(
        "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs", data=job.encode(), content_type="application/yaml"
    )
    assert kube.status_code == 403


def test_a_submit_token_writes_as_a_member(cast: Cast) -> None:
    builders.make_queue("team-a-q", tenant="team-a", weight=4)
    _, raw = tenancy.create_token(cast.alice, "ci", scope="submit")
    client = bearer(raw)
    job = to_yaml(job_manifest("s", namespace="team-a", queue="team-a-q"))
    assert post_yaml(client, "/api/v1/namespaces/team-a/jobs", job).status_code == 201
    child_queue = to_yaml(queue_manifest("team-a-sub", parent="team-a-q", tenant="team-a"))
    assert post_yaml(client, "/api/v1/queues", child_queue).status_code == 403  # a tenant admin's act
    assert post_yaml(session(cast.alice), "/api/v1/queues", child_queue).status_code == 201


def test_a_password_change_ends_the_other_sessions(cast: Cast) -> None:
    other = Client()
    other.force_login(cast.alice)
    assert other.get("/api/v1/whoami").status_code == 200
    cast.alice.set_password("a new one")
    cast.alice.save()
    assert other.get("/api/v1/whoami").status_code == 401
