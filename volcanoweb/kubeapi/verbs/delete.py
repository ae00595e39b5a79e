"""The delete verbs: delete (an object, with DeleteOptions' preconditions and propagation policy) and
deletecollection (what the field and label selectors select)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import check_preconditions
from volcanoweb.api.listing import apply_label_selector, clean_text
from volcanoweb.apply import atomically
from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.feed import log
from volcanoweb.jobs import services as jobs
from volcanoweb.kubeapi import query
from volcanoweb.kubeapi.base import MethodNotAllowed
from volcanoweb.kubeapi.registry import KubeResource
from volcanoweb.kubeapi.verbs.base import ResourceBase, query_dry_run
from volcanoweb.tenancy.access import Access

PROPAGATION = ("Background", "Foreground", "Orphan")


@dataclass(frozen=True)
class _Removal:
    """One DELETE request: who deletes what, through which service call, and whether it is a dry run."""

    access: Access
    resource: KubeResource
    namespace: str | None
    remove: Callable[..., Any]
    dry_run: bool


class DeleteVerbs(ResourceBase):
    """DELETE on an object or a collection (never on a subresource)."""

    def delete(self, request: Request, **kwargs: Any) -> Response:
        resource, namespace, name, subresource = self.kwargs_of(kwargs)
        self.writable(resource, "delete")
        if subresource is not None:
            raise MethodNotAllowed(f"cannot delete the {subresource} subresource")
        dry_run = query_dry_run(request) or self.dry_run  # the query's, or DeleteOptions.dryRun (ApiView.dispatch)
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
        removal = _Removal(access, resource, namespace, remove, dry_run)
        if name is not None:
            return self.delete_one(removal, name, options.get("preconditions"))
        return self.delete_collection(request, removal)

    def delete_one(self, removal: _Removal, name: str, wanted: Any) -> Response:
        resource, namespace = removal.resource, removal.namespace
        obj = self.find(removal.access, resource, namespace, name)

        def checked_remove() -> Any:
            if wanted:  # DeleteOptions.preconditions, against the row as locked for the delete
                locked = type(obj).objects.select_for_update(no_key=True).filter(pk=obj.pk).first()
                if locked is not None:
                    uid, version = str(getattr(locked, "uid", "")), str(getattr(locked, "resource_version", ""))
                    check_preconditions(wanted, uid, version, resource.info.qualified_resource, name)
            return removal.remove(removal.access, namespace, name)

        outcome = atomically(checked_remove, dry_run=removal.dry_run)
        if outcome.object.get("metadata", {}).get("deletionTimestamp"):
            return Response(outcome.object)
        return Response(_success(resource, name, str(getattr(obj, "uid", ""))))

    def delete_collection(self, request: Request, removal: _Removal) -> Response:
        """deletecollection: every object the selectors select, in the kind's order, in one transaction."""
        resource, access = removal.resource, removal.access
        queryset = self.scoped(access, resource, removal.namespace, "deletecollection")
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
            return [removal.remove(access, ns, obj_name).object for ns, obj_name in targets]

        removed = atomically(remove_all, dry_run=removal.dry_run)
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


def _success(resource: KubeResource, name: str, uid: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "group": resource.group, "kind": resource.plural}
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
