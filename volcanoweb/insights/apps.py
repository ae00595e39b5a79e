"""App configuration for insights."""

from __future__ import annotations

from django.apps import AppConfig


class InsightsConfig(AppConfig):
    """Observation of the scheduler: cycle inputs, job wait timelines, queue history, suggestions."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.insights"
    verbose_name = "Insights"
