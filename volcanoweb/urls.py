"""Root URL configuration."""

from django.contrib import admin
from django.urls import path

from volcanoweb.core.health import healthz, readyz
from volcanoweb.core.metrics import metrics_view

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
]
