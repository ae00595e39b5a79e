"""URLs of the clusters app (full paths under /api/v1/; included before the API's catch-all)."""

from __future__ import annotations

from django.urls import path

from volcanoweb.clusters import api

app_name = "clusters"

urlpatterns = [
    path("api/v1/nodes", api.NodeCollectionView.as_view(), name="nodes"),
    path("api/v1/nodes/<str:name>", api.NodeObjectView.as_view(), name="node"),
    path("api/v1/nodes/<str:name>/fail", api.NodeFailView.as_view(), name="node-fail"),
    path("api/v1/nodes/<str:name>/recover", api.NodeRecoverView.as_view(), name="node-recover"),
    path("api/v1/nodes/<str:name>/cordon", api.NodeCordonView.as_view(), name="node-cordon"),
    path("api/v1/nodes/<str:name>/uncordon", api.NodeUncordonView.as_view(), name="node-uncordon"),
    path("api/v1/namespaces/<str:namespace>/pods/<str:name>/exit", api.PodExitView.as_view(), name="pod-exit"),
    path("api/v1/namespaces/<str:namespace>/pods/<str:name>/evict", api.PodEvictView.as_view(), name="pod-evict"),
]
