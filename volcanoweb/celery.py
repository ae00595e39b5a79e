"""The Celery application; tasks live in each app's tasks.py."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "volcanoweb.settings")

app = Celery("volcanoweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="volcanoweb.ping")
def ping() -> str:
    """Return "pong"; used to prove a worker round trip."""
    return "pong"
