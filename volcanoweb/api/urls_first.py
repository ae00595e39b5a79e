"""The REST API's node routes and pod actions, included first in volcanoweb/urls.py.

They come before the Kubernetes API's urlconf because ``/exit`` and ``/evict`` are actions, not pod
subresources (which ``kubeapi`` would otherwise answer).
"""

from __future__ import annotations

from django.urls import path

from volcanoweb.api import nodes

app_name = "api-nodes"

urlpatterns = [
    path("api/v1/nodes", nodes.NodeCollectionView.as_view(), name="nodes"),
    path("api/v1/nodes/<str:name>", nodes.NodeObjectView.as_view(), name="node"),
    path("api/v1/nodes/<str:name>/fail", nodes.NodeFailView.as_view(), name="node-fail"),
    path("api/v1/nodes/<str:name>/recover", nodes.NodeRecoverView.as_view(), name="node-recover"),
    path("api/v1/nodes/<str:name>/cordon", nodes.NodeCordonView.as_view(), name="node-cordon"),
    path("api/v1/nodes/<str:name>/uncordon", nodes.NodeUncordonView.as_view(), name="node-uncordon"),
    path("api/v1/namespaces/<str:namespace>/pods/<str:name>/exit", nodes.PodExitView.as_view(), name="pod-exit"),
    path("api/v1/namespaces/<str:namespace>/pods/<str:name>/evict", nodes.PodEvictView.as_view(), name="pod-evict"),
]
