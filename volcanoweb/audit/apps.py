"""App configuration for audit."""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit log."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.audit"
    verbose_name = "The audit log"
