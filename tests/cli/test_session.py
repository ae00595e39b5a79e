"""vcctl version, whoami, login (token and password), configuration sources, connection and auth errors."""

from __future__ import annotations

import socket
import stat

import pytest
import yaml

from tests.cli.conftest import Vcctl, run

pytestmark = pytest.mark.django_db(transaction=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_version_whoami_and_errors_without_a_usable_server(vc: Vcctl) -> None:
    no_server = {k: v for k, v in vc.env.items() if k != "VOLCANOWEB_SERVER"}
    refused = f"http://127.0.0.1:{_free_port()}"
    version, version_json, who, who_json, who_yaml, missing, down, bad_token, bad_url, bad_usage, bare = vc.batch(
        run("version", user=None, env={"VOLCANOWEB_SERVER": ""}),
        run("version", "-o", "json", user=None),
        run("whoami", user="alice"),
        run("whoami", "-o", "json", user="root"),
        run("whoami", "-o", "yaml", user="charlie"),
        run("job", "list", user="alice", env={"VOLCANOWEB_SERVER": ""}),
        run("job", "list", "-n", "team-a", "--server", refused),
        run("whoami", user=None, env={"VOLCANOWEB_TOKEN": "vw_not-a-token"}),
        run("whoami", "--server", "ftp://example.com"),
        run("job", "list", "--no-such-flag"),
        run(),
    )
    assert version.code == 0, version
    assert "Client Version: 0.1.0" in version.out, version
    assert version_json.json()["clientVersion"] == "0.1.0"
    assert who.code == 0, who
    assert "alice" in who.out
    assert "team-a" in who.out
    assert "tenant-admin" in who.out.replace("_", "-").lower()
    assert who_json.json()["platformAdmin"] is True
    assert who_json.json()["username"] == "root"
    assert who_yaml.yaml()["defaultNamespace"] == "team-b"
    missing.expect(2, "no server configured")
    down.expect(1, refused, "connection refused")
    bad_token.expect(1, "token", "vcctl login")
    bad_url.expect(2, "http://")
    bad_usage.expect(2, "--no-such-flag")
    bare.expect(2, "usage")
    for result in (missing, down, bad_token, bad_url, bad_usage):
        assert "Traceback" not in result.err
    assert no_server  # the env without a server is what VOLCANOWEB_SERVER="" simulates


def test_login_with_a_token_stores_the_config_used_afterwards(vc: Vcctl) -> None:
    env = {"VOLCANOWEB_SERVER": ""}
    login = vc.ok("login", "--server", vc.url, "--token", vc.tokens["bob"], user=None, env=env)
    assert "as bob" in login.out
    assert "team-a" in login.out
    config = vc.home / "config" / "volcanoweb" / "config"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    stored = yaml.safe_load(config.read_text())
    assert stored == {"server": vc.url, "token": vc.tokens["bob"], "namespace": "team-a"}
    assert vc.ok("whoami", "-o", "json", user=None, env=env).json()["username"] == "bob"
    # Flags and the environment win over the file.
    assert vc.ok("whoami", "-o", "json", "--token", vc.tokens["victor"], user=None, env=env).json()["username"] == (
        "victor"
    )
    assert vc.ok("whoami", "-o", "json", user="charlie", env=env).json()["username"] == "charlie"
    # INI works too.
    config.write_text(f"[default]\nserver = {vc.url}\ntoken = {vc.tokens['charlie']}\n")
    assert vc.ok("whoami", "-o", "json", user=None, env=env).json()["username"] == "charlie"
    # A token the server refuses is not stored.
    refused = vc.fails(1, "login", "--server", vc.url, "--token", "vw_wrong", user=None, env=env)
    assert "Invalid" in refused.err or "token" in refused.err
    assert "vw_wrong" not in config.read_text()


def test_login_with_username_and_password_creates_a_token(vc: Vcctl) -> None:
    env = {"VOLCANOWEB_SERVER": ""}
    login = vc.ok(
        "login", "--server", vc.url, "-u", "alice", "--password-stdin", stdin="pw-alice\n", user=None, env=env
    )
    assert "as alice" in login.out
    stored = yaml.safe_load((vc.home / "config" / "volcanoweb" / "config").read_text())
    assert stored["token"].startswith("vw_")
    assert stored["namespace"] == "team-a"
    assert vc.ok("whoami", "-o", "json", user=None, env=env).json()["authentication"] == "token"
    wrong = vc.fails(1, "login", "--server", vc.url, "-u", "alice", "--password-stdin", stdin="nope\n", user=None)
    assert "wrong username or password" in wrong.err
    no_password = vc.fails(2, "login", "--server", vc.url, "-u", "alice", user=None)
    assert "--password-stdin" in no_password.err
