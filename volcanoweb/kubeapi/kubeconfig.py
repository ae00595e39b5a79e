"""Generated kubeconfigs: the Kubernetes API's URL, the server certificate and a new bearer token."""

from __future__ import annotations

import base64
from typing import Any

import yaml
from django.conf import settings
from django.http import HttpRequest

from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.access import access_for

CLUSTER = "volcanoweb"


def server_url(request: HttpRequest) -> str:
    """Return the HTTPS URL kubectl should use: KUBE_API_URL, this request's origin when it is HTTPS, or the
    embedded HTTPS listener on the same host (kubectl sends tokens only over TLS)."""
    if settings.KUBE_API_URL:
        return str(settings.KUBE_API_URL).rstrip("/")
    if request.is_secure():
        return f"https://{request.get_host()}"
    host = request.get_host()
    name, _, port = host.rpartition(":") if host.count(":") == 1 or host.endswith("]") else (host, "", "")
    if not name:
        name, port = host, ""
    https_port = settings.HTTPS_PORT
    if https_port is None:
        https_port = (int(port) if port.isdigit() else 80) + 443
    return f"https://{name}:{https_port}"


def certificate_authority_data() -> str | None:
    """Return the embedded listener's self-signed certificate (base64 PEM), when there is one."""
    cert = settings.TLS_DIR / "server.crt"
    if settings.KUBE_API_URL or not cert.exists():
        return None
    return base64.b64encode(cert.read_bytes()).decode()


def build(request: HttpRequest, user: Any, *, token_name: str = "kubeconfig") -> tuple[dict[str, Any], str]:
    """Create a token for ``user`` and return (kubeconfig, raw token); the context's namespace is the user's
    default namespace."""
    _, raw = tenancy.create_token(user, token_name)
    cluster: dict[str, Any] = {"server": server_url(request)}
    ca = certificate_authority_data()
    if ca:
        cluster["certificate-authority-data"] = ca
    namespace = access_for(user).default_namespace()
    user_name = f"{user.username}@{CLUSTER}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER, "cluster": cluster}],
        "users": [{"name": user_name, "user": {"token": raw}}],
        "contexts": [{"name": CLUSTER, "context": {"cluster": CLUSTER, "user": user_name, "namespace": namespace}}],
        "current-context": CLUSTER,
        "preferences": {},
    }
    return config, raw


def dump(config: dict[str, Any]) -> str:
    """Return the kubeconfig as YAML."""
    return yaml.safe_dump(config, sort_keys=False)
