"""Generated kubeconfigs: the Kubernetes API's URL, the server certificate and a new bearer token."""

from __future__ import annotations

import base64
from typing import Any

import yaml
from django.conf import settings
from django.http import HttpRequest

from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.access import access_for
from volcanoweb.tenancy.models import ApiToken

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


def build(
    request: HttpRequest, user: Any, *, token_name: str = "kubeconfig", parent: ApiToken | None = None
) -> tuple[dict[str, Any], str]:
    """Create a token for ``user`` (minted by ``parent``, for a request made with an admin-scoped token) and
    return (kubeconfig, raw token); the context's namespace is the user's default namespace."""
    _, raw = tenancy.create_token(user, token_name, parent=parent)
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


def dump(config: dict[str, Any], token: ApiToken | None = None) -> str:
    """Return the kubeconfig as YAML (headed by a comment with the token's scope and expiry, when given)."""
    text = yaml.safe_dump(config, sort_keys=False)
    if token is None:
        return text
    expires = token.expires_at.isoformat() if token.expires_at else "never"
    return f"# token {token.prefix}… scope {token.scope}, expires {expires}\n{text}"


def latest_token(user: Any, name: str) -> ApiToken | None:
    """Return the user's newest token of that name (the one :func:`build` just created)."""
    return ApiToken.objects.filter(user=user, name=name).order_by("-created_at", "-pk").first()
