"""App configuration for the runtime controllers."""

from django.apps import AppConfig


class RuntimeConfig(AppConfig):
    """Volcano's controllers: job lifecycle, job plugins, PodGroups for jobs and bare pods, queue states, TTL."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.runtime"
    verbose_name = "Runtime controllers"

    def ready(self) -> None:
        """React to committed changes (``live.notify`` calls the listeners; it never imports the runtime) and
        register the controllers' tasks (``dispatch`` queues them by name)."""
        from volcanoweb.live import notify
        from volcanoweb.runtime import hooks, tasks  # noqa: F401  (tasks: registered with Celery on import)

        notify.listen(hooks.on_change, hooks.on_change_many)
