"""OpenAPI generation details: the Bearer token scheme and list-vs-get operation ids."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class BearerTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[misc]
    """Describe ``Authorization: Bearer <token>`` (tokens from /api/v1/tokens or ``manage.py create_token``)."""

    target_class = "volcanoweb.tenancy.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "A volcanoweb API token."}


class ApiSchema(AutoSchema):  # type: ignore[misc]
    """Name collection GETs ``..._list`` and object GETs ``..._retrieve``."""

    def get_operation_id(self) -> str:
        operation_id: str = super().get_operation_id()
        if self.method == "GET" and not self.path.rstrip("/").endswith("}"):
            operation_id = operation_id.replace("_retrieve", "_list")
        return operation_id
