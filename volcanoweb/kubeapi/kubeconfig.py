"""Generated kubeconfigs: the Kubernetes API's URL, the server certificate and a bearer token (the caller's
own when it called with one, else a new one), named after the server and the user; ``POST
/api/v1/kubeconfig`` serves them (the dashboard's download builds them here too)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlsplit

import yaml
from django.conf import settings
from django.http import HttpRequest
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.listing import clean_text
from volcanoweb.kubeapi.base import KubeView
from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.access import access_for
from volcanoweb.tenancy.models import ApiToken


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


def names(server: str, username: str) -> tuple[str, str, str]:
    """Return the (cluster, user, context) names of a kubeconfig: after the server and the user, so that
    several users' kubeconfigs merge (``KUBECONFIG=alice:carol`` shows both contexts)."""
    where = urlsplit(server).netloc or server
    return f"volcanoweb-{where}", f"{username}@{where}", f"{username}@{where}"


def build(
    request: HttpRequest,
    user: Any,
    *,
    token_name: str = "kubeconfig",
    token: str | None = None,
    parent: ApiToken | None = None,
) -> tuple[dict[str, Any], str]:
    """Return (kubeconfig, raw token) for ``user``: ``token`` (a valid token the caller holds) or a new token
    named ``token_name`` (minted by ``parent``, for a request made with an admin-scoped token); the context's
    namespace is the user's default namespace."""
    raw = token if token else tenancy.create_token(user, token_name, parent=parent)[1]
    cluster: dict[str, Any] = {"server": server_url(request)}
    ca = certificate_authority_data()
    if ca:
        cluster["certificate-authority-data"] = ca
    namespace = access_for(user).default_namespace()
    cluster_name, user_name, context = names(cluster["server"], user.username)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user_name, "user": {"token": raw}}],
        "contexts": [
            {"name": context, "context": {"cluster": cluster_name, "user": user_name, "namespace": namespace}}
        ],
        "current-context": context,
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


class KubeconfigView(KubeView):
    """``POST /api/v1/kubeconfig``: a kubeconfig for the caller; JSON, or YAML with ``Accept: application/yaml``.

    A caller that authenticated with a bearer token gets that token back (it is valid: it just worked);
    ``?newToken=true``, ``?name=`` (the new token's name) or a session (the dashboard) mint a new one.
    """

    def post(self, request: Request) -> Response:
        from volcanoweb.api.tokens import minting_token

        name = clean_text(request.query_params.get("name"), "name", 100)
        new = request.query_params.get("newToken") in ("true", "1") or bool(name)
        held = None
        if not new and request.auth is not None:
            parts = request.headers.get("Authorization", "").split()
            held = parts[1] if len(parts) == 2 and parts[0].lower() == "bearer" else None
        parent = None if held else minting_token(self.token(request))
        config, _ = build(request._request, request.user, token_name=name or "kubeconfig", token=held, parent=parent)
        return Response(config, status=status.HTTP_201_CREATED)
