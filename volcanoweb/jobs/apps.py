"""App configuration for jobs."""

from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Volcano jobs, tasks, pods, podgroups, priority classes, commands and events."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.jobs"
    verbose_name = "Volcano jobs, tasks, pods, podgroups, priority classes, commands and events"
