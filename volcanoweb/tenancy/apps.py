"""App configuration for tenancy."""

from django.apps import AppConfig


class TenancyConfig(AppConfig):
    """Tenants, namespaces, memberships and API tokens."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "volcanoweb.tenancy"
    verbose_name = "Tenants, namespaces, memberships and API tokens"

    def ready(self) -> None:
        # Open WebSockets close when their credentials go (logout, revoked token, lost membership).
        from volcanoweb.live import revocation
        from volcanoweb.tenancy import signals

        revocation.connect()
        signals.connect()  # a password change closes the user's sockets
