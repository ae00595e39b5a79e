"""``kubectl auth can-i`` and ``kubectl auth whoami``: SelfSubjectAccessReview and SelfSubjectReview,
answered from the product's roles (ADR 0013's authorization: tenants, their roles, platform admins).

A review is not stored (as on kube-apiserver): ``POST`` answers the review with its ``status``.

* Namespaced kinds: reads (get, list, watch) need any role in the namespace's tenant, writes a writer role
  (tenant admin or member); a namespace that does not exist is no for everyone but platform admins.
* Cluster-scoped kinds: nodes, namespaces, queues and priority classes are readable by every user; writing
  queues needs a tenant admin (of the queue's tenant, which a review without a name cannot know: any
  tenant-admin role answers yes) or a platform admin; the others are platform admins' (or no one's: nodes
  and namespaces are read-only here).
* A verb the kind does not serve is no, with the reason; an unknown resource is no.
"""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import RawBodyParser
from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.kubeapi import wire
from volcanoweb.kubeapi.base import KubeView
from volcanoweb.kubeapi.registry import RESOURCES, KubeResource
from volcanoweb.manifests.parse import load_patch
from volcanoweb.tenancy.access import Access
from volcanoweb.tenancy.models import Namespace

READS = frozenset({"get", "list", "watch"})
#: Cluster-scoped kinds every authenticated user reads.
READABLE_BY_ALL = frozenset({"nodes", "namespaces", "queues", "priorityclasses"})


def _find(group: str, plural: str) -> KubeResource | None:
    plural = plural.partition("/")[0]
    for resource in RESOURCES:
        if resource.group == group and plural in (resource.plural, "*"):
            return resource
    return None


def decide(access: Access, attributes: dict[str, Any]) -> tuple[bool, str]:
    """Return (allowed, reason) for ``spec.resourceAttributes`` of a review."""
    verb = str(attributes.get("verb") or "")
    group = str(attributes.get("group") or "")
    plural = str(attributes.get("resource") or "")
    subresource = str(attributes.get("subresource") or "")
    namespace = str(attributes.get("namespace") or "")
    resource = _find(group, plural)
    if resource is None:
        return False, f"the server does not serve {plural}.{group}" if group else f"the server does not serve {plural}"
    log_read = subresource == "log" and resource.plural == "pods" and verb == "get"
    if verb != "*" and verb not in resource.verbs and not log_read:
        return False, f'the verb "{verb}" is not served for {resource.info.qualified_resource}'
    if access.platform_admin:
        return True, "platform admin"
    if not resource.info.namespaced:
        if verb in READS and resource.plural in READABLE_BY_ALL:
            return True, "every user reads it"
        if resource.plural == "queues" and any(access.is_tenant_admin(t) for t in access.roles):
            return True, "tenant admins manage their tenant's queues"
        return False, "only platform admins"
    if not namespace:
        # All namespaces: kubectl get -A lists what the caller may read (scoped), so reads are allowed.
        if verb in READS and access.roles:
            return True, "lists are scoped to the caller's tenants"
        return False, "only platform admins act in every namespace"
    row = Namespace.objects.filter(name=namespace).first()
    if row is None:
        return False, f'namespace "{namespace}" does not exist'
    allowed = access.can_read(row.tenant_id) if verb in READS else access.can_write(row.tenant_id)
    role = access.roles.get(row.tenant_id) if row.tenant_id is not None else None
    if allowed:
        return True, f"role {role} in tenant {access.tenant_names.get(row.tenant_id or 0, '')}".strip()
    return False, "no role in the namespace's tenant" if role is None else f"role {role} may only read"


class ProtobufParser(RawBodyParser):
    """``application/vnd.kubernetes.protobuf``: kubectl's typed clients' bodies (read by :mod:`.wire`)."""

    media_type = wire.PROTOBUF


def _review(request: Request, kind: str, api_version: str) -> dict[str, Any]:
    data: object = request.data
    body = data if isinstance(data, bytes) else b""
    if (request.content_type or "").startswith(wire.PROTOBUF):
        _, sent_kind, raw = wire.unwrap(body)
        if sent_kind not in ("", kind):
            raise BadRequest(f"expected kind {kind}, got {sent_kind!r}")
        doc: Any = wire.access_review(raw) if kind == "SelfSubjectAccessReview" else {"metadata": {}, "spec": {}}
    else:
        doc = load_patch(body) if body.strip() else {}
    if not isinstance(doc, dict):
        raise BadRequest(f"expected a {kind} object")
    if doc.get("kind") not in (None, kind):
        raise BadRequest(
            f"expected kind {kind}, got {doc.get('kind')!r}",
            causes=[Cause("kind", "Invalid value", "FieldValueInvalid")],
        )
    doc["apiVersion"], doc["kind"] = api_version, kind
    doc.setdefault("metadata", {})
    return doc


class SelfSubjectAccessReviewView(KubeView):
    """``POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews``: may I?"""

    read_only_post = True  # a review asks, it writes nothing: a read-only token may send it

    parser_classes = [*KubeView.parser_classes, ProtobufParser]

    def post(self, request: Request) -> Response:
        review = _review(request, "SelfSubjectAccessReview", "authorization.k8s.io/v1")
        spec = review.get("spec") or {}
        attributes = spec.get("resourceAttributes")
        if isinstance(attributes, dict):
            allowed, reason = decide(self.access(request), attributes)
        elif isinstance(spec.get("nonResourceAttributes"), dict):
            path = str(spec["nonResourceAttributes"].get("path") or "")
            verb = str(spec["nonResourceAttributes"].get("verb") or "")
            allowed = verb == "get" and path.split("?")[0] in NON_RESOURCE_PATHS
            reason = "discovery and health are open to every user" if allowed else "not served"
        else:
            raise BadRequest(
                "resourceAttributes or nonResourceAttributes is required",
                causes=[Cause("spec.resourceAttributes", "Required value", "FieldValueRequired")],
            )
        review["status"] = {"allowed": allowed, "reason": reason} if allowed else {"allowed": False, "reason": reason}
        return Response(review, status=status.HTTP_201_CREATED)


NON_RESOURCE_PATHS = frozenset({"/api", "/apis", "/version", "/healthz", "/livez", "/readyz", "/openapi/v2"})


class SelfSubjectReviewView(KubeView):
    """``POST /apis/authentication.k8s.io/v1/selfsubjectreviews``: who am I (user name, uid, groups)?"""

    read_only_post = True  # a review asks, it writes nothing: a read-only token may send it

    parser_classes = [*KubeView.parser_classes, ProtobufParser]

    def post(self, request: Request, version: str = "v1") -> Response:
        review = _review(request, "SelfSubjectReview", f"authentication.k8s.io/{version}")
        access = self.access(request)
        groups = ["system:authenticated"]
        if access.platform_admin:
            groups.append("volcanoweb:platform-admins")
        groups += sorted(f"volcanoweb:tenant:{name}:{access.roles[tid]}" for tid, name in access.tenant_names.items())
        user = {"username": access.username, "uid": str(getattr(request.user, "pk", "")), "groups": groups}
        review["status"] = {"userInfo": user}
        return Response(review, status=status.HTTP_201_CREATED)


class ClusterServicesView(KubeView):
    """``GET /api/v1/namespaces/kube-system/services``: an empty ServiceList for every user.

    ``kubectl cluster-info`` lists kube-system's cluster services and prints the control plane's URL; this
    server runs no cluster add-ons, so there are none (and no kube-system namespace to refuse).
    """

    def get(self, request: Request) -> Response:
        return Response({"kind": "ServiceList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []})


class SelfSubjectRulesReviewView(KubeView):
    """``POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`` (``kubectl auth can-i --list``): per
    served resource, the verbs :func:`decide` allows in ``spec.namespace``."""

    read_only_post = True  # a review asks, it writes nothing: a read-only token may send it

    parser_classes = [*KubeView.parser_classes, ProtobufParser]

    def post(self, request: Request) -> Response:
        data: object = request.data
        body = data if isinstance(data, bytes) else b""
        if (request.content_type or "").startswith(wire.PROTOBUF):
            _, _, raw = wire.unwrap(body)
            namespace = wire.strings(wire.message(raw, 2) or b"", {1: "namespace"}).get("namespace", "")
        else:
            doc = load_patch(body) if body.strip() else {}
            namespace = str(((doc.get("spec") or {}) if isinstance(doc, dict) else {}).get("namespace") or "")
        access = self.access(request)
        rules = []
        for resource in RESOURCES:
            allowed = [
                verb
                for verb in resource.verbs
                if decide(
                    access,
                    {"verb": verb, "group": resource.group, "resource": resource.plural, "namespace": namespace},
                )[0]
            ]
            if allowed:
                rules.append({"verbs": allowed, "apiGroups": [resource.group], "resources": [resource.plural]})
        status_body = {
            "resourceRules": rules,
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": sorted(NON_RESOURCE_PATHS)}],
            "incomplete": False,
        }
        review = {
            "kind": "SelfSubjectRulesReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {},
            "spec": {"namespace": namespace},
            "status": status_body,
        }
        return Response(review, status=status.HTTP_201_CREATED)
