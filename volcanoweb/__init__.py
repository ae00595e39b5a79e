"""volcanoweb: a control plane and dashboard for Volcano-style batch scheduling.

The Celery app is created when Django starts (``volcanoweb.core`` imports it in
``ready()``) or when ``celery -A volcanoweb`` loads ``volcanoweb.celery``, not at
package import, so that the ``vcctl`` client starts without loading Celery.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from volcanoweb.celery import app

        return app
    raise AttributeError(f"module 'volcanoweb' has no attribute {name!r}")
