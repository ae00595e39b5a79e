"""What every resource verb starts from: the kind the URL names, the object it names (authorized through
the tenancy helpers), and what the writes share (``?dryRun=``, ``?fieldValidation=``, the URL's identity
on the body); the writes' transaction is :func:`volcanoweb.apply.atomically`."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request

from volcanoweb.core.errors import BadRequest, Cause, NotFound, not_found
from volcanoweb.kubeapi.base import KubeView, MethodNotAllowed
from volcanoweb.kubeapi.registry import BY_GROUP_VERSION, KubeResource
from volcanoweb.manifests import strict
from volcanoweb.tenancy.access import Access, resolve_namespace


def query_dry_run(request: Request) -> bool:
    """Return True for ``?dryRun=All``, or raise a 400 naming any other value."""
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


def query_field_validation(request: Request) -> str:
    """Return ``?fieldValidation=`` (``Strict`` when absent, as on the REST API) or raise a 400 naming it."""
    return strict.check_mode(request.query_params.get("fieldValidation"))


class ResourceBase(KubeView):
    """The lookups and checks of ``/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/status]]``
    (and core ``/api/v1``) that every verb uses."""

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

    # -- checks of the writes ------------------------------------------------------------------------------------

    def whole_object(self, kwargs: dict[str, Any], verb: str, method: str) -> tuple[KubeResource, str | None, str]:
        """The kind, namespace and name a PUT or PATCH writes, once ``verb`` is allowed on the kind: a whole
        object, never a subresource (the controllers own ``/status``)."""
        resource, namespace, name, subresource = self.kwargs_of(kwargs)
        self.writable(resource, verb)
        if name is None:
            raise MethodNotAllowed(f"{method} needs an object name")
        if subresource is not None:
            raise MethodNotAllowed(f"the {subresource} subresource is read-only: the controllers own it")
        return resource, namespace, name

    def writable(self, resource: KubeResource, verb: str) -> None:
        if resource.plural == "commands" and verb in ("create", "delete", "deletecollection"):
            return  # Commands are created, and deleted before the controller acts on them; never changed
        if not resource.writable:
            raise MethodNotAllowed(
                f'{resource.info.qualified_resource} is read-only here: the verb "{verb}" is not supported',
                kind=resource.info.kind,
                group=resource.group,
            )

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
