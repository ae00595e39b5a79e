"""The base of every Kubernetes-shaped view: the body parsers it accepts (the patch media types too) and the
405 it answers for a verb a kind does not serve.

Thin adapters like the REST API's: authenticate (tokens or session), authorize through the tenancy
helpers, call one service per write, render. Errors are ``Status`` bodies (the API's exception handler).
"""

from __future__ import annotations

from volcanoweb.api.base import MANIFEST_PARSERS, ApiView, RawBodyParser
from volcanoweb.core.errors import ApiError
from volcanoweb.kubeapi import patch


class MergePatchParser(RawBodyParser):
    """``application/merge-patch+json``."""

    media_type = patch.MERGE


class JsonPatchParser(RawBodyParser):
    """``application/json-patch+json``."""

    media_type = patch.JSON_PATCH


class StrategicPatchParser(RawBodyParser):
    """``application/strategic-merge-patch+json``."""

    media_type = patch.STRATEGIC


class AnyBodyParser(RawBodyParser):
    """A body without a Content-Type (some clients send JSON without one): read as JSON or YAML."""

    media_type = "*/*"


class MethodNotAllowed(ApiError):
    """405: the verb is not served for this kind (pods, events and namespaces are read-only)."""

    code = 405
    reason = "MethodNotAllowed"


class KubeView(ApiView):
    """Base of the Kubernetes-shaped views (no OpenAPI schema of their own in /api/schema/)."""

    schema = None
    parser_classes = [*MANIFEST_PARSERS, MergePatchParser, JsonPatchParser, StrategicPatchParser, AnyBodyParser]
