"""App configuration for queues."""

from django.apps import AppConfig


class QueuesConfig(AppConfig):
    """Hierarchical scheduling queues."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.queues"
    verbose_name = "Hierarchical scheduling queues"
