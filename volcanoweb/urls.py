"""Root URL configuration."""

from django.contrib import admin
from django.urls import include, path

from volcanoweb.core.health import healthz, livez, readyz
from volcanoweb.core.metrics import metrics_view

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("livez", livez, name="livez"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("", include("volcanoweb.kubeapi.urls_first")),  # /api/v1/nodes: Kubernetes clients' requests
    path("", include("volcanoweb.api.urls_first")),  # first: its pod actions (/exit, /evict) are not subresources
    path("", include("volcanoweb.insights.urls")),
    path("", include("volcanoweb.kubeapi.urls")),  # before the REST API: shares core /api/v1 paths
    path("", include("volcanoweb.api.urls")),
    path("", include("volcanoweb.dashboard.urls")),
]
# Keep this the last entry: the Status 404 for unknown /api/v1/ paths.
urlpatterns += [path("", include("volcanoweb.api.urls_fallback"))]

handler404 = "volcanoweb.dashboard.errors.page_not_found"
handler403 = "volcanoweb.dashboard.errors.permission_denied"
handler500 = "volcanoweb.dashboard.errors.server_error"
