"""The base of every API view: JSON/YAML rendering, raw manifest bodies, the caller's access.

The REST API's views (a module per resource under /api/v1/) parse, authorize, call one service or query and
render: no writes in them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import yaml
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.http import HttpRequest
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.schemas.inspectors import ViewInspector
from rest_framework.views import APIView

from volcanoweb.api.schema import ApiSchema
from volcanoweb.core import dryrun
from volcanoweb.core.errors import ApiError, BadRequest, Cause, Conflict, Forbidden
from volcanoweb.core.stageprof import stage
from volcanoweb.feed import log
from volcanoweb.live import broadcast
from volcanoweb.manifests import strict
from volcanoweb.manifests.parse import load_mapping, parse_documents
from volcanoweb.tenancy.access import Access, access_for, within_scope
from volcanoweb.tenancy.models import ApiToken, TokenScope


class RawBodyParser(BaseParser):
    """Return the body as bytes (read at most MAX_MANIFEST_BYTES + 1); the manifests package parses it."""

    media_type = "application/json"

    # The stubs allow a parser only a mapping; DRF takes any value as ``request.data`` (here the raw bytes).
    def parse(  # type: ignore[override]
        self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> bytes:
        if stream is None:
            return b""
        data = stream.read(settings.MAX_MANIFEST_BYTES + 1)
        return data if isinstance(data, bytes) else str(data).encode()


class YamlBodyParser(RawBodyParser):
    """``application/yaml``."""

    media_type = "application/yaml"


class XYamlBodyParser(RawBodyParser):
    """``application/x-yaml``."""

    media_type = "application/x-yaml"


class TextYamlBodyParser(RawBodyParser):
    """``text/yaml``."""

    media_type = "text/yaml"


class TextBodyParser(RawBodyParser):
    """``text/plain``."""

    media_type = "text/plain"


class ApplyPatchBodyParser(RawBodyParser):
    """``application/apply-patch+yaml`` (what kubectl sends for server-side apply)."""

    media_type = "application/apply-patch+yaml"


class FormBodyParser(RawBodyParser):
    """``application/x-www-form-urlencoded``: what ``curl --data-binary @file`` sends by default."""

    media_type = "application/x-www-form-urlencoded"


class YamlRenderer(BaseRenderer):
    """Render responses as YAML for ``Accept: application/yaml`` (or ``?format=yaml``)."""

    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        if data is None:
            return b""
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


MANIFEST_PARSERS = [
    RawBodyParser,
    YamlBodyParser,
    XYamlBodyParser,
    TextYamlBodyParser,
    TextBodyParser,
    ApplyPatchBodyParser,
    FormBodyParser,
]


WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
DRY_RUN_VALUES = ("All", "all", "true", "True", "1")
NOT_DRY_RUN_VALUES = ("", "false", "False", "0")
T = TypeVar("T")


def delete_options(raw: bytes) -> dict[str, Any]:
    """Return a DELETE body's ``DeleteOptions`` (JSON, as kubectl sends it; ``{}`` for none or another body)."""
    if not raw.strip() or len(raw) > settings.MAX_MANIFEST_BYTES:
        return {}
    try:
        loaded = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def requested_dry_run(request: HttpRequest) -> bool:
    """Return True for a write that asks for a dry run: ``?dryRun=All`` (``true`` on the REST API), or a DELETE
    whose ``DeleteOptions`` body says ``dryRun: ["All"]``. Raise BadRequest for any other value."""
    values = list(request.GET.getlist("dryRun"))
    if request.method == "DELETE":
        try:
            raw = request.body
        except RequestDataTooBig:
            raw = b""  # the view answers the oversized body
        body_value = delete_options(raw).get("dryRun")
        values += body_value if isinstance(body_value, list) else [body_value] if body_value is not None else []
    for value in values:
        if not isinstance(value, str) or value not in (*DRY_RUN_VALUES, *NOT_DRY_RUN_VALUES):
            raise BadRequest(
                f"invalid dryRun {value!r}: supported values: All",
                causes=[
                    Cause("dryRun", f'Unsupported value: "{value}": supported values: "All"', "FieldValueNotSupported")
                ],
            )
    return any(value in DRY_RUN_VALUES for value in values)


@contextmanager
def rolled_back() -> Iterator[None]:
    """Run a dry run: everything in one transaction that is rolled back (the audit entries, the simulated
    cluster's rows and the controllers' on-commit work with it), the live messages it queued dropped, and
    :func:`volcanoweb.core.dryrun.active` true meanwhile (for what is outside the database)."""
    pending = broadcast.pending_snapshot()
    try:
        with dryrun.marked(), transaction.atomic():
            yield
            transaction.set_rollback(True)
    finally:
        broadcast.restore_pending(pending)


def check_preconditions(preconditions: Any, uid: str, resource_version: str, kind: str, name: str) -> None:
    """Kubernetes' DeleteOptions ``preconditions``: a 409 when the object's uid or resourceVersion differs."""
    if not isinstance(preconditions, dict):
        return
    for key, label, actual in (("uid", "UID", uid), ("resourceVersion", "ResourceVersion", resource_version)):
        wanted = preconditions.get(key)
        if wanted not in (None, "") and str(wanted) != actual:
            raise Conflict(
                f'Operation cannot be fulfilled on {kind} "{name}": Precondition failed: {label} in precondition: '
                f"{wanted}, {label} in object meta: {actual}",
                kind=kind,
                name=name,
            )


def check_url_identity(doc: dict[str, Any], namespace: str | None, name: str | None) -> None:
    """Refuse a body whose namespace or name is not the URL's; take the URL's name when it names none."""
    given = doc.get("metadata")
    meta: dict[str, Any] = given if isinstance(given, dict) else {}
    if namespace and meta.get("namespace") not in (None, "", namespace):
        raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")
    if name and meta.get("name") not in (None, "", name):
        raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})")
    if name and not meta.get("name"):
        doc["metadata"] = {**meta, "name": name}


class ApiView(APIView):
    """Base API view: Kubernetes-style JSON (or YAML) out, raw manifest bodies in.

    Every write (POST, PUT, PATCH, DELETE) of both APIs honours ``dryRun`` here, in the query or in a
    DELETE's ``DeleteOptions``: the handler runs in full, then :func:`rolled_back` undoes it (docs/adr/0025).
    """

    renderer_classes = [JSONRenderer, YamlRenderer]
    parser_classes = MANIFEST_PARSERS
    schema: ViewInspector | None = ApiSchema()

    def access(self, request: Request) -> Access:
        """Return the caller's rights (within its token's scope, for a token)."""
        token = self.token(request)
        access = access_for(request.user)
        return within_scope(access, token.scope) if token is not None else access

    def token(self, request: Request) -> ApiToken | None:
        """Return the API token the request authenticated with (None for a session)."""
        auth = request.auth
        return auth if isinstance(auth, ApiToken) else None

    @stage("api request")
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        """Serve a dry-run write inside :func:`rolled_back`; a bad ``dryRun`` is a 400 (after authentication)."""
        self.dry_run_error: ApiError | None = None
        self.dry_run = False
        if request.method in WRITE_METHODS:
            try:
                self.dry_run = requested_dry_run(request)
            except ApiError as exc:
                self.dry_run_error = exc
        if self.dry_run:
            with rolled_back():
                return super().dispatch(request, *args, **kwargs)
        return super().dispatch(request, *args, **kwargs)

    #: a POST that writes nothing (Kubernetes' self-subject reviews): allowed to read-only tokens
    read_only_post = False

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """Check ``?fieldValidation=`` and ``dryRun`` on every write (after authentication: a 401 comes first)."""
        self.field_warnings: list[str] = []
        super().initial(request, *args, **kwargs)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            error = getattr(self, "dry_run_error", None)
            if error is not None:
                raise error
            token = self.token(request)
            if token is not None and token.scope == TokenScope.READ and not self.read_only_post:
                raise Forbidden(
                    f'User "{getattr(request.user, "username", "")}" cannot {request.method} {request.path}: '
                    f"the token {token.prefix}… is read-only (scope read)"
                )
            self.field_validation(request)

    def preconditions(self, request: Request) -> Any:
        """Return a DELETE's ``DeleteOptions.preconditions`` (None when it has none)."""
        return delete_options(self.body(request)).get("preconditions")

    def delete_checked(
        self,
        request: Request,
        current: Callable[[], Any | None],
        remove: Callable[[], T],
        kind: str,
        name: str,
    ) -> T:
        """Delete with ``DeleteOptions.preconditions``: ``current`` returns the object, locked, or None when
        the caller may not see it (then ``remove`` answers its 404 or 403); one transaction for both."""
        wanted = self.preconditions(request)
        with transaction.atomic():
            if wanted:
                obj = current()
                if obj is not None:
                    check_preconditions(wanted, str(obj.uid), str(obj.resource_version), kind, name)
            return remove()

    def field_validation(self, request: Request) -> str:
        """Return the request's ``fieldValidation`` mode (``Strict`` by default, as kubectl sends)."""
        return strict.check_mode(request.query_params.get("fieldValidation"))

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        """Add one ``Warning: 299 - "..."`` header per field dropped under ``fieldValidation=Warn``; give the
        objects a write answers the revision their commit got (ADR 0024), on both APIs."""
        response = super().finalize_response(request, response, *args, **kwargs)
        data = getattr(response, "data", None)
        written = request.method not in ("GET", "HEAD", "OPTIONS") and 200 <= response.status_code < 300
        if written and not self.dry_run and isinstance(data, dict):
            items = data.get("items")
            listed = [i.get("object", i) for i in items if isinstance(i, dict)] if isinstance(items, list) else []
            log.restamp([data, *listed])
        warnings = getattr(self, "field_warnings", [])
        if warnings and response.status_code < 400:
            response.headers["Warning"] = ", ".join(strict.warning_header(text) for text in warnings)
        return response

    def body(self, request: Request) -> bytes:
        """Return the raw request body."""
        data: object = request.data  # the raw bytes of RawBodyParser (typed as a dict in the stubs)
        if isinstance(data, bytes):
            return data
        return b""

    def documents(self, request: Request) -> list[dict[str, Any]]:
        """Return the parsed documents of the body, duplicate and unknown fields handled per ``fieldValidation``."""
        return parse_documents(
            self.body(request), field_validation=self.field_validation(request), warnings=self.field_warnings
        )

    def single_document(self, request: Request, kind: str) -> dict[str, Any]:
        """Return the one document of the body, which must be of ``kind``."""
        documents = self.documents(request)
        if len(documents) != 1:
            raise BadRequest(f"expected exactly one {kind} object, got {len(documents)}; use /api/v1/apply for several")
        doc = documents[0]
        if doc.get("kind") != kind:
            raise BadRequest(f"expected a {kind} object at this URL, got kind {doc.get('kind')!r}", kind=kind)
        return doc

    #: The fields a small object body (:meth:`mapping_body`) may carry; ``None``: not checked.
    body_fields: frozenset[str] | None = None

    def mapping_body(self, request: Request, fields: frozenset[str] | None = None) -> dict[str, Any]:
        """Return a small JSON/YAML object body ({} when empty), with the same limits as manifests.

        ``fields`` (or the view's :attr:`body_fields`) are the known keys: others, and keys given twice,
        are refused or dropped per ``fieldValidation``.
        """
        raw = self.body(request)
        if not raw.strip():
            return {}
        known = fields if fields is not None else self.body_fields
        return load_mapping(raw, known, field_validation=self.field_validation(request), warnings=self.field_warnings)


def list_body(kind: str, items: list[dict[str, Any]], meta: dict[str, Any], api_version: str = "v1") -> dict[str, Any]:
    """Return a Kubernetes list: ``{"apiVersion", "kind": "<Kind>List", "metadata", "items"}``."""
    return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": meta, "items": items}
