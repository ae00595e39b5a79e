"""``/api/v1/tokens``: the caller's API tokens (create, list, revoke); who may mint one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView
from volcanoweb.api.schema import ERRORS
from volcanoweb.core.errors import BadRequest, Cause, Forbidden
from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.models import ApiToken, TokenScope


def minting_token(token: ApiToken | None) -> ApiToken | None:
    """Only a session, or a token with the admin scope, mints tokens; return the parent of the new token."""
    if token is not None and token.scope != TokenScope.ADMIN:
        raise Forbidden(
            f"the token {token.prefix}… (scope {token.scope}) cannot mint tokens: "
            "use a session or an admin-scoped token",
            kind="ApiToken",
        )
    return token


def token_manifest(token: ApiToken) -> dict[str, Any]:
    """Return a token's public fields (never the secret)."""
    return {
        "id": token.pk,
        "name": token.name,
        "prefix": token.prefix,
        "createdAt": token.created_at.isoformat(),
        "lastUsedAt": token.last_used_at.isoformat() if token.last_used_at else None,
        "expiresAt": token.expires_at.isoformat() if token.expires_at else None,
        "revoked": token.revoked_at is not None,
        "scope": token.scope,
        "parent": token.parent_id,
    }


class TokenCollectionView(ApiView):
    """``/api/v1/tokens``: the caller's API tokens; POST ``{"name": ...}`` creates one (secret shown once)."""

    body_fields = frozenset({"name", "scope", "expiresInDays"})

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 401: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        user = request.user
        assert user.is_authenticated  # the view's IsAuthenticated permission answered anonymous callers with 401
        items = [token_manifest(t) for t in ApiToken.objects.filter(user=user).order_by("-created_at")[:100]]
        return Response({"kind": "ApiTokenList", "items": items})

    @extend_schema(request={"application/json": OpenApiTypes.OBJECT}, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        body = self.mapping_body(request)
        name = body.get("name") or "api"
        if not isinstance(name, str) or "\x00" in name:
            raise BadRequest("name must be a string")
        scope = body.get("scope")
        if scope is not None and scope not in ("read", "submit", "admin"):
            raise BadRequest(
                "scope must be read, submit or admin",
                causes=[Cause("scope", f"Unsupported value: {scope!r}", "FieldValueNotSupported")],
            )
        days = body.get("expiresInDays")
        if days is not None and (not isinstance(days, int) or isinstance(days, bool) or days < 1):
            raise BadRequest(
                "expiresInDays must be a positive integer", causes=[Cause("expiresInDays", "Invalid value")]
            )
        expires = timezone.now() + timedelta(days=days) if days is not None else None
        token, raw = tenancy.create_token(
            request.user, name, scope=scope, expires_at=expires, parent=minting_token(self.token(request))
        )
        return Response({**token_manifest(token), "token": raw}, status=status.HTTP_201_CREATED)


class TokenObjectView(ApiView):
    """``DELETE /api/v1/tokens/{id}``: revoke one of the caller's tokens."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, token_id: int) -> Response:
        return Response(token_manifest(tenancy.revoke_token(request.user, token_id)))
