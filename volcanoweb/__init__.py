"""volcanoweb: a control plane and dashboard for Volcano-style batch scheduling."""

from volcanoweb.celery import app as celery_app

__all__ = ["celery_app"]
