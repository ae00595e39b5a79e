"""Volcano's built-in queues, root and default, which exist from the start."""

from __future__ import annotations

from typing import Any

from django.apps import apps as installed_apps


def ensure_builtin_queues(app_registry: Any = installed_apps) -> None:
    """Create ``root`` (not reclaimable) and ``default`` (reclaimable, under root) if missing.

    ``app_registry`` is the migration's historical registry when called from the data
    migration, else the installed apps (seeding a database whose tables were flushed).
    """
    queue_model = app_registry.get_model("queues", "Queue")
    root, _ = queue_model.objects.get_or_create(
        name="root",
        defaults={"weight": 1, "reclaimable": False, "state": "Open", "spec": {"weight": 1, "reclaimable": False}},
    )
    queue_model.objects.get_or_create(
        name="default",
        defaults={
            "parent": root,
            "weight": 1,
            "reclaimable": True,
            "state": "Open",
            "spec": {"weight": 1, "reclaimable": True, "parent": "root"},
        },
    )
