"""App configuration."""

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The browser dashboard."""

    name = "volcanoweb.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
