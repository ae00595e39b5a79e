"""The kubeconfig endpoint and the dashboard's kubeconfig button."""

from __future__ import annotations

import base64

import pytest
import yaml

from volcanoweb.core.tls import ensure_self_signed
from volcanoweb.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db


def test_the_endpoint_returns_a_kubeconfig_with_a_working_token(client_for, cast, settings, tmp_path) -> None:
    settings.HTTPS_PORT = 9443
    settings.ALLOWED_HOSTS = ["volcano.test", "testserver"]
    settings.TLS_DIR = tmp_path
    cert, _ = ensure_self_signed(tmp_path)
    response = client_for(cast.alice).post("/api/v1/kubeconfig?name=laptop", HTTP_HOST="volcano.test:8000")
    assert response.status_code == 201
    config = response.json()
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == "https://volcano.test:9443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == cert.read_bytes()
    assert config["contexts"][0]["context"]["namespace"] == "team-a"
    assert ApiToken.objects.get(name="laptop").user == cast.alice
    token = config["users"][0]["user"]["token"]
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs").status_code == 200


def test_kube_api_url_wins_and_anonymous_callers_get_401(client_for, cast, settings) -> None:
    settings.KUBE_API_URL = "https://volcano.example.com/"
    config = client_for(cast.alice, "token").post("/api/v1/kubeconfig").json()  # an admin-scoped token mints
    assert config["clusters"][0]["cluster"] == {"server": "https://volcano.example.com"}
    assert client_for(None).post("/api/v1/kubeconfig").status_code == 401


def test_the_dashboard_button_downloads_a_kubeconfig(client, cast) -> None:
    client.force_login(cast.bob)
    page = client.get("/")
    assert b'id="kubeconfig-button"' in page.content
    download = client.post("/kubeconfig/")
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="kubeconfig.yaml"'
    config = yaml.safe_load(download.content)
    assert config["current-context"] == "volcanoweb"
    assert ApiToken.objects.filter(user=cast.bob, name="dashboard kubeconfig").count() == 1
    assert client.get("/kubeconfig/").status_code == 405


def test_the_dashboard_button_needs_a_signed_in_user(client) -> None:
    response = client.post("/kubeconfig/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]
