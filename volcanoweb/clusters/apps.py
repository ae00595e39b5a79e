"""App configuration for clusters: node mirror, simulated cluster state, backend sync."""

from __future__ import annotations

from django.apps import AppConfig


class ClustersConfig(AppConfig):
    """Nodes, the cluster backends and the backend-to-database sync."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.clusters"
    verbose_name = "Cluster nodes and backends"
