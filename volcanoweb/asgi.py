"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "volcanoweb.settings")
django_asgi_app = get_asgi_application()

from django.conf import settings  # noqa: E402

# Django runs each sync view of an ASGI request in a fresh thread, so a persistent connection (CONN_MAX_AGE > 0)
# is opened per request and never reused or closed: under load the server runs out of PostgreSQL connections.
# Django's documentation says to disable persistent connections under ASGI; the Celery processes keep them.
# Without them every request would connect anew (a PostgreSQL backend started and authenticated per request,
# ~10 ms), so PostgreSQL connections come from a pool shared by the request threads instead.
for _db in settings.DATABASES.values():
    _db["CONN_MAX_AGE"] = 0
    if str(_db.get("ENGINE", "")).endswith("postgresql") and settings.ASGI_DB_POOL_SIZE > 0:
        _db.setdefault("OPTIONS", {}).setdefault(
            "pool", {"min_size": 1, "max_size": settings.ASGI_DB_POOL_SIZE, "timeout": 30}
        )

from channels.auth import AuthMiddlewareStack  # noqa: E402 - needs Django set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from volcanoweb.live.routing import websocket_urlpatterns  # noqa: E402

if "daphne.server" in sys.modules:  # served by daphne: answer as uvicorn does (volcanoweb.core.daphnecompat)
    from volcanoweb.core import daphnecompat

    daphnecompat.apply()

from volcanoweb.core.gctune import tune_for_serving  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
# Everything the application needs is imported: start-up's objects go to the permanent generation, and full
# collections, which paused every request and socket of the process for up to 2 s, become rare (ADR 0034).
tune_for_serving(settings.GC_GEN2_THRESHOLD)
