"""REST API for nodes (read by every authenticated user) and fault injection on the simulated cluster.

* ``GET /api/v1/nodes`` (filters ``kind``, ``ready``, ``labelSelector``, ``q``; pagination) and
  ``GET /api/v1/nodes/{name}``: Kubernetes-shaped Node objects, with the pods placed on the node;
* ``POST /api/v1/nodes/{name}/cordon`` and ``.../uncordon``: platform admins, every backend;
* ``POST /api/v1/nodes/{name}/fail`` (body ``{"evictPods": true}``) and ``.../recover``: platform admins;
* ``POST /api/v1/namespaces/{ns}/pods/{name}/exit`` (body ``{"exitCode": 137}``) and
  ``.../evict``: platform admins and tenant admins of the pod's tenant.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, list_body
from volcanoweb.api.listing import apply_filters, paginate
from volcanoweb.clusters import faults
from volcanoweb.clusters.models import Node
from volcanoweb.core.errors import BadRequest, NotFound
from volcanoweb.jobs.models import Pod
from volcanoweb.manifests.corenode import node_manifest, quantities

ERRORS: dict[int | str, Any] = {
    400: OpenApiTypes.OBJECT,
    401: OpenApiTypes.OBJECT,
    403: OpenApiTypes.OBJECT,
    404: OpenApiTypes.OBJECT,
}


def render_node(node: Node, pods: list[Pod] | None = None) -> dict[str, Any]:
    """Return a core v1 Node (plus ``status.ready``, ``status.kind`` and, when ``pods`` is given,
    ``status.pods`` and ``status.requested``: the REST API's additions)."""
    doc = node_manifest(node)
    doc["status"]["ready"] = node.ready
    doc["status"]["kind"] = node.kind
    if pods is not None:
        requested: dict[str, int] = {}
        for pod in pods:
            for name, amount in (pod.requests or {}).items():
                requested[name] = requested.get(name, 0) + int(amount)
        requested["pods"] = len(pods)
        doc["status"]["requested"] = quantities(requested)
        doc["status"]["pods"] = [{"namespace": p.namespace, "name": p.name, "phase": p.phase} for p in pods]
    return doc


class NodeCollectionView(ApiView):
    """``GET /api/v1/nodes``."""

    @extend_schema(
        parameters=[
            OpenApiParameter("kind", str, description="cpu or gpu"),
            OpenApiParameter("ready", bool),
            OpenApiParameter("labelSelector", str),
            OpenApiParameter("q", str, description="text search on the name"),
            OpenApiParameter("limit", int),
            OpenApiParameter("continue", str),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        queryset = apply_filters(Node.objects.order_by("name"), request.query_params, {"kind": "kind"}, ("name",))
        ready = request.query_params.get("ready")
        if ready is not None:
            if ready not in ("true", "false"):
                raise BadRequest("ready must be true or false")
            queryset = queryset.filter(ready=ready == "true")
        items, meta = paginate(queryset, request.query_params)
        counts = dict(
            Pod.objects.filter(node_name__in=[n.name for n in items], phase__in=("Pending", "Running"))
            .values_list("node_name")
            .annotate(n=Count("id"))
            .values_list("node_name", "n")
        )
        rendered = []
        for node in items:
            doc = render_node(node)
            doc["status"]["podCount"] = counts.get(node.name, 0)
            rendered.append(doc)
        return Response(list_body("Node", rendered, meta))


class NodeObjectView(ApiView):
    """``GET /api/v1/nodes/{name}``: the node and the (visible) pods placed on it."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, name: str) -> Response:
        node = Node.objects.filter(name=name).first()
        if node is None:
            raise NotFound(f'nodes "{name}" not found', kind="Node", name=name)
        access = self.access(request)
        pods = access.scope(
            Pod.objects.filter(node_name=name, phase__in=("Pending", "Running")).order_by("namespace", "name")
        )
        return Response(render_node(node, list(pods)))


class NodeFailView(ApiView):
    """``POST /api/v1/nodes/{name}/fail``: simulated node failure (platform admins)."""

    body_fields = frozenset({"evictPods"})

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, name: str) -> Response:
        body = self.mapping_body(request)
        evict = body.get("evictPods", True)
        if not isinstance(evict, bool):
            raise BadRequest("evictPods must be a boolean")
        return Response(render_node(faults.fail_node(self.access(request), name, evict_pods=evict)))


class NodeRecoverView(ApiView):
    """``POST /api/v1/nodes/{name}/recover``: a failed simulated node becomes Ready (platform admins)."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, name: str) -> Response:
        return Response(render_node(faults.recover_node(self.access(request), name)))


class NodeCordonView(ApiView):
    """``POST /api/v1/nodes/{name}/cordon`` and ``.../uncordon``: no new pods on the node, or again allowed
    (platform admins; ``spec.unschedulable`` on Kubernetes)."""

    unschedulable = True

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, name: str) -> Response:
        node = faults.cordon_node(self.access(request), name, unschedulable=self.unschedulable)
        return Response(render_node(node))


class NodeUncordonView(NodeCordonView):
    """``POST /api/v1/nodes/{name}/uncordon``."""

    unschedulable = False


def _pod_state(pod: Pod) -> dict[str, Any]:
    return {
        "namespace": pod.namespace,
        "name": pod.name,
        "phase": pod.phase,
        "nodeName": pod.node_name,
        "exitCode": pod.exit_code,
        "reason": (pod.status or {}).get("reason", ""),
        "restartCount": int((pod.status or {}).get("restartCount") or 0),
    }


class PodExitView(ApiView):
    """``POST /api/v1/namespaces/{ns}/pods/{name}/exit``: end a simulated pod with ``exitCode``.

    With ``"restartContainer": true`` only the main container exits and the pod's restartPolicy decides
    (OnFailure with a non-zero code, or Always: restarted in place, ``restartCount`` + 1)."""

    body_fields = frozenset({"exitCode", "restartContainer"})

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, namespace: str, name: str) -> Response:
        body = self.mapping_body(request)
        code = body.get("exitCode", 1)
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
            raise BadRequest("exitCode must be an integer between 0 and 255")
        restart = body.get("restartContainer", False)
        if not isinstance(restart, bool):
            raise BadRequest("restartContainer must be true or false")
        pod = faults.end_pod(self.access(request), namespace, name, code, restart=restart)
        return Response(_pod_state(pod))


class PodEvictView(ApiView):
    """``POST /api/v1/namespaces/{ns}/pods/{name}/evict``: evict a pod through the backend."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, namespace: str, name: str) -> Response:
        pod = faults.evict_pod(self.access(request), namespace, name)
        return Response(_pod_state(pod))
