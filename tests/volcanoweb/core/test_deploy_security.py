"""Deployment security: ``check --deploy`` is clean for the docker-compose configuration, the settings come
from the environment (bad values name the variable), pages carry a CSP, and /metrics can be protected."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.test import Client

ROOT = Path(__file__).resolve().parents[3]


def compose_environment() -> dict[str, str]:
    """The app services' environment from docker-compose.yml, ``${VAR:-default}`` resolved to the default."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env: dict[str, str] = {}
    for name, value in compose["x-app"]["environment"].items():
        text = str(value)
        match = re.fullmatch(r"\$\{(\w+)(?::-(.*)|:\?.*)\}", text)
        env[name] = (match.group(2) or "") if match else text
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_for_the_compose_configuration(tmp_path: Path) -> None:
    env = compose_environment()
    assert env["SECRET_KEY"] == ""  # compose refuses to start without one
    env["SECRET_KEY"] = "k" * 20 + "a-long-random-value-for-the-test-0123456789"
    env["VAR_DIR"] = str(tmp_path)
    result = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_reports_the_issue_items_without_those_settings(tmp_path: Path) -> None:
    env = {"DEBUG": "false", "SECRET_KEY": "k" * 60, "VAR_DIR": str(tmp_path)}
    result = manage(env, "check", "--deploy")
    for warning in ("W004", "W008", "W012", "W016"):
        assert warning in result.stdout + result.stderr, warning


def test_compose_services_restart_when_they_die() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name in ("postgres", "redis", "web", "worker", "scheduler", "beat"):
        assert services[name].get("restart") == "unless-stopped", name


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("METRICS_ALLOWED_NETWORKS", "10.0.0.0/8,not-a-net"),
        ("SECURE_HSTS_SECONDS", "soon"),
        ("SECURE_COOKIES", "maybe"),
    ],
)
def test_a_bad_value_names_the_variable(variable: str, value: str, tmp_path: Path) -> None:
    result = manage({variable: value, "VAR_DIR": str(tmp_path)}, "check")
    assert result.returncode != 0
    assert variable in result.stderr


def test_pages_and_api_answers_carry_the_csp(db: Any) -> None:
    for url in ("/login/", "/api/v1/whoami", "/healthz"):
        policy = Client().get(url)["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "object-src 'none'" in policy
        assert "frame-ancestors 'none'" in policy


class TestMetrics:
    def test_protected_by_default(self, db: Any) -> None:
        """Issue 28: /metrics was open by default on make run, with every tenant's queue names."""
        from django.conf import settings as live

        assert (live.METRICS_PUBLIC, live.METRICS_TOKEN) == (False, "")
        assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200  # a local Prometheus
        assert Client(REMOTE_ADDR="::1").get("/metrics").status_code == 200
        assert Client(REMOTE_ADDR="192.168.1.20").get("/metrics").status_code == 401
        assert Client(REMOTE_ADDR="10.0.0.5").get("/metrics").status_code == 401

    def test_a_request_through_a_proxy_gets_no_network_trust(self, settings: Any, db: Any) -> None:
        """Behind a TLS proxy every client has the proxy's (trusted) address; its forwarding headers say so."""
        settings.METRICS_TOKEN, settings.METRICS_ALLOWED_NETWORKS = "tok", ["127.0.0.0/8", "10.0.0.0/8"]
        settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_SCHEME", "https")
        proxy = Client(REMOTE_ADDR="10.0.0.2")
        assert proxy.get("/metrics").status_code == 200  # a direct scrape from the network
        for header in ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_FORWARDED", "HTTP_X_SCHEME"):
            assert proxy.get("/metrics", **{header: "https"}).status_code == 401, header
        assert proxy.get("/metrics", HTTP_X_FORWARDED_PROTO="https", HTTP_AUTHORIZATION="Bearer tok").status_code == 200

    def test_public_only_when_asked(self, settings: Any, db: Any) -> None:
        settings.METRICS_PUBLIC, settings.METRICS_TOKEN, settings.METRICS_ALLOWED_NETWORKS = True, "", []
        assert Client(REMOTE_ADDR="203.0.113.9").get("/metrics").status_code == 200

    def test_a_token_is_needed_when_set(self, settings: Any, db: Any) -> None:
        settings.METRICS_TOKEN, settings.METRICS_ALLOWED_NETWORKS = "s3cret-scrape", []
        refused = Client().get("/metrics")
        assert refused.status_code == 401
        assert refused["WWW-Authenticate"].startswith("Bearer")
        assert b"volcano_" not in refused.content
        assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
        scraped = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape")
        assert scraped.status_code == 200
        assert b"volcano_schedule_attempts" in scraped.content
        assert scraped["Content-Type"].startswith("text/plain")  # what Prometheus parses

    def test_allowed_networks_when_set(self, settings: Any, db: Any) -> None:
        settings.METRICS_TOKEN, settings.METRICS_ALLOWED_NETWORKS = "", ["10.1.0.0/16", "::1/128"]
        assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200
        assert Client(REMOTE_ADDR="::1").get("/metrics").status_code == 200
        assert Client(REMOTE_ADDR="10.2.0.1").get("/metrics").status_code == 401
        forwarded = Client(REMOTE_ADDR="203.0.113.9").get("/metrics", HTTP_X_FORWARDED_FOR="10.1.2.3")
        assert forwarded.status_code == 401  # a forwarded header is never trusted

    def test_token_or_network(self, settings: Any, db: Any) -> None:
        settings.METRICS_TOKEN, settings.METRICS_ALLOWED_NETWORKS = "tok", ["10.1.0.0/16"]
        assert Client(REMOTE_ADDR="10.1.0.9").get("/metrics").status_code == 200
        outside = Client(REMOTE_ADDR="192.0.2.1")
        assert outside.get("/metrics").status_code == 401
        assert outside.get("/metrics", HTTP_AUTHORIZATION="Bearer tok").status_code == 200
