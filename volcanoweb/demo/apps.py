"""Demo data for the embedded mode."""

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "volcanoweb.demo"
    label = "demo"
    verbose_name = "Demo data"
