"""OpenAPI generation details: the Bearer token scheme, list-vs-get operation ids, and the bodies, error
responses and list parameters the REST API's views declare."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

#: On every write: Kubernetes' ``fieldValidation`` (see volcanoweb/manifests/strict.py).
FIELD_VALIDATION = OpenApiParameter(
    "fieldValidation",
    str,
    enum=["Strict", "Warn", "Ignore"],
    description="unknown and duplicate fields: Strict (default) refuses them with a 400 naming each, "
    "Warn drops them and answers Warning headers, Ignore drops them",
)

MANIFEST_BODY = {"application/json": OpenApiTypes.OBJECT, "application/yaml": OpenApiTypes.STR}
ERRORS: dict[int | str, Any] = {
    400: OpenApiTypes.OBJECT,
    401: OpenApiTypes.OBJECT,
    403: OpenApiTypes.OBJECT,
    404: OpenApiTypes.OBJECT,
}
LIST_PARAMS = [
    OpenApiParameter("limit", int, description="page size (default 100, max 500)"),
    OpenApiParameter("continue", str, description="token from metadata.continue of the previous page"),
    OpenApiParameter("labelSelector", str, description="e.g. app=x,tier!=db,env in (a,b)"),
    OpenApiParameter("q", str, description="text search in names"),
    OpenApiParameter("ordering", str, description="comma-separated fields, - prefix to reverse"),
]
FILTER_PARAMS = [
    OpenApiParameter("queue", str),
    OpenApiParameter("phase", str),
]


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Describe ``Authorization: Bearer <token>`` (tokens from /api/v1/tokens or ``manage.py create_token``)."""

    target_class = "volcanoweb.tenancy.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "A volcanoweb API token."}


class ApiSchema(AutoSchema):
    """Name collection GETs ``..._list`` and object GETs ``..._retrieve``; every write takes ``fieldValidation``."""

    def get_override_parameters(self) -> list[Any]:
        parameters: list[Any] = list(super().get_override_parameters())
        if self.method in ("POST", "PUT", "PATCH", "DELETE"):
            parameters.append(FIELD_VALIDATION)
        return parameters

    def get_operation_id(self) -> str:
        operation_id: str = super().get_operation_id()
        if self.method == "GET" and not self.path.rstrip("/").endswith("}"):
            operation_id = operation_id.replace("_retrieve", "_list")
        return operation_id
