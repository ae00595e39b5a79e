"""The write verbs that take a whole object: create (POST, Commands included) and update (PUT)."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb import groupcommit
from volcanoweb.apply import atomically
from volcanoweb.core.errors import ApiError, BadRequest, Cause, Errors, invalid
from volcanoweb.jobs import services as jobs
from volcanoweb.kubeapi.base import MethodNotAllowed
from volcanoweb.kubeapi.registry import RESOURCES, KubeResource
from volcanoweb.kubeapi.verbs.base import ResourceBase, query_dry_run, query_field_validation
from volcanoweb.kubeapi.verbs.fields import check_fields
from volcanoweb.manifests.parse import parse_documents
from volcanoweb.tenancy.access import Access

RESOURCES_BY_PLURAL = {r.plural: r for r in RESOURCES}


class WriteVerbs(ResourceBase):
    """POST on a collection and PUT on an object."""

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
        return check_fields(resource, doc, query_field_validation(request), self.field_warnings)

    def post(self, request: Request, **kwargs: Any) -> Response:
        resource, namespace, name, _ = self.kwargs_of(kwargs)
        if name is not None:
            raise MethodNotAllowed("POST is not supported on an object; use PUT or PATCH")
        self.writable(resource, "create")
        query_field_validation(request)
        dry_run = query_dry_run(request)
        access = self.access(request)
        doc = self.one_document(request, resource)
        self.identity(doc, resource, namespace, None)
        if resource.plural == "commands":
            return Response(self.create_command(access, doc, namespace, dry_run), status=status.HTTP_201_CREATED)
        apply = resource.apply
        assert apply is not None
        if resource.plural == "jobs" and not dry_run:  # with concurrent creates (group commit, ADR 0030)
            outcome = groupcommit.apply_job(access, doc, namespace, mode="create")
        else:
            outcome = atomically(lambda: apply(access, doc, namespace, mode="create"), dry_run=dry_run)
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
        command = atomically(
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
        resource, namespace, name = self.whole_object(kwargs, "update", "PUT")
        query_field_validation(request)
        dry_run = query_dry_run(request)
        access = self.access(request)
        doc = self.one_document(request, resource)
        self.identity(doc, resource, namespace, name)
        if not doc["metadata"].get("resourceVersion"):
            # Kubernetes requires a resourceVersion on an update of a custom resource.
            raise _invalid_update(resource, name)
        apply = resource.apply
        assert apply is not None
        outcome = atomically(lambda: apply(access, doc, namespace, mode="update"), dry_run=dry_run)
        return Response(outcome.object)


def _invalid_update(resource: KubeResource, name: str) -> ApiError:
    errors = Errors()
    errors.add(
        "metadata.resourceVersion",
        "Invalid value: 0x0: must be specified for an update",
        "FieldValueInvalid",
    )
    return invalid(resource.info.kind, resource.group, name, errors)
