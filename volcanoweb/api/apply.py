"""``POST /api/v1/apply``: multi-document manifests through :func:`volcanoweb.apply.apply_documents`."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb import groupcommit
from volcanoweb.api.base import ApiView
from volcanoweb.api.listing import clean_text
from volcanoweb.api.schema import ERRORS, MANIFEST_BODY
from volcanoweb.apply import apply_documents
from volcanoweb.manifests import parse


def _names_namespace(doc: dict[str, Any]) -> bool:
    meta = doc.get("metadata")
    return isinstance(meta, dict) and isinstance(meta.get("namespace"), str) and bool(meta["namespace"])


class ApplyView(ApiView):
    """``POST /api/v1/apply``: multi-document YAML or JSON, all or nothing; ``?dryRun=true`` validates only."""

    @extend_schema(
        request=MANIFEST_BODY,
        parameters=[
            OpenApiParameter("dryRun", str, enum=["true", "false", "All"]),
            OpenApiParameter("namespace", str, description="namespace for objects that name none"),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        dry_run = request.query_params.get("dryRun", "").lower() in ("true", "all", "1")
        namespace = clean_text(request.query_params.get("namespace"), "namespace", 63)
        access = self.access(request)
        documents = self.documents(request)
        if not namespace and not all(_names_namespace(doc) for doc in documents):
            namespace = access.default_namespace()  # a query: only when some document needs it
        if len(documents) == 1 and not dry_run and parse.identify(documents[0]).kind == parse.JOB.kind:
            outcomes = [groupcommit.apply_job(access, documents[0], namespace or None)]  # with concurrent ones
        else:
            outcomes = apply_documents(access, documents, default_namespace=namespace or None, dry_run=dry_run)
        items = [{**o.summary(), "object": o.object} for o in outcomes]
        return Response({"apiVersion": "v1", "kind": "ApplyResult", "dryRun": dry_run, "items": items})
