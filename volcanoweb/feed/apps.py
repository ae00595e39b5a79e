"""App configuration for the change log."""

from typing import Any

from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate


def _install(sender: AppConfig, using: str = "default", apps: Any = None, **kwargs: Any) -> None:
    """(Re)create the log's triggers after every migrate and flush (SQLite drops triggers when it rebuilds a
    table, and a flush empties ``feed_head``); only once the log's tables exist."""
    from volcanoweb.feed import triggers

    connection = connections[using]
    if "feed_head" not in connection.introspection.table_names():
        return
    triggers.install(connection)


class FeedConfig(AppConfig):
    """One ordered change log under every watch, list and live page."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.feed"
    verbose_name = "Change log"

    def ready(self) -> None:
        post_migrate.connect(_install, sender=self, dispatch_uid="feed-triggers")  # last of INSTALLED_APPS
