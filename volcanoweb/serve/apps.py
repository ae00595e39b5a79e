"""App configuration for the product's processes: how it runs, above every other app."""

from django.apps import AppConfig


class ServeConfig(AppConfig):
    """``runembedded`` (``make run``: one process, the loops in threads), ``runstack`` (the stack's
    supervisor: ASGI server, Celery workers and beat) and the in-process loops (``loops.py``).

    They start everything else, so they stand at the top of the layers; ``core`` is the bottom (errors,
    environment readers, JSON and SQL helpers) and imports no other app.
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.serve"
    verbose_name = "Serve"

    def ready(self) -> None:
        # Create the Celery app in every Django process, so that shared tasks bind to it.
        import volcanoweb.celery  # noqa: F401
