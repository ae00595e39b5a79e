"""The Redis cache keeps one connection per process, not one per ASGI request (ADR 0035), against the real Redis."""

from __future__ import annotations

import contextvars
import os
import uuid
from typing import Any

import pytest
import redis
from django.core.cache import caches

pytestmark = pytest.mark.django_db


def _cache_settings(settings: Any, backend: str) -> str:
    name = f"volcanoweb-test-{uuid.uuid4().hex[:12]}"
    settings.CACHES = {
        "default": {
            "BACKEND": backend,
            "LOCATION": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0",
            "KEY_PREFIX": name,
            "OPTIONS": {"client_name": name},
        }
    }
    return name


def _requests(n: int) -> list[Any]:
    """What ``n`` ASGI requests do with the cache: each is a context of its own (Django then builds a backend per
    request), and each reads the bearer-token throttle's two counters."""

    def request() -> Any:
        backend = caches["default"]
        backend.get_many(["auth-failures:address:127.0.0.1", "auth-failures:user:1"])
        return backend

    return [contextvars.Context().run(request) for _ in range(n)]


def _open_connections(name: str) -> int:
    probe = redis.Redis.from_url(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    try:
        return sum(1 for client in probe.client_list() if client.get("name") == name)
    finally:
        probe.close()


def test_requests_in_contexts_of_their_own_share_one_redis_connection(settings: Any) -> None:
    name = _cache_settings(settings, "volcanoweb.core.cache.SharedRedisCache")
    backends = _requests(20)
    assert len({id(b) for b in backends}) == 20  # Django's per-context backends, as under ASGI
    assert len({id(b._cache) for b in backends}) == 1  # one client among them
    assert _open_connections(name) == 1
    backends[0].set("k", "v")
    assert backends[-1].get("k") == "v"


def test_django_s_own_backend_opens_a_connection_per_request(settings: Any) -> None:
    """What the shared client is for: the stock backend, with the same requests, holds one connection each."""
    name = _cache_settings(settings, "django.core.cache.backends.redis.RedisCache")
    backends = _requests(5)
    assert _open_connections(name) == 5
    assert backends
