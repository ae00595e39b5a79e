"""The PATCH verb: JSON patch, merge patch, strategic merge patch (built-in kinds only) and server-side apply.

The algorithms are :mod:`volcanoweb.kubeapi.patch`; this module reads the body with the manifests' limits,
applies the patch to the stored object, checks ``fieldValidation`` and writes through the kind's service,
recomputing the patch when a controller wrote the object in between (as the API server does).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.apply import atomically
from volcanoweb.core.errors import BadRequest, Cause, Conflict, NotFound
from volcanoweb.kubeapi import patch
from volcanoweb.kubeapi.registry import KubeResource
from volcanoweb.kubeapi.verbs.base import ResourceBase, query_dry_run, query_field_validation
from volcanoweb.kubeapi.verbs.fields import check_fields
from volcanoweb.manifests.parse import load_patch, parse_documents
from volcanoweb.tenancy.access import Access

PATCH_ATTEMPTS = 5
#: The most operations in one JSON patch (the Kubernetes API server's limit).
MAX_JSON_PATCH_OPERATIONS = 10_000


@dataclass(frozen=True)
class _Patch:
    """One PATCH request: what every attempt recomputes the patched object from."""

    access: Access
    resource: KubeResource
    namespace: str | None
    name: str
    content_type: str
    body: Any
    mode: str
    field_manager: str | None
    apply: Callable[..., Any]


class PatchVerb(ResourceBase):
    """PATCH on an object (never on a subresource: the controllers own ``/status``)."""

    def patch(self, request: Request, **kwargs: Any) -> Response:
        resource, namespace, name = self.whole_object(kwargs, "patch", "PATCH")
        query_field_validation(request)
        dry_run = query_dry_run(request)
        access = self.access(request)
        content_type = (request.content_type or "").split(";")[0].strip()
        _check_media_type(resource, content_type)
        mode = query_field_validation(request)
        raw = self.body(request)
        body = _load_patch(raw, content_type)
        assert resource.apply is not None
        job = _Patch(
            access,
            resource,
            namespace,
            name,
            content_type,
            body,
            mode,
            request.query_params.get("fieldManager"),
            resource.apply,
        )
        pinned = isinstance(body, dict) and bool((body.get("metadata") or {}).get("resourceVersion"))
        for attempt in range(PATCH_ATTEMPTS):
            try:
                outcome = atomically(lambda: self.change(job), dry_run=dry_run)
                break
            except Conflict:
                # A controller wrote the object between the read and the write: like the API server, recompute
                # the patch on the new version (unless the caller pinned a resourceVersion).
                if pinned or attempt == PATCH_ATTEMPTS - 1:
                    raise
        created = outcome.action == "created"
        return Response(outcome.object, status=201 if created else 200)

    def checked(self, job: _Patch, doc: dict[str, Any]) -> dict[str, Any]:
        # Recomputed on every attempt: a retry after a conflict must not repeat the warnings.
        self.field_warnings.clear()
        return check_fields(job.resource, doc, job.mode, self.field_warnings, source=job.body)

    def change(self, job: _Patch) -> Any:
        """One attempt: read the stored object, patch it, write it (one transaction)."""
        try:
            current: dict[str, Any] | None = job.resource.render(
                self.find(job.access, job.resource, job.namespace, job.name)
            )
        except NotFound:
            if job.content_type != patch.APPLY:
                raise
            current = None
        if job.content_type == patch.APPLY:
            return self.server_side_apply(job, current)
        assert current is not None
        return self.patched(job, current)

    def server_side_apply(self, job: _Patch, current: dict[str, Any] | None) -> Any:
        """``application/apply-patch+yaml``: the body is the whole object; created when there is none."""
        if not job.field_manager:
            raise BadRequest(
                "fieldManager is required for apply requests",
                causes=[Cause("fieldManager", "Required value", "FieldValueRequired")],
            )
        if not isinstance(job.body, dict):
            raise BadRequest("an apply patch must be one object")
        doc = self.checked(job, copy.deepcopy(job.body))
        self.identity(doc, job.resource, job.namespace, job.name)
        if current is not None:
            doc["metadata"] = {**doc["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
            return job.apply(job.access, doc, job.namespace, mode="update")
        return job.apply(job.access, doc, job.namespace, mode="create")

    def patched(self, job: _Patch, current: dict[str, Any]) -> Any:
        """A JSON patch or a merge patch (strategic merge is a merge here) on the stored object."""
        body = job.body
        before_version = current["metadata"]["resourceVersion"]
        if job.content_type == patch.JSON_PATCH:
            doc = patch.json_patch(current, body)
        else:
            if not isinstance(body, dict):
                raise BadRequest("a merge patch must be a JSON object")
            doc = patch.merge_patch(current, body)
        if not isinstance(doc, dict):
            raise BadRequest("the patched object is not an object")
        self.identity(doc, job.resource, job.namespace, job.name)
        meta = doc["metadata"]
        # A patch that names no resourceVersion applies to the version it was computed from.
        if isinstance(body, dict) and not (body.get("metadata") or {}).get("resourceVersion"):
            meta["resourceVersion"] = before_version
        for key in ("uid", "creationTimestamp", "generation"):
            meta.pop(key, None)
        doc.pop("status", None)
        self.checked(job, doc)
        return job.apply(job.access, doc, job.namespace, mode="update")


def _custom(resource: KubeResource) -> bool:
    """Return True for a kind that is a custom resource on a real cluster (Volcano's CRDs)."""
    return resource.group.endswith("volcano.sh")


def _check_media_type(resource: KubeResource, content_type: str) -> None:
    """Raise a 415 for a Content-Type that is no patch type the kind takes."""
    if content_type not in patch.PATCH_TYPES or (content_type == patch.STRATEGIC and _custom(resource)):
        # Custom resources (the Volcano kinds, Commands) take no strategic merge patch on kube-apiserver.
        accepted = [t for t in patch.PATCH_TYPES if not (t == patch.STRATEGIC and _custom(resource))]
        raise patch.UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted)
        )


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
