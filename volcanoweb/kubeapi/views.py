"""The Kubernetes API shape for the kinds volcanoweb owns: discovery, version, OpenAPI and resource verbs.

Thin adapters like the REST API's: authenticate (tokens or session), authorize through the tenancy
helpers, call one service per write, render. Errors are ``Status`` bodies (the API's exception handler).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import yaml
from django.core.handlers.asgi import ASGIRequest
from django.db import transaction
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import MANIFEST_PARSERS, ApiView, RawBodyParser, check_preconditions
from volcanoweb.api.listing import apply_label_selector, clean_text
from volcanoweb.core.errors import ApiError, BadRequest, Cause, Conflict, Errors, NotFound, invalid, not_found
from volcanoweb.feed import log
from volcanoweb.jobs import services as jobs
from volcanoweb.kubeapi import lists, openapi, patch, query, watch
from volcanoweb.kubeapi.registry import BY_GROUP_VERSION, RESOURCES, KubeResource
from volcanoweb.kubeapi.selection import Selection
from volcanoweb.live import notify
from volcanoweb.manifests import strict
from volcanoweb.manifests.marked import duplicate_fields
from volcanoweb.manifests.parse import load_patch, parse_documents
from volcanoweb.tenancy.access import Access, resolve_namespace

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-volcanoweb",
    "gitCommit": "volcanoweb",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "python",
    "compiler": "cpython",
    "platform": "linux/amd64",
}
PROPAGATION = ("Background", "Foreground", "Orphan")
PATCH_ATTEMPTS = 5
#: The known fields of the kinds only the Kubernetes API writes (Volcano's bus.volcano.sh Command: an
#: OwnerReference as ``target``); the others are :data:`volcanoweb.manifests.strict.SCHEMAS`.
KUBE_SCHEMAS: dict[str, Any] = {
    "Command": {
        **dict.fromkeys(("apiVersion", "kind", "action", "reason", "message"), strict.ANY),
        "metadata": strict.METADATA,
        "target": dict.fromkeys(("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"), strict.ANY),
    }
}
#: The most operations in one JSON patch (the Kubernetes API server's limit).
MAX_JSON_PATCH_OPERATIONS = 10_000


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


def _group_versions() -> list[tuple[str, str]]:
    return sorted({key for key in BY_GROUP_VERSION if key[0]})


def _group_body(group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{g}/{v}", "version": v} for g, v in _group_versions() if g == group]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def _resource_list(group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for resource in BY_GROUP_VERSION[(group, version)].values():
        entry: dict[str, Any] = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.info.namespaced,
            "kind": resource.info.kind,
            "verbs": resource.verbs,
        }
        if resource.short_names:
            entry["shortNames"] = list(resource.short_names)
        if resource.categories:
            entry["categories"] = list(resource.categories)
        resources.append(entry)
        if resource.model is not None and resource.plural not in ("events", "namespaces", "commands"):
            resources.append(
                {
                    "name": f"{resource.plural}/status",
                    "singularName": "",
                    "namespaced": resource.info.namespaced,
                    "kind": resource.info.kind,
                    "verbs": ["get"],
                }
            )
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


class APIVersionsView(KubeView):
    """``/api``: the core group's versions."""

    def get(self, request: Request) -> Response:
        address = request.get_host()
        return Response(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
            }
        )


class APIGroupListView(KubeView):
    """``/apis``: the Volcano groups and scheduling.k8s.io."""

    def get(self, request: Request) -> Response:
        groups = sorted({g for g, _ in _group_versions()})
        return Response({"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_body(g) for g in groups]})


class APIGroupView(KubeView):
    """``/apis/{group}``."""

    def get(self, request: Request, group: str) -> Response:
        if not any(g == group for g, _ in _group_versions()):
            raise NotFound(f"the server could not find the requested resource (group {group})")
        return Response(_group_body(group))


class APIResourceListView(KubeView):
    """``/api/v1`` and ``/apis/{group}/{version}``: the resources with verbs, short names and categories."""

    def get(self, request: Request, version: str, group: str = "") -> Response:
        if (group, version) not in BY_GROUP_VERSION:
            raise NotFound(f"the server could not find the requested resource ({group}/{version})")
        return Response(_resource_list(group, version))


class VersionView(KubeView):
    """``/version``: what ``kubectl version`` prints for the server (public, as on kube-apiserver, whose
    ``system:public-info-viewer`` role lets anonymous callers read it)."""

    permission_classes = [AllowAny]

    def get(self, request: Request) -> Response:
        return Response(SERVER_VERSION)


class OpenAPIV2View(KubeView):
    """``/openapi/v2``: a Swagger 2.0 document with a path per verb (JSON only)."""

    def get(self, request: Request) -> Response:
        return Response(openapi.v2_document())


class OpenAPIV3RootView(KubeView):
    """``/openapi/v3``: the list of group-version documents."""

    def get(self, request: Request) -> Response:
        return Response(openapi.v3_root())


class OpenAPIV3GroupView(KubeView):
    """``/openapi/v3/apis/{group}/{version}`` and ``/openapi/v3/api/v1``."""

    def get(self, request: Request, version: str, group: str = "") -> Response:
        if (group, version) not in BY_GROUP_VERSION:
            raise NotFound(f"the server could not find the requested resource ({group}/{version})")
        return Response(openapi.v3_document(group, version))


def _dry_run(request: Request) -> bool:
    values = request.query_params.getlist("dryRun")
    for value in values:
        if value not in ("All", ""):
            raise BadRequest(
                f"invalid dryRun {value!r}: supported values: All",
                causes=[
                    Cause("dryRun", f'Unsupported value: "{value}": supported values: "All"', "FieldValueNotSupported")
                ],
            )
    return "All" in values


def _field_validation(request: Request) -> str:
    """Return ``?fieldValidation=`` (``Strict`` when absent, as on the REST API) or raise a 400 naming it."""
    return strict.check_mode(request.query_params.get("fieldValidation"))


def check_fields(
    resource: KubeResource, doc: dict[str, Any], mode: str, warnings: list[str], *, source: Any = None
) -> dict[str, Any]:
    """Apply ``fieldValidation`` to the object about to be written: its unknown fields (removed from ``doc``
    whatever the mode, so they are never stored) and the repeated keys of what the client sent (``source``,
    the body of a patch; ``doc`` itself for a create or an update).

    ``Strict`` raises the API server's 400: ``<Kind> in version "<v>" cannot be handled as a <Kind>: strict
    decoding error: unknown field "spec.x", duplicate field "y"``, with one cause per field
    (``FieldValueUnknown`` / ``FieldValueDuplicate``); ``Warn`` appends the same texts to ``warnings`` (one
    ``Warning`` header each); ``Ignore`` drops them silently.
    """
    mode = strict.check_mode(mode)
    duplicates = duplicate_fields(doc if source is None else source)
    schema = strict.SCHEMAS.get(resource.info.kind, KUBE_SCHEMAS.get(resource.info.kind))
    unknown = strict.unknown_fields(doc, schema) if schema is not None else []
    causes = [Cause(path, f'unknown field "{path}"', "FieldValueUnknown") for path in unknown]
    causes += [Cause(path, f'duplicate field "{path}"', "FieldValueDuplicate") for path in duplicates]
    if not causes or mode == strict.IGNORE:
        return doc
    notes = [cause.message for cause in causes]
    if mode == strict.WARN:
        warnings.extend(notes)
        return doc
    kind, version = resource.info.kind, resource.info.api_version.rsplit("/", 1)[-1]
    raise BadRequest(
        f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: ' + ", ".join(notes),
        kind=kind,
        group=resource.group,
        causes=causes,
    )


def _success(resource: KubeResource, name: str, uid: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "group": resource.group, "kind": resource.plural}
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def _run(call: Callable[[], Any], *, dry_run: bool) -> Any:
    """Run one service call in a transaction; a dry run is rolled back and leaves no audit entry."""
    try:
        with transaction.atomic():
            result = call()
            if dry_run:
                transaction.set_rollback(True)
    except Exception:
        notify.discard()
        raise
    if dry_run:
        notify.discard()
    return result


class ResourceView(KubeView):
    """Every verb on ``/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/status]]`` (and core ``/api/v1``)."""

    group = ""
    version = "v1"

    # -- lookups -------------------------------------------------------------------------------------------------

    def resource(self, group: str, version: str, plural: str) -> KubeResource:
        found = BY_GROUP_VERSION.get((group, version), {}).get(plural)
        if found is None:
            where = f"{group}/{version}" if group else version
            raise NotFound(f"the server could not find the requested resource ({plural}.{where})")
        return found

    def scoped(self, access: Access, resource: KubeResource, namespace: str | None, verb: str) -> Any:
        if namespace is not None and not resource.info.namespaced:
            raise NotFound(f"the server could not find the requested resource ({resource.plural} is cluster-scoped)")
        if namespace is not None:
            resolve_namespace(access, namespace, verb, resource.info)
        queryset = resource.base(access)
        if namespace is not None:
            queryset = queryset.filter(**{resource.namespace_field: namespace})
        return queryset

    def find(self, access: Access, resource: KubeResource, namespace: str | None, name: str) -> Any:
        if resource.info.namespaced and namespace is None:
            raise NotFound(f"the server could not find the requested resource ({resource.plural} is namespaced)")
        queryset = self.scoped(access, resource, namespace, "get")
        if resource.plural in ("events", "commands"):
            for obj in queryset.order_by("-pk")[:5000]:
                if resource.render(obj)["metadata"]["name"] == name:
                    return obj
            obj = None
        else:
            obj = queryset.filter(name=name).first()
        if obj is None:
            raise not_found(resource.info.qualified_resource, name, resource.info.kind, resource.group)
        return obj

    def kwargs_of(self, kwargs: dict[str, Any]) -> tuple[KubeResource, str | None, str | None, str | None]:
        group, version = kwargs.get("group", self.group), kwargs.get("version", self.version)
        resource = self.resource(group, version, kwargs["plural"])
        return resource, kwargs.get("namespace"), kwargs.get("name"), kwargs.get("subresource")

    # -- reads ---------------------------------------------------------------------------------------------------

    def get(self, request: Request, **kwargs: Any) -> HttpResponseBase:
        resource, namespace, name, subresource = self.kwargs_of(kwargs)
        access = self.access(request)
        params = request.query_params
        if params.get("watch") in ("1", "true", "True"):
            return self.watch(request, access, resource, namespace, name)
        if name is not None:
            if subresource not in (None, "status"):
                raise NotFound(f"the server could not find the requested resource ({resource.plural}/{subresource})")
            obj = resource.render(self.find(access, resource, namespace, name))
            if query.wants_table(request.headers.get("Accept", "")):
                return Response(
                    query.table(resource, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")})
                )
            return Response(obj)
        selection = self.selection(request, access, resource, namespace, None, "list")
        objects, meta = lists.page(selection, params)
        if query.wants_table(request.headers.get("Accept", "")):
            return Response(query.table(resource, objects, meta))
        list_version = resource.info.api_version
        return Response(
            {"apiVersion": list_version, "kind": f"{resource.info.kind}List", "metadata": meta, "items": objects}
        )

    def selection(
        self,
        request: Request,
        access: Access,
        resource: KubeResource,
        namespace: str | None,
        name: str | None,
        verb: str,
    ) -> Selection:
        """What a list or watch selects: authorized first (403 before anything is read), then the selectors."""
        params = request.query_params
        self.scoped(access, resource, namespace, verb)
        selector = clean_text(params.get("fieldSelector"), "fieldSelector", 2000) or ""
        if name is not None:
            selector = ",".join(s for s in (selector, f"metadata.name={name}") if s)
        terms = query.parse_field_selector(resource, selector)
        label_selector = clean_text(params.get("labelSelector"), "labelSelector", 2000)
        return Selection.build(resource, access, namespace, terms, label_selector)

    def watch(
        self, request: Request, access: Access, resource: KubeResource, namespace: str | None, name: str | None
    ) -> StreamingHttpResponse:
        params = request.query_params
        selection = self.selection(request, access, resource, namespace, name, "watch")
        since = query.check_watch_version(clean_text(params.get("resourceVersion"), "resourceVersion", 40))
        initial = params.get("sendInitialEvents") in ("true", "1") if "sendInitialEvents" in params else since is None
        stream = watch.Stream(
            selection,
            since=since,
            initial=initial,
            bookmarks=params.get("allowWatchBookmarks") in ("true", "1"),
            as_table=query.wants_table(request.headers.get("Accept", "")),
            timeout=watch.timeout_seconds(params.get("timeoutSeconds")),
        )
        driver = watch.events if isinstance(request._request, ASGIRequest) else watch.events_sync
        response = StreamingHttpResponse(driver(stream), content_type="application/json")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response

    # -- writes --------------------------------------------------------------------------------------------------

    def writable(self, resource: KubeResource, verb: str) -> None:
        if resource.plural == "commands" and verb in ("create", "delete", "deletecollection"):
            return  # Commands are created, and deleted before the controller acts on them; never changed
        if not resource.writable:
            raise MethodNotAllowed(
                f'{resource.info.qualified_resource} is read-only here: the verb "{verb}" is not supported',
                kind=resource.info.kind,
                group=resource.group,
            )

    def one_document(self, request: Request, resource: KubeResource) -> dict[str, Any]:
        """Parse the body of a create or an update (the manifests' limits) and apply ``fieldValidation``."""
        documents = parse_documents(self.body(request))
        if len(documents) != 1:
            raise BadRequest(f"expected exactly one {resource.info.kind} object, got {len(documents)}")
        doc = documents[0]
        if doc.get("kind") != resource.info.kind or doc.get("apiVersion") != resource.info.api_version:
            raise BadRequest(
                f"the API version in the data ({doc.get('apiVersion')}) and kind ({doc.get('kind')}) do not match "
                f"the URL ({resource.info.api_version}, {resource.info.kind})",
                causes=[Cause("kind", f"Invalid value: {doc.get('kind')!r}")],
            )
        return check_fields(resource, doc, _field_validation(request), self.field_warnings)

    def identity(self, doc: dict[str, Any], resource: KubeResource, namespace: str | None, name: str | None) -> None:
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
            doc["metadata"] = meta
        if namespace is not None and meta.get("namespace") not in (None, "", namespace):
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request",
                causes=[Cause("metadata.namespace", f"Invalid value: {meta.get('namespace')!r}")],
            )
        if resource.info.namespaced and namespace is not None:
            meta["namespace"] = namespace
        if name is not None and meta.get("name") not in (None, "", name):
            raise BadRequest(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})",
                causes=[Cause("metadata.name", f"Invalid value: {meta.get('name')!r}")],
            )
        if name is not None:
            meta["name"] = name

    def post(self, request: Request, **kwargs: Any) -> Response:
        resource, namespace, name, _ = self.kwargs_of(kwargs)
        if name is not None:
            raise MethodNotAllowed("POST is not supported on an object; use PUT or PATCH")
        self.writable(resource, "create")
        _field_validation(request)
        dry_run = _dry_run(request)
        access = self.access(request)
        doc = self.one_document(request, resource)
        self.identity(doc, resource, namespace, None)
        if resource.plural == "commands":
            return Response(self.create_command(access, doc, namespace, dry_run), status=status.HTTP_201_CREATED)
        apply = resource.apply
        assert apply is not None
        outcome = _run(lambda: apply(access, doc, namespace, mode="create"), dry_run=dry_run)
        return Response(outcome.object, status=status.HTTP_201_CREATED)

    def create_command(self, access: Access, doc: dict[str, Any], namespace: str | None, dry_run: bool) -> Any:
        target = doc.get("target")
        if not isinstance(target, dict) or target.get("kind", "Job") != "Job" or not target.get("name"):
            raise BadRequest(
                "a Command needs target.kind Job and target.name (queue commands: use the Queue's state)",
                causes=[Cause("target", "Required value: a Job reference", "FieldValueRequired")],
            )
        reason, message = doc.get("reason") or "", doc.get("message") or ""
        if not isinstance(reason, str) or not isinstance(message, str):
            raise BadRequest("reason and message must be strings", causes=[Cause("reason", "Invalid value")])
        assert namespace is not None
        meta = doc["metadata"]
        name, generate = str(meta.get("name") or ""), str(meta.get("generateName") or "")
        if not name and not generate:
            errors = Errors()
            errors.add("metadata.name", "Required value: name or generateName is required", "FieldValueRequired")
            raise invalid("Command", "bus.volcano.sh", "", errors)
        command = _run(
            lambda: jobs.issue_job_command(
                access,
                namespace,
                str(target["name"]),
                doc.get("action"),
                reason,
                message,
                command_name=name,
                generate_name=generate,
            ),
            dry_run=dry_run,
        )
        return RESOURCES_BY_PLURAL["commands"].render(command)

    def put(self, request: Request, **kwargs: Any) -> Response:
        resource, namespace, name, subresource = self.kwargs_of(kwargs)
        self.writable(resource, "update")
        if name is None:
            raise MethodNotAllowed("PUT needs an object name")
        if subresource is not None:
            raise MethodNotAllowed(f"the {subresource} subresource is read-only: the controllers own it")
        _field_validation(request)
        dry_run = _dry_run(request)
        access = self.access(request)
        doc = self.one_document(request, resource)
        self.identity(doc, resource, namespace, name)
        if not doc["metadata"].get("resourceVersion"):
            # Kubernetes requires a resourceVersion on an update of a custom resource.
            raise _invalid_update(resource, name)
        apply = resource.apply
        assert apply is not None
        outcome = _run(lambda: apply(access, doc, namespace, mode="update"), dry_run=dry_run)
        return Response(outcome.object)

    def patch(self, request: Request, **kwargs: Any) -> Response:
        resource, namespace, name, subresource = self.kwargs_of(kwargs)
        self.writable(resource, "patch")
        if name is None:
            raise MethodNotAllowed("PATCH needs an object name")
        if subresource is not None:
            raise MethodNotAllowed(f"the {subresource} subresource is read-only: the controllers own it")
        _field_validation(request)
        dry_run = _dry_run(request)
        access = self.access(request)
        content_type = (request.content_type or "").split(";")[0].strip()
        if content_type not in patch.PATCH_TYPES or (content_type == patch.STRATEGIC and _custom(resource)):
            # Custom resources (the Volcano kinds, Commands) take no strategic merge patch on kube-apiserver.
            accepted = [t for t in patch.PATCH_TYPES if not (t == patch.STRATEGIC and _custom(resource))]
            raise patch.UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types include: "
                + ", ".join(accepted)
            )
        mode = _field_validation(request)
        raw = self.body(request)
        body = _load_patch(raw, content_type)
        assert resource.apply is not None
        apply = resource.apply

        def checked(doc: dict[str, Any]) -> dict[str, Any]:
            # Recomputed on every attempt: a retry after a conflict must not repeat the warnings.
            self.field_warnings.clear()
            return check_fields(resource, doc, mode, self.field_warnings, source=body)

        def change() -> Any:
            try:
                current: dict[str, Any] | None = resource.render(self.find(access, resource, namespace, name))
            except NotFound:
                if content_type != patch.APPLY:
                    raise
                current = None
            if content_type == patch.APPLY:
                if not request.query_params.get("fieldManager"):
                    raise BadRequest(
                        "fieldManager is required for apply requests",
                        causes=[Cause("fieldManager", "Required value", "FieldValueRequired")],
                    )
                if not isinstance(body, dict):
                    raise BadRequest("an apply patch must be one object")
                doc = checked(copy.deepcopy(body))
                self.identity(doc, resource, namespace, name)
                if current is not None:
                    doc["metadata"] = {**doc["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
                    return apply(access, doc, namespace, mode="update")
                return apply(access, doc, namespace, mode="create")
            assert current is not None
            before_version = current["metadata"]["resourceVersion"]
            if content_type == patch.JSON_PATCH:
                doc = patch.json_patch(current, body)
            else:
                if not isinstance(body, dict):
                    raise BadRequest("a merge patch must be a JSON object")
                doc = patch.merge_patch(current, body)
            if not isinstance(doc, dict):
                raise BadRequest("the patched object is not an object")
            self.identity(doc, resource, namespace, name)
            meta = doc["metadata"]
            # A patch that names no resourceVersion applies to the version it was computed from.
            if isinstance(body, dict) and not (body.get("metadata") or {}).get("resourceVersion"):
                meta["resourceVersion"] = before_version
            for key in ("uid", "creationTimestamp", "generation"):
                meta.pop(key, None)
            doc.pop("status", None)
            checked(doc)
            return apply(access, doc, namespace, mode="update")

        pinned = isinstance(body, dict) and bool((body.get("metadata") or {}).get("resourceVersion"))
        for attempt in range(PATCH_ATTEMPTS):
            try:
                outcome = _run(change, dry_run=dry_run)
                break
            except Conflict:
                # A controller wrote the object between the read and the write: like the API server, recompute
                # the patch on the new version (unless the caller pinned a resourceVersion).
                if pinned or attempt == PATCH_ATTEMPTS - 1:
                    raise
        created = outcome.action == "created"
        return Response(outcome.object, status=201 if created else 200)

    def delete(self, request: Request, **kwargs: Any) -> Response:
        resource, namespace, name, subresource = self.kwargs_of(kwargs)
        self.writable(resource, "delete")
        if subresource is not None:
            raise MethodNotAllowed(f"cannot delete the {subresource} subresource")
        dry_run = _dry_run(request) or self.dry_run  # the query's, or DeleteOptions.dryRun (ApiView.dispatch)
        access = self.access(request)
        options = self.delete_options(request)
        body_dry_run = options.get("dryRun")
        dry_run = dry_run or "All" in (body_dry_run if isinstance(body_dry_run, list) else [body_dry_run])
        policy = options.get("propagationPolicy")
        if policy == "Orphan" and resource.plural == "jobs":
            raise BadRequest(
                "propagationPolicy Orphan is not supported: a Volcano job's pods and PodGroup go with it",
                causes=[Cause("propagationPolicy", 'Unsupported value: "Orphan"', "FieldValueNotSupported")],
            )
        assert resource.delete is not None
        remove = resource.delete
        if resource.propagates and policy:
            remove = functools.partial(resource.delete, propagation=policy)
        if name is not None:
            obj = self.find(access, resource, namespace, name)
            wanted = options.get("preconditions")

            def checked_remove() -> Any:
                if wanted:  # DeleteOptions.preconditions, against the row as locked for the delete
                    locked = type(obj).objects.select_for_update().filter(pk=obj.pk).first()
                    if locked is not None:
                        uid, version = str(getattr(locked, "uid", "")), str(getattr(locked, "resource_version", ""))
                        check_preconditions(wanted, uid, version, resource.info.qualified_resource, name)
                return remove(access, namespace, name)

            outcome = _run(checked_remove, dry_run=dry_run)
            if outcome.object.get("metadata", {}).get("deletionTimestamp"):
                return Response(outcome.object)
            return Response(_success(resource, name, str(getattr(obj, "uid", ""))))
        # deletecollection
        queryset = self.scoped(access, resource, namespace, "deletecollection")
        terms = query.parse_field_selector(
            resource, clean_text(request.query_params.get("fieldSelector"), "fieldSelector", 2000)
        )
        queryset = query.filter_fields(resource, queryset, terms)
        selector = clean_text(request.query_params.get("labelSelector"), "labelSelector", 2000)
        if selector:
            queryset = apply_label_selector(queryset, selector)
        targets = [
            (
                getattr(o, resource.namespace_field, None),
                jobs.command_name(o) if resource.plural == "commands" else o.name,
            )
            for o in queryset.order_by(*resource.order)
        ]

        def remove_all() -> list[dict[str, Any]]:
            return [remove(access, ns, obj_name).object for ns, obj_name in targets]

        removed = _run(remove_all, dry_run=dry_run)
        meta = {"resourceVersion": str(log.head()[0])}
        return Response(
            {
                "apiVersion": resource.info.api_version,
                "kind": f"{resource.info.kind}List",
                "metadata": meta,
                "items": removed,
            }
        )

    def delete_options(self, request: Request) -> dict[str, Any]:
        options: dict[str, Any] = {}
        raw = self.body(request)
        if raw.strip():
            try:
                loaded = yaml.safe_load(raw.decode("utf-8"))
            except (yaml.YAMLError, UnicodeDecodeError):
                raise BadRequest("the body of a DELETE must be DeleteOptions (JSON)") from None
            if isinstance(loaded, dict):
                options.update(loaded)
        policy = request.query_params.get("propagationPolicy")
        if policy:
            options["propagationPolicy"] = policy
        value = options.get("propagationPolicy")
        if value is not None and value not in PROPAGATION:
            raise BadRequest(
                f"invalid propagationPolicy {value!r}: supported values: Background, Foreground, Orphan",
                causes=[Cause("propagationPolicy", f"Unsupported value: {value!r}", "FieldValueNotSupported")],
            )
        return options


RESOURCES_BY_PLURAL = {r.plural: r for r in RESOURCES}


def _custom(resource: KubeResource) -> bool:
    """Return True for a kind that is a custom resource on a real cluster (Volcano's CRDs)."""
    return resource.group.endswith("volcano.sh")


def _invalid_update(resource: KubeResource, name: str) -> ApiError:
    errors = Errors()
    errors.add(
        "metadata.resourceVersion",
        "Invalid value: 0x0: must be specified for an update",
        "FieldValueInvalid",
    )
    return invalid(resource.info.kind, resource.group, name, errors)


def _load_patch(raw: bytes, content_type: str) -> Any:
    """Parse a PATCH body with the manifests' limits (size, depth, aliases, NUL, UTF-8, numbers)."""
    if not raw.strip():
        raise BadRequest("the PATCH body is empty", causes=[Cause("", "Required value", "FieldValueRequired")])
    if content_type == patch.APPLY:
        documents = parse_documents(raw)
        if len(documents) != 1:
            raise BadRequest("an apply patch must be exactly one object")
        return documents[0]
    body = load_patch(raw)
    if content_type == patch.JSON_PATCH:
        if not isinstance(body, list):
            raise BadRequest(
                "a JSON patch must be a list of operations",
                causes=[Cause("", "Invalid value: a JSON patch must be a list of operations", "FieldValueInvalid")],
            )
        if len(body) > MAX_JSON_PATCH_OPERATIONS:
            raise BadRequest(
                f"the JSON patch has {len(body)} operations, the limit is {MAX_JSON_PATCH_OPERATIONS}",
                causes=[
                    Cause("", f"Too many: {len(body)}: the limit is {MAX_JSON_PATCH_OPERATIONS}", "FieldValueTooMany")
                ],
            )
    return body


# The core v1 paths that the REST API also serves (``/api/v1/namespaces``, ``.../pods``, ``.../events``): a
# request that uses a Kubernetes-only feature (watch, Table output, fieldSelector, resourceVersion) goes to the
# Kubernetes view; others keep the REST API's answers (already Kubernetes lists), so both clients work.


def is_kube_request(request: HttpRequest) -> bool:
    """Return True when a request on a shared core path needs the Kubernetes view."""
    if request.method == "PATCH":
        return True  # the REST API has no PATCH: kubectl apply/patch/label of a pod needs the Kubernetes view
    params = request.GET
    kube_only = (
        "watch",
        "fieldSelector",
        "resourceVersion",
        "resourceVersionMatch",
        "timeoutSeconds",
        "sendInitialEvents",
    )
    if any(key in params for key in kube_only):
        return True
    return query.wants_table(request.headers.get("Accept", ""))


def core_dispatch(
    kube: Callable[..., HttpResponseBase], rest: Callable[..., HttpResponseBase]
) -> Callable[..., HttpResponseBase]:
    """Return a view that sends Kubernetes-only requests to ``kube`` and the others to ``rest``."""

    @csrf_exempt
    def view(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
        if is_kube_request(request):
            return kube(request, **kwargs)
        rest_kwargs = {k: v for k, v in kwargs.items() if k in ("namespace", "name")}
        return rest(request, **rest_kwargs)

    return view


class KubeconfigView(KubeView):
    """``POST /api/v1/kubeconfig``: a kubeconfig for the caller; JSON, or YAML with ``Accept: application/yaml``.

    A caller that authenticated with a bearer token gets that token back (it is valid: it just worked);
    ``?newToken=true``, ``?name=`` (the new token's name) or a session (the dashboard) mint a new one.
    """

    def post(self, request: Request) -> Response:
        from volcanoweb.api.views import minting_token
        from volcanoweb.kubeapi import kubeconfig

        name = clean_text(request.query_params.get("name"), "name", 100)
        new = request.query_params.get("newToken") in ("true", "1") or bool(name)
        held = None
        if not new and request.auth is not None:
            parts = request.headers.get("Authorization", "").split()
            held = parts[1] if len(parts) == 2 and parts[0].lower() == "bearer" else None
        parent = None if held else minting_token(self.token(request))
        config, _ = kubeconfig.build(
            request._request, request.user, token_name=name or "kubeconfig", token=held, parent=parent
        )
        return Response(config, status=status.HTTP_201_CREATED)
