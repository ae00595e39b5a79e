"""The /api/v1/ catch-all (Status 404); include it after every other API urlconf."""

from volcanoweb.api.urls import fallback_urlpatterns

app_name = "api-fallback"
urlpatterns = fallback_urlpatterns
