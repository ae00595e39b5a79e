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
    assert config["current-context"] == "bob@" + config["clusters"][0]["cluster"]["server"].removeprefix("https://")
    assert ApiToken.objects.filter(user=cast.bob, name="dashboard kubeconfig").count() == 1
    assert client.get("/kubeconfig/").status_code == 405


def test_the_dashboard_button_needs_a_signed_in_user(client) -> None:
    response = client.post("/kubeconfig/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_names_follow_server_and_user_and_the_callers_token_is_reused(client_for, cast, settings) -> None:
    settings.HTTPS_PORT = 9443
    settings.ALLOWED_HOSTS = ["volcano.test", "testserver"]
    alice = client_for(cast.alice, "token")
    held = alice._credentials["HTTP_AUTHORIZATION"].split()[1]
    before = ApiToken.objects.filter(user=cast.alice).count()
    config = alice.post("/api/v1/kubeconfig", HTTP_HOST="volcano.test:8000").json()
    assert config["users"] == [{"name": "alice@volcano.test:9443", "user": {"token": held}}]
    assert config["clusters"][0]["name"] == "volcanoweb-volcano.test:9443"
    assert config["contexts"][0]["name"] == config["current-context"] == "alice@volcano.test:9443"
    assert ApiToken.objects.filter(user=cast.alice).count() == before  # no new token
    fresh = alice.post("/api/v1/kubeconfig?newToken=true", HTTP_HOST="volcano.test:8000").json()
    assert fresh["users"][0]["user"]["token"] != held
    assert ApiToken.objects.filter(user=cast.alice).count() == before + 1
    carol = client_for(cast.bob, "token").post("/api/v1/kubeconfig", HTTP_HOST="volcano.test:8000").json()
    assert carol["current-context"] == "bob@volcano.test:9443"
    assert carol["clusters"][0]["name"] == config["clusters"][0]["name"]  # the same server: one cluster entry


def test_the_certificate_covers_ipv6_loopback_and_the_configured_hosts(tmp_path) -> None:
    from cryptography import x509

    from volcanoweb.core.tls import certificate_hosts

    hosts = certificate_hosts("0.0.0.0", ["volcano.test", ".example.com", "*"])
    assert hosts == ("127.0.0.1", "::1", "localhost", "volcano.test", "example.com")
    cert, _ = ensure_self_signed(tmp_path, hosts)
    names = x509.load_pem_x509_certificate(cert.read_bytes()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert {str(ip) for ip in names.value.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}
    assert set(names.value.get_values_for_type(x509.DNSName)) == {"localhost", "volcano.test", "example.com"}
    first = cert.read_bytes()
    assert ensure_self_signed(tmp_path, hosts)[0].read_bytes() == first  # covered: kept
    ensure_self_signed(tmp_path, (*hosts, "new.test"))
    assert cert.read_bytes() != first  # a new name: made again


def test_kubectl_on_the_plain_port_is_told_why(client_for, cast) -> None:
    from rest_framework.test import APIClient

    answer = APIClient().get("/api", HTTP_USER_AGENT="kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07")
    assert answer.status_code == 401
    assert "kubectl sends its bearer token only over HTTPS" in answer.json()["message"]
    assert "HTTPS" not in APIClient().get("/api").json()["message"]
