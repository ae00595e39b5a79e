"""WSGI entry point (the ASGI one in asgi.py is what runs in production)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "volcanoweb.settings")
application = get_wsgi_application()
