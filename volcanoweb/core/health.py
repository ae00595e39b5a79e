"""Liveness and readiness endpoints (JSON)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

ReadinessCheck = Callable[[], dict[str, Any]]
_EXTRA_CHECKS: dict[str, ReadinessCheck] = {}


def register_readiness_check(name: str, check: ReadinessCheck) -> None:
    """Add a named check to /readyz; it returns a dict with at least "ok": bool."""
    _EXTRA_CHECKS[name] = check


def _database() -> dict[str, Any]:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "vendor": connection.vendor, "ms": round((time.perf_counter() - started) * 1000, 2)}


def _redis() -> dict[str, Any]:
    if not settings.REDIS_URL:
        return {"ok": True, "mode": "embedded"}
    import redis

    started = time.perf_counter()
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    finally:
        client.close()
    return {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 2)}


def healthz(request: HttpRequest) -> JsonResponse:
    """Return 200 while the process is alive."""
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    """Return 200 when the database, Redis and the scheduling loop are healthy, else 503."""
    checks: dict[str, dict[str, Any]] = {}
    for name, check in {"database": _database, "redis": _redis, **_EXTRA_CHECKS}.items():
        try:
            checks[name] = check()
        except Exception as exc:  # any failure makes the process unready; report it
            checks[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    ready = all(item.get("ok") for item in checks.values())
    return JsonResponse({"status": "ready" if ready else "unready", "checks": checks}, status=200 if ready else 503)
