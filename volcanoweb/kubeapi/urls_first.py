"""The core v1 paths of the Kubernetes-shaped API that the REST API's first urlconf also serves
(``/api/v1/nodes``): included before it, dispatched per request like the other shared core paths."""

from __future__ import annotations

from django.urls import path

from volcanoweb.api import nodes as rest_nodes
from volcanoweb.kubeapi import dispatch, views

app_name = "kubeapi-first"

resource = views.ResourceView.as_view()

urlpatterns = [
    path(
        "api/v1/nodes",
        dispatch.core_dispatch(resource, rest_nodes.NodeCollectionView.as_view()),
        {"plural": "nodes"},
        name="nodes",
    ),
    path(
        "api/v1/nodes/<str:name>",
        dispatch.core_dispatch(resource, rest_nodes.NodeObjectView.as_view()),
        {"plural": "nodes"},
        name="node",
    ),
]
