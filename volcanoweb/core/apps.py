"""App configuration for the shared core."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Environment readers, health and metrics endpoints, in-process loops, the runners."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.core"
    verbose_name = "Core"

    def ready(self) -> None:
        # Create the Celery app in every Django process, so that shared tasks bind to it.
        import volcanoweb.celery  # noqa: F401
        from volcanoweb.core import stageprof

        if stageprof.enabled():  # the end-to-end benchmark's CPU counters (bench/e2e.py), never otherwise
            stageprof.install()
