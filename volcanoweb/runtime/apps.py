"""App configuration for the runtime controllers."""

from django.apps import AppConfig


class RuntimeConfig(AppConfig):
    """Volcano's controllers: job lifecycle, job plugins, PodGroups for jobs and bare pods, queue states, TTL."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.runtime"
    verbose_name = "Runtime controllers"

    def ready(self) -> None:
        """Register the controllers' tasks (``dispatch`` queues them by name). The controllers learn of changes
        from the change log (``runtime.informer``), which the periodic worker or the embedded mode runs."""
        from volcanoweb.runtime import tasks  # noqa: F401  (registered with Celery on import)
