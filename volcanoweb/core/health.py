"""Liveness and readiness endpoints (JSON)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

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


def _kube_style(request: HttpRequest) -> bool:
    """kube-apiserver's query parameters (``?verbose``, ``?exclude=``): answer in its plain-text form."""
    return "verbose" in request.GET or "exclude" in request.GET


def _plain(endpoint: str, results: dict[str, bool], request: HttpRequest) -> HttpResponse:
    """kube-apiserver's answer: ``ok``, or with ``?verbose`` one ``[+]name ok`` line per check."""
    excluded = set(request.GET.getlist("exclude"))
    kept = {name: ok for name, ok in results.items() if name not in excluded}
    healthy = all(kept.values())
    if "verbose" not in request.GET and healthy:
        return HttpResponse("ok", content_type="text/plain; charset=utf-8")
    lines = [f"[+]{name} ok" if ok else f"[-]{name} failed: reason withheld" for name, ok in kept.items()]
    lines += [f"[+]{name} excluded: ok" for name in sorted(excluded & set(results))]
    lines.append(f"{endpoint} check {'passed' if healthy else 'failed'}")
    return HttpResponse(
        "\n".join(lines) + "\n", content_type="text/plain; charset=utf-8", status=200 if healthy else 500
    )


def livez(request: HttpRequest) -> HttpResponse:
    """``/livez`` as kube-apiserver answers it (``ok``; ``?verbose``: its checks): the process is alive."""
    return _plain("livez", {"ping": True, "log": True}, request)


def readyz(request: HttpRequest) -> HttpResponse:
    """Return 200 when the database, Redis and the scheduling loop are healthy, else 503 (JSON); with
    kube-apiserver's ``?verbose`` or ``?exclude=``, its plain-text answer (500 when a check fails)."""
    checks: dict[str, dict[str, Any]] = {}
    for name, check in {"database": _database, "redis": _redis, **_EXTRA_CHECKS}.items():
        try:
            checks[name] = check()
        except Exception as exc:  # any failure makes the process unready; report it
            checks[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    if _kube_style(request):
        return _plain("readyz", {"ping": True, **{n: bool(c.get("ok")) for n, c in checks.items()}}, request)
    ready = all(item.get("ok") for item in checks.values())
    return JsonResponse({"status": "ready" if ready else "unready", "checks": checks}, status=200 if ready else 503)
