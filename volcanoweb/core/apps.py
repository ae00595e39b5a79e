"""App configuration for the shared core."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The bottom of the apps: errors, environment readers, health and metrics endpoints, the SQL and JSON
    helpers, the stage profiler. It imports no other app (import-linter); the runners are in ``serve``."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.core"
    verbose_name = "Core"

    def ready(self) -> None:
        from volcanoweb.core import stageprof

        if stageprof.enabled():  # the end-to-end benchmark's CPU counters (bench/e2e.py), never otherwise
            stageprof.install()
