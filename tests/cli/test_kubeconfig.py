"""``vcctl kubeconfig``: a kubeconfig whose new token works on the Kubernetes-shaped API."""

from __future__ import annotations

import stat

import httpx
import pytest
import yaml

from tests.cli.conftest import Vcctl

pytestmark = pytest.mark.django_db(transaction=True)


def test_kubeconfig_to_stdout_and_to_a_private_file(vc: Vcctl) -> None:
    """With an admin-scoped token (alice, a tenant admin); a member's token (scope submit) mints nothing, but
    its kubeconfig may carry the member's own token (issue 27: reused unless a new one is asked for)."""
    refused = vc.fails(1, "kubeconfig", "--new-token", user="bob")
    assert "cannot mint tokens" in refused.err
    assert vc.ok("kubeconfig", user="bob").yaml()["kind"] == "Config"
    printed = vc.ok("kubeconfig", user="alice").yaml()
    assert printed["kind"] == "Config"
    context = printed["contexts"][0]["context"]
    assert context["namespace"] == "team-a"
    assert printed["clusters"][0]["cluster"]["server"].startswith("https://")
    token = printed["users"][0]["user"]["token"]
    answer = httpx.get(
        f"{vc.url}/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200
    assert answer.json()["kind"] == "JobList"

    written = vc.ok("kubeconfig", "--file", "kube/config", "--name", "laptop", user="charlie")
    target = vc.home / "kube" / "config"
    assert "kubeconfig written to" in written.out
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert yaml.safe_load(target.read_text())["contexts"][0]["context"]["namespace"] == "team-b"


def test_kubeconfig_needs_a_valid_token(vc: Vcctl) -> None:
    refused = vc.fails(1, "kubeconfig", user=None, env={"VOLCANOWEB_TOKEN": "vw_wrong"})
    assert "Invalid" in refused.err
    unwritable = vc.fails(1, "kubeconfig", "--file", "/proc/nope/config", user="alice")
    assert "cannot write" in unwritable.err
