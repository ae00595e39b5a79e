"""App configuration for scheduling."""

from __future__ import annotations

from django.apps import AppConfig

_registered = False


class SchedulingConfig(AppConfig):
    """Scheduler configuration profiles, the scheduling cycle and its runs."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.scheduling"
    verbose_name = "Scheduling"

    def ready(self) -> None:
        global _registered
        if _registered:
            return
        _registered = True
        from volcanoweb.core.health import register_readiness_check
        from volcanoweb.core.metrics import REGISTRY
        from volcanoweb.scheduling import observability

        REGISTRY.register(observability.QueueCollector())
        register_readiness_check("scheduling", observability.cycle_age_check)
