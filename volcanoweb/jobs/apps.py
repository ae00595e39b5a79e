"""App configuration for jobs."""

from typing import Any

from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate


def _install_row_versions(sender: AppConfig, using: str = "default", apps: Any = None, **kwargs: Any) -> None:
    """Re-create missing row-version triggers after a migrate (SQLite drops them when it rebuilds a table).

    Only once the migrations that add ``row_version`` are applied (not after migrating back before them).
    """
    from volcanoweb.jobs import rowversion

    if apps is not None:
        try:
            fields = {f.name for f in apps.get_model("jobs", "Pod")._meta.get_fields()}
        except LookupError:
            return
        if "row_version" not in fields:
            return
    rowversion.install(connections[using])


class JobsConfig(AppConfig):
    """Volcano jobs, tasks, pods, podgroups, priority classes, commands and events."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.jobs"
    verbose_name = "Volcano jobs, tasks, pods, podgroups, priority classes, commands and events"

    def ready(self) -> None:
        post_migrate.connect(_install_row_versions, sender=self, dispatch_uid="jobs-row-versions")
