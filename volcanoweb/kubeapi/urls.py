"""URLs of the Kubernetes-shaped API: /api, /api/v1 (core, shared with the REST API), /apis, /version, /openapi.

Include this before the REST API's urlconf: the core paths the REST API also serves are dispatched per
request (``dispatch.core_dispatch``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpResponseBase
from django.urls import path

from volcanoweb.api import events, namespaced, namespaces
from volcanoweb.kubeapi import auth, discovery, dispatch, kubeconfig, logs, openapi_v2, openapi_v3, views

app_name = "kubeapi"

resource = views.ResourceView.as_view()


def _core(plural: str, rest_view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    return dispatch.core_dispatch(resource, rest_view)


_NS = "api/v1/namespaces/<str:namespace>"
_G = "apis/<str:group>/<str:version>"

urlpatterns = [
    path("version", discovery.VersionView.as_view(), name="version"),
    path("version/", discovery.VersionView.as_view()),
    path("openapi/v2", openapi_v2.OpenAPIV2View.as_view(), name="openapi-v2"),
    path("openapi/v3", openapi_v3.OpenAPIV3RootView.as_view(), name="openapi-v3"),
    path("openapi/v3/api/<str:version>", openapi_v3.OpenAPIV3GroupView.as_view(), name="openapi-v3-core"),
    path("openapi/v3/apis/<str:group>/<str:version>", openapi_v3.OpenAPIV3GroupView.as_view(), name="openapi-v3-group"),
    path("api", discovery.APIVersionsView.as_view(), name="api-versions"),
    path("api/", discovery.APIVersionsView.as_view()),
    path("api/v1", discovery.APIResourceListView.as_view(), {"version": "v1"}, name="core-resources"),
    path("api/v1/", discovery.APIResourceListView.as_view(), {"version": "v1"}),
    path("api/v1/kubeconfig", kubeconfig.KubeconfigView.as_view(), name="kubeconfig"),
    # core v1, shared with the REST API
    path(
        "api/v1/namespaces",
        _core("namespaces", namespaces.NamespaceListView.as_view()),
        {"plural": "namespaces"},
        name="namespaces",
    ),
    path("api/v1/namespaces/<str:name>", resource, {"plural": "namespaces"}, name="namespace"),
    path(
        f"{_NS}/pods",
        _core("pods", namespaced.NamespacedCollectionView.as_view(resource_name="pods")),
        {"plural": "pods"},
        name="pods",
    ),
    path(
        f"{_NS}/pods/<str:name>",
        _core("pods", namespaced.NamespacedObjectView.as_view(resource_name="pods")),
        {"plural": "pods"},
        name="pod",
    ),
    path(f"{_NS}/pods/<str:name>/log", logs.PodLogView.as_view(), {"plural": "pods"}, name="pod-log"),
    path(f"{_NS}/pods/<str:name>/<str:subresource>", resource, {"plural": "pods"}, name="pod-subresource"),
    path(
        f"{_NS}/events",
        _core("events", events.NamespacedEventListView.as_view()),
        {"plural": "events"},
        name="events",
    ),
    path(f"{_NS}/events/<str:name>", resource, {"plural": "events"}, name="event"),
    path("api/v1/namespaces/kube-system/services", auth.ClusterServicesView.as_view(), name="cluster-services"),
    path(f"{_NS}/services", resource, {"plural": "services"}, name="services"),
    path(f"{_NS}/services/<str:name>", resource, {"plural": "services"}, name="service"),
    path("api/v1/services", resource, {"plural": "services"}),
    path("api/v1/pods", _core("pods", namespaced.AllNamespacesView.as_view(resource_name="pods")), {"plural": "pods"}),
    path("api/v1/events", _core("events", events.EventListView.as_view()), {"plural": "events"}),
    # kubectl auth can-i / whoami
    path(
        "apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        auth.SelfSubjectAccessReviewView.as_view(),
        name="selfsubjectaccessreviews",
    ),
    path(
        "apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        auth.SelfSubjectRulesReviewView.as_view(),
        name="selfsubjectrulesreviews",
    ),
    path(
        "apis/authentication.k8s.io/<str:version>/selfsubjectreviews",
        auth.SelfSubjectReviewView.as_view(),
        name="selfsubjectreviews",
    ),
    # API groups
    path("apis", discovery.APIGroupListView.as_view(), name="groups"),
    path("apis/", discovery.APIGroupListView.as_view()),
    path("apis/<str:group>", discovery.APIGroupView.as_view(), name="group"),
    path("apis/<str:group>/", discovery.APIGroupView.as_view()),
    path(_G, discovery.APIResourceListView.as_view(), name="group-resources"),
    path(f"{_G}/", discovery.APIResourceListView.as_view()),
    path(f"{_G}/namespaces/<str:namespace>/<str:plural>", resource, name="namespaced-collection"),
    path(f"{_G}/namespaces/<str:namespace>/<str:plural>/<str:name>", resource, name="namespaced-object"),
    path(
        f"{_G}/namespaces/<str:namespace>/<str:plural>/<str:name>/<str:subresource>",
        resource,
        name="namespaced-subresource",
    ),
    path(f"{_G}/<str:plural>", resource, name="collection"),
    path(f"{_G}/<str:plural>/<str:name>", resource, name="object"),
    path(f"{_G}/<str:plural>/<str:name>/<str:subresource>", resource, name="subresource"),
]
