"""App configuration for workflows."""

from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    """CronJobs, JobFlows and JobTemplates."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.workflows"
    verbose_name = "CronJobs, JobFlows and JobTemplates"
