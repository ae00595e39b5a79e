"""WebSocket URL routes."""

from django.urls import path

from volcanoweb.live.consumers import LiveConsumer

websocket_urlpatterns = [path("ws/live/", LiveConsumer.as_asgi())]
